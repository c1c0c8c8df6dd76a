import { defineConfig } from 'tsup';
import { browserBundle } from './build/browser-bundle.js';

export default defineConfig([
  {
    // The npm entry (ESM + CJS + types): bundlers tree-shake it (`sideEffects: false`, no work at
    // module load), so an app pays for what it imports. undici stays a dependency, loaded only in Node.
    entry: { index: 'src/index.ts', attachments: 'src/attachments/index.ts', admin: 'src/admin.ts' },
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
    // A self-contained browser module (Dexie bundled), minified with its source map, for
    // <script type="module"> and the e2e test. Its size budget: test/bundle-size.test.ts.
    ...browserBundle,
    entry: { 'quire-client': 'src/index.ts' },
    outDir: 'dist/browser',
  },
  {
    // The `quire-dump` command (Node).
    entry: { 'dump-cli': 'cli/quire-dump.ts' },
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    external: ['undici', 'dexie'],
  },
]);
