import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/cli.ts', 'src/storage/testing.ts'],
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  sourcemap: true,
  clean: true,
  splitting: true,
  dts: false,
  // The shared storage suite (./testing) runs on the user's own vitest.
  external: ['vitest'],
  // SQL migrations are read from disk at run time; copy them next to the bundle.
  publicDir: false,
  onSuccess: 'mkdir -p dist/migrations && cp src/storage/sql/migrations/*.sql dist/migrations/',
});
