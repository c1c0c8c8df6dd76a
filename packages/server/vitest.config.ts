import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run on source: modules that import the package by name (listener fixtures) get its
// TypeScript entry, what the `@quire/source` export condition names.
const serverSource = fileURLToPath(new URL('./src/index.ts', import.meta.url));

export default defineConfig({
  resolve: { alias: { '@quire/server': serverSource } },
  test: {
    name: 'server',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
