/**
 * Browser benchmark: Quire's client beside the original one (`kinto` 17 on npm), both in Debian's
 * Chromium (playwright-core, headless) with real IndexedDB, against one Quire server started here
 * (embedded SQLite store, records inserted through the storage API). Speed is never asserted in
 * tests; this prints the table whose runs are kept in bench/JOURNAL.md.
 *
 *   pnpm --filter @quire/client bench:browser [-- --sizes 10000,100000 --creates 1000 --polls 20 \
 *     --only cold,push,dump,tabs,offline,bundle,e2e,network --network 10,5,150]
 *
 * The page (bench/browser/page.js) is served by the API's own HTTP server under `/bench/`, so the
 * clients talk to `/v1` on the same origin, as an app served with its API does (no CORS
 * preflights in the counts). Every job runs in a fresh browser context: an empty IndexedDB.
 * The browser reaches it as `http://quire.bench:<port>` (mapped to 127.0.0.1, and treated as a
 * secure context like a deployed https app): on `localhost`/`127.0.0.1` Dexie turns its debug
 * mode on (async stack tags on every call), which no deployed app pays.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildServer, createSqliteStorage, loadSettings } from '@quire/server';
import { bundleScenario, dumpScenario, offlineScenario, tabsScenario } from './browser/app-scenarios.js';
import {
  type Bench,
  buildQuireBundle,
  call,
  type Files,
  fmt,
  kintoBundle,
  packageRoot,
  printTable,
  seconds,
  seed,
  serve,
} from './browser/harness.js';
import { networkScenario } from './browser/network-scenarios.js';
import { coldScenario, e2eScenario, pushScenario } from './browser/sync-scenarios.js';
import { launchChromium } from '../test/support/chromium.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,100000' },
    creates: { type: 'string', default: '1000' },
    polls: { type: 'string', default: '20' },
    tabs: { type: 'string', default: '3' },
    only: { type: 'string', default: 'cold,push,dump,tabs,offline,bundle,e2e' },
    // The `network` scenario's emulated network: Mbit/s down, Mbit/s up, latency in ms (a phone's).
    network: { type: 'string', default: '10,5,150' },
    clients: { type: 'string', default: 'quire,kinto' },
    // kinto 17's importBulk leaves an empty replica without a timestamp: its first sync then
    // downloads and compares every record again (673 s for 100k, once measured): off by default.
    'kinto-dump-sync': { type: 'boolean', default: false },
    // Writes a CPU profile (.cpuprofile, Chrome DevTools' format) of each job's page into this directory.
    profile: { type: 'string' },
    // Runs of the creates/push and encryption scenarios per client (alternating), the median
    // reported: the machine is shared, single runs are noisy.
    repeat: { type: 'string', default: '3' },
    // An unminified bundle (readable profiles).
    'no-minify': { type: 'boolean', default: false },
  },
});
const only = new Set(values.only.split(','));
const PAGE = `<!doctype html><meta charset="utf-8"><title>quire bench</title>
<script src="/bench/kinto.min.js"></script>
<script type="module" src="/bench/page.js"></script>`;

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'quire-browser-bench-'));
  const storage = await createSqliteStorage({ path: join(work, 'bench.sqlite') });
  const settings = loadSettings({ env: {}, overrides: { userid_hmac_secret: 'bench', log_level: 'silent' } });
  const app = await buildServer({ settings, storage, logger: false });
  const bundle = await buildQuireBundle(join(work, 'bundle'), !values['no-minify']);
  const files: Files = new Map([
    ['/bench/', { type: 'text/html', body: () => PAGE }],
    [
      '/bench/page.js',
      { type: 'text/javascript', body: () => readFileSync(join(packageRoot, 'bench/browser/page.js')) },
    ],
    ['/bench/kinto.min.js', { type: 'text/javascript', body: () => readFileSync(kintoBundle) }],
  ]);
  for (const chunk of bundle.chunks)
    files.set(`/bench/${chunk}`, { type: 'text/javascript', body: () => readFileSync(join(bundle.dir, chunk)) });
  const served = await serve(app, files);
  const url = `${served.origin}/v1`;
  const pageOrigin = `http://quire.bench:${new URL(served.origin).port}`;
  const browser = await launchChromium([
    // performance.memory in bytes, not rounded buckets: the peak heap column.
    '--enable-precise-memory-info',
    '--host-resolver-rules=MAP quire.bench 127.0.0.1',
    `--unsafely-treat-insecure-origin-as-secure=${pageOrigin}`,
  ]);
  const rows: string[][] = [['scenario', 'client', 'figure', 'requests', 'notes']];
  const bench: Bench = {
    browser,
    pageOrigin,
    url,
    bucket: `bench-${Date.now().toString(36)}`,
    storage,
    files,
    clients: values.clients.split(',') as Bench['clients'],
    sizes: values.sizes.split(',').map(Number),
    options: { profile: values.profile },
    row(cells) {
      rows.push(cells);
      console.log(cells.join(' | '));
    },
  };
  const version = (await browser.version()).split(' ')[0];
  console.log(
    `Quire client vs kinto 17 in Chromium (${version}), real IndexedDB; server: embedded SQLite, same process`,
  );
  try {
    await call(url, 'PUT', `/buckets/${bench.bucket}`, { data: {} });
    const started = performance.now();
    for (const size of bench.sizes) await seed(bench, `cold-${size}`, size);
    const seeded = bench.sizes.map((n) => fmt(n)).join(' + ');
    console.log(`seeded ${seeded} records in ${seconds(performance.now() - started)}\n`);
    const repeat = Number(values.repeat);
    const quire = bench.clients.includes('quire');
    if (only.has('cold')) await coldScenario(bench, Number(values.polls));
    if (only.has('e2e')) await e2eScenario(bench, repeat);
    if (only.has('push')) await pushScenario(bench, Number(values.creates), repeat);
    if (only.has('dump')) await dumpScenario(bench, values['kinto-dump-sync']);
    if (only.has('tabs') && quire) await tabsScenario(bench, Number(values.tabs));
    if (only.has('offline') && quire) await offlineScenario(bench);
    if (only.has('bundle')) bundleScenario(bench, bundle);
    if (only.has('network') && quire) {
      const [mbitDown, mbitUp, latencyMs] = values.network.split(',').map(Number) as [number, number, number];
      await networkScenario(bench, { mbitDown, mbitUp, latencyMs }, repeat);
    }
    printTable(rows);
  } finally {
    await browser.close();
    await served.close();
    await app.close();
    await storage.close();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
