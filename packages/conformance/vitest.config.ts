import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Standalone run against a deployment: QUIRE_CONFORMANCE_URL=http://host/v1 vitest run.
// The server package runs the same files against itself (see packages/server/vitest.config.ts),
// providing the URL through `provide('conformanceUrl', …)`. Without a URL (e.g. the repository-wide
// `vitest run`), this project has nothing to test against and collects no file.
const url = process.env.QUIRE_CONFORMANCE_URL;

export default defineConfig({
  // Resolve `include` from this package even when run from the repository root with --config.
  root: fileURLToPath(new URL('.', import.meta.url)),
  test: {
    name: 'conformance',
    include: url ? ['src/suites/**/*.test.ts'] : [],
    passWithNoTests: true,
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
