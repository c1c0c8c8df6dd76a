/**
 * How the self-contained browser module is built (tsup.config.ts), and rebuilt by the tests and
 * the benchmark that load it in Chromium or weigh it: one definition, so they measure what ships.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Options } from 'tsup';

/** Dexie's ES2018 build, by absolute path (entries outside this package resolve it too). */
const modernDexie = join(
  dirname(createRequire(import.meta.url).resolve('dexie/package.json')),
  'dist/modern/dexie.mjs',
);

export const browserBundle: Options = {
  format: ['esm'],
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  noExternal: ['dexie'],
  external: ['undici'],
  esbuildOptions(options) {
    // Dexie's ES2018 build (the package's default entry is ES5): 3 KB less once gzipped.
    options.alias = { dexie: modernDexie };
  },
};
