import { execSync } from 'node:child_process';
import { defineConfig } from 'tsup';

/** The commit being built, baked into `__version__` (empty outside a git checkout: version.ts falls back). */
function gitCommit(): string {
  try {
    return execSync('git rev-parse HEAD', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    return '';
  }
}

export default defineConfig({
  entry: ['src/index.ts', 'src/cli.ts', 'src/storage/testing.ts'],
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  sourcemap: true,
  clean: true,
  splitting: true,
  dts: false,
  define: { __QUIRE_COMMIT__: JSON.stringify(gitCommit()) },
  // The shared storage suite (./testing) runs on the user's own vitest.
  external: ['vitest'],
  // TypeBox, read by the settings at every start, is some 270 modules unbundled: one chunk loads faster.
  noExternal: ['@sinclair/typebox'],
  // SQL migrations are read from disk at run time; copy them next to the bundle.
  publicDir: false,
  onSuccess: 'mkdir -p dist/migrations && cp src/storage/sql/migrations/*.sql dist/migrations/',
});
