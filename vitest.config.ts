import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** The conformance suite (plain HTTP) run against our own server, once per backend. */
function conformanceProject(backend: 'embedded' | 'postgresql') {
  return {
    test: {
      name: `conformance:${backend}`,
      root: here('./packages/conformance'),
      include: ['src/suites/**/*.test.ts'],
      globalSetup: [
        here(`./packages/server/test/conformance/${backend === 'embedded' ? 'embedded' : 'postgres'}.setup.ts`),
      ],
      testTimeout: 20_000,
      hookTimeout: 30_000,
    },
  };
}

/**
 * The conformance package's own tests: packed.test.ts packs the packages, installs them with npm
 * into an empty folder and runs the packed CLI, server and client (minutes, mostly npm).
 */
const conformancePackage = {
  test: {
    name: 'conformance:package',
    root: here('./packages/conformance'),
    include: ['test/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 1_200_000,
  },
};

export default defineConfig({
  test: {
    projects: [
      'packages/server',
      'packages/client',
      'packages/react',
      'apps/demo',
      'apps/console',
      conformanceProject('embedded'),
      conformanceProject('postgresql'),
      conformancePackage,
    ],
  },
});
