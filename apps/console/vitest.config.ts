import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The end-to-end test starts the workspace server in process: resolve it to its TypeScript
// entry, as the demo's tests do, so no server build is needed.
const serverSource = fileURLToPath(new URL('../../packages/server/src/index.ts', import.meta.url));

export default defineConfig({
  // @quire/client from its TypeScript source, as the console's build takes it (vite.config.ts).
  resolve: { alias: { '@quire/server': serverSource }, conditions: ['@quire/source'] },
  ssr: { resolve: { conditions: ['@quire/source'] } },
  test: {
    name: 'console',
    include: ['test/**/*.test.ts'],
    // A Vite build, 100k records and one browser on a 2-core machine: generous limits.
    testTimeout: 90_000,
    hookTimeout: 180_000,
  },
});
