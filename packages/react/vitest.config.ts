import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Tests run on the SDK's source (its `@quire/source` export condition).
  resolve: {
    conditions: ['@quire/source'],
    alias: { '@quire/server': fileURLToPath(new URL('../server/src/index.ts', import.meta.url)) },
  },
  // The node-environment tests (SSR) resolve as Vite's server side does, with conditions of their own.
  ssr: { resolve: { conditions: ['@quire/source'] } },
  test: {
    name: 'react',
    include: ['test/**/*.test.{ts,tsx}'],
    testTimeout: 30_000,
  },
});
