import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The demo's launcher imports the workspace server: resolve it to its TypeScript entry, as the
// client's tests do, so no server build is needed.
const serverSource = fileURLToPath(new URL('../../packages/server/src/index.ts', import.meta.url));

export default defineConfig({
  resolve: { alias: { '@quire/server': serverSource } },
  test: {
    name: 'demo',
    include: ['test/**/*.test.ts'],
    // One browser, two users, a Vite build in beforeAll: generous limits on a 2-core machine.
    testTimeout: 90_000,
    hookTimeout: 180_000,
  },
});
