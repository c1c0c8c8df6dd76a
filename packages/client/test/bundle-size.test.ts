/**
 * The size budget of what the SDK makes a browser download (minified, gzip -9), checked on every
 * run (CI). What each budget buys is in the README ("Bundle size"). Built exactly as shipped
 * (build/browser-bundle.ts); the last two lines prove tree-shaking: an app pays for what it imports.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { browserBundle } from '../build/browser-bundle.js';

const KB = 1024;
const source = fileURLToPath(new URL('../src/index.ts', import.meta.url));
const adminSource = fileURLToPath(new URL('../src/admin.ts', import.meta.url));
const attachmentsSource = fileURLToPath(new URL('../src/attachments/index.ts', import.meta.url));

const BUDGETS = [
  {
    name: 'the browser module (dist/browser/quire-client.js: everything, Dexie included)',
    code: `export * from ${JSON.stringify(source)};`,
    budget: 51 * KB,
  },
  {
    name: 'an app that imports createClient',
    code: `export { createClient } from ${JSON.stringify(source)};`,
    budget: 50 * KB,
  },
  {
    name: 'createClient with offline attachments (@quire/client/attachments)',
    code: `export { createClient } from ${JSON.stringify(source)}; export { attachments } from ${JSON.stringify(attachmentsSource)};`,
    budget: 52 * KB,
  },
  {
    name: 'end-to-end encryption on its own (encryptionTransformer)',
    code: `export { encryptionTransformer } from ${JSON.stringify(source)};`,
    budget: 2 * KB,
  },
  {
    name: 'the path builders alone (endpoints): nothing else comes along',
    code: `export { endpoints } from ${JSON.stringify(source)};`,
    budget: 1 * KB,
  },
  // The console's protocol client: the remote API without the replica (no Dexie).
  {
    name: 'the remote API alone (@quire/client/admin)',
    code: `export * from ${JSON.stringify(adminSource)};`,
    budget: 6 * KB,
  },
];

const work = mkdtempSync(join(tmpdir(), 'quire-bundle-size-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('bundle size budget (minified, gzip -9)', () => {
  it.each(BUDGETS)(
    '$name',
    async ({ name, code, budget }) => {
      const { build } = await import('tsup');
      const slug = name.replace(/[^a-z]+/gi, '-').slice(0, 40);
      const entry = join(work, `${slug}.ts`);
      writeFileSync(entry, code);
      await build({
        ...browserBundle,
        entry: { [slug]: entry },
        outDir: work,
        sourcemap: false,
        config: false,
        silent: true,
        dts: false,
      });
      const bytes = gzipSync(readFileSync(join(work, `${slug}.js`)), { level: 9 }).length;
      console.info(`bundle size: ${name}: ${(bytes / KB).toFixed(1)} KB gzip (budget ${(budget / KB).toFixed(0)} KB)`);
      expect(bytes).toBeLessThanOrEqual(budget);
    },
    120_000,
  );
});
