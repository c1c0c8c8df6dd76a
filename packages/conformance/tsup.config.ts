import { defineConfig } from 'tsup';

// The CLI and the library entry. The suites are not bundled: vitest runs them from src/suites
// (shipped in the package), so dist/ must stay one level below the package root (see run.ts).
export default defineConfig({
  entry: ['src/cli.ts', 'src/index.ts'],
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  sourcemap: true,
  clean: true,
  splitting: true,
  dts: false,
  external: ['vitest'],
});
