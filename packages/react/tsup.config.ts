import { defineConfig } from 'tsup';

export default defineConfig({
  // ESM for bundlers; React and the SDK stay the app's (peer dependencies).
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  tsconfig: 'tsconfig.build.json',
  dts: true,
  target: 'es2022',
  sourcemap: true,
  clean: true,
  external: ['react', '@quire/client'],
});
