/**
 * The size budget of what the SDK makes a browser download (minified, gzip -9 per file), checked
 * on every run (CI). What each budget buys is in the README ("Bundle size"). Built exactly as
 * shipped (build/browser-bundle.ts), with code splitting, as an app's bundler does: what the app
 * downloads at start is the entry and the chunks it imports statically; the chunks it imports
 * dynamically (the sync's steps, auto-sync and live changes, dump export, transformers, file transfers)
 * come on first use.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { browserBundle } from '../build/browser-bundle.js';

const KB = 1024;
const source = JSON.stringify(fileURLToPath(new URL('../src/index.ts', import.meta.url)));
const adminSource = JSON.stringify(fileURLToPath(new URL('../src/admin.ts', import.meta.url)));
const attachmentsSource = JSON.stringify(fileURLToPath(new URL('../src/attachments/index.ts', import.meta.url)));

/** `start`: downloaded at start; `lazy`: every chunk loaded on first use, together. */
const BUDGETS = [
  {
    name: 'the browser module (dist/browser/quire-client.js: everything, Dexie included)',
    code: `export * from ${source};`,
    start: 47.5 * KB,
    lazy: 12 * KB,
  },
  {
    name: 'an app that imports createClient',
    code: `export { createClient } from ${source};`,
    start: 46 * KB,
    lazy: 12 * KB,
  },
  {
    name: 'createClient with offline attachments (@quire/client/attachments)',
    code: `export { createClient } from ${source}; export { attachments } from ${attachmentsSource};`,
    start: 49.5 * KB,
    lazy: 12 * KB,
  },
  {
    name: 'end-to-end encryption on its own (encryptionTransformer)',
    code: `export { encryptionTransformer } from ${source};`,
    start: 2 * KB,
    lazy: 0,
    // Proofs of tree-shaking, built as one file: with splitting, esbuild still emits a chunk for
    // every dynamic import of the modules it walked, used or not (Rollup and Vite do not).
    splitting: false,
  },
  {
    name: 'the path builders alone (endpoints): nothing else comes along',
    code: `export { endpoints } from ${source};`,
    start: 1 * KB,
    lazy: 0,
    splitting: false,
  },
  // The console's protocol client: the remote API without the replica (no Dexie).
  {
    name: 'the remote API alone (@quire/client/admin)',
    code: `export * from ${adminSource};`,
    start: 6 * KB,
    lazy: 2 * KB,
  },
];

const work = mkdtempSync(join(tmpdir(), 'quire-bundle-size-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The chunks `file` imports statically (`import "./x.js"`, `from "./x.js"`), transitively, itself included. */
function startFiles(dir: string, file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const code = readFileSync(join(dir, file), 'utf8');
  for (const match of code.matchAll(/(?:\bfrom|\bimport)\s*["']\.\/([^"']+\.js)["']/g))
    startFiles(dir, match[1]!, seen);
  return seen;
}

describe('bundle size budget (minified, gzip -9)', () => {
  it.each(BUDGETS)(
    '$name',
    async ({ name, code, start, lazy, splitting = true }) => {
      const { build } = await import('tsup');
      const slug = name.replace(/[^a-z]+/gi, '-').slice(0, 40);
      const dir = join(work, slug);
      mkdirSync(dir);
      const entry = join(dir, 'entry.ts');
      writeFileSync(entry, code);
      await build({
        ...browserBundle,
        entry: { app: entry },
        outDir: join(dir, 'out'),
        splitting,
        sourcemap: false,
        config: false,
        silent: true,
        dts: false,
      });
      const out = join(dir, 'out');
      const gzip = (file: string) => gzipSync(readFileSync(join(out, file)), { level: 9 }).length;
      const atStart = startFiles(out, 'app.js');
      const sum = (files: string[]) => files.reduce((total, file) => total + gzip(file), 0);
      const files = readdirSync(out).filter((file) => file.endsWith('.js'));
      const startBytes = sum([...atStart]);
      const lazyBytes = sum(files.filter((file) => !atStart.has(file)));
      const kb = (bytes: number) => `${(bytes / KB).toFixed(1)} KB`;
      console.info(
        `bundle size: ${name}: ${kb(startBytes)} at start in ${atStart.size} files (budget ${kb(start)}), ` +
          `${kb(lazyBytes)} on first use (budget ${kb(lazy)})`,
      );
      expect(startBytes).toBeLessThanOrEqual(start);
      expect(lazyBytes).toBeLessThanOrEqual(lazy);
    },
    120_000,
  );
});
