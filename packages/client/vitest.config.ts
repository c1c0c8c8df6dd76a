import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run on source: the workspace server is resolved to its TypeScript entry (what its
// `@quire/source` export condition names), without changing how other packages resolve.
const serverSource = fileURLToPath(new URL('../server/src/index.ts', import.meta.url));

export default defineConfig({
  resolve: { alias: { '@quire/server': serverSource } },
  test: {
    name: 'client',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    restoreMocks: true,
  },
});
