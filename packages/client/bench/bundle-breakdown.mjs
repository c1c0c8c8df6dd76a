/**
 * Where the `createClient` app's bytes at start go (README, "Bundle size"): each line built alone
 * as the budget test builds (minified, splitting, Dexie's ES2018 build), gzip -9 per file of the
 * entry and the chunks it imports statically. `node bench/bundle-breakdown.mjs` in packages/client.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const req = createRequire(join(here, 'package.json'));
// esbuild as tsup (a dev dependency) brings it.
const { build } = createRequire(req.resolve('tsup'))('esbuild');
const dexie = join(dirname(req.resolve('dexie/package.json')), 'dist/modern/dexie.mjs');
const out = join(here, 'node_modules/.cache/bundle-breakdown');
async function gz(code) {
  const r = await build({
    stdin: { contents: code, resolveDir: join(here, 'src'), loader: 'ts' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    external: ['undici'],
    alias: { dexie },
    splitting: true,
    outdir: out,
  });
  const seen = new Set();
  const files = new Map(r.outputFiles.map((f) => [f.path.split('/').pop(), f]));
  const walk = (name) => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const m of Buffer.from(files.get(name).contents)
      .toString()
      .matchAll(/(?:\bfrom|\bimport)\s*["']\.\/([^"']+\.js)["']/g))
      walk(m[1]);
  };
  walk('stdin.js');
  return [...seen].reduce((t, n) => t + gzipSync(files.get(n).contents, { level: 9 }).length, 0) / 1024;
}
const replica =
  "export { openCollectionDb } from './store/db.js'; export { LocalCollection } from './store/local-collection.js';";
const transport = `export { Remote } from './remote/remote.js'; export { HttpTransport } from './transport/http.js';`;
const rows = [
  ['Dexie alone', `export { Dexie } from 'dexie';`],
  ['+ the replica (store/: db, local-collection, write-queue, meta, outbox, record-fields, errors)', replica],
  ['+ transport + remote API', `${replica} ${transport}`],
  ['createClient (all at start)', `export { createClient } from './index.js';`],
];
for (const [name, code] of rows) console.log((await gz(code)).toFixed(1).padStart(6), 'KB', name);
