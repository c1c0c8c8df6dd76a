import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The npm entry (ESM + CJS + types). undici stays a dependency, loaded only in Node.
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    // Declarations from a non-composite config (the package tsconfig is a composite project for `tsc -b`).
    tsconfig: 'tsconfig.build.json',
    dts: true,
    target: 'es2022',
    sourcemap: true,
    clean: true,
    external: ['undici'],
  },
  {
    // A self-contained browser module (Dexie bundled) for <script type="module"> and the e2e test.
    entry: { 'quire-client': 'src/index.ts' },
    outDir: 'dist/browser',
    format: ['esm'],
    platform: 'browser',
    target: 'es2022',
    sourcemap: true,
    noExternal: ['dexie'],
    external: ['undici'],
  },
]);
