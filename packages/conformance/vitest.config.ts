import { defineConfig } from 'vitest/config';

// Standalone run against a deployment: QUIRE_CONFORMANCE_URL=http://host/v1 vitest run.
// The server package runs the same files against itself (see packages/server/vitest.config.ts).
export default defineConfig({
  test: {
    name: 'conformance',
    include: ['src/suites/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
