/**
 * Browser benchmark: Quire's client beside the original one (`kinto` 17 on npm), both in Debian's
 * Chromium (playwright-core, headless) with real IndexedDB, against one Quire server started here
 * (embedded SQLite store, records inserted through the storage API). Speed is never asserted in
 * tests; this prints the rows of issue 33.
 *
 *   pnpm --filter @quire/client bench:browser [-- --sizes 10000,100000 --creates 1000 --polls 20 --only cold,push,dump,tabs,offline]
 *
 * The page (bench/browser/page.js) is served by the API's own HTTP server under `/bench/`, so the
 * clients talk to `/v1` on the same origin, as an app served with its API does (no CORS
 * preflights in the counts). Every job runs in a fresh browser context: an empty IndexedDB.
 * The browser reaches it as `http://quire.bench:<port>` (mapped to 127.0.0.1, and treated as a
 * secure context like a deployed https app): on `localhost`/`127.0.0.1` Dexie turns its debug
 * mode on (async stack tags on every call), which no deployed app pays.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { buildServer, createSqliteStorage, loadSettings, type Storage } from '@quire/server';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserBundle } from '../build/browser-bundle.js';
import { api, seedCollection } from './seed.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,100000' },
    creates: { type: 'string', default: '1000' },
    polls: { type: 'string', default: '20' },
    tabs: { type: 'string', default: '3' },
    only: { type: 'string', default: 'cold,push,dump,tabs,offline,bundle' },
    clients: { type: 'string', default: 'quire,kinto' },
    // kinto 17's importBulk leaves an empty replica without a timestamp: its first sync then
    // downloads and compares every record again (673 s for 100k, once measured): off by default.
    'kinto-dump-sync': { type: 'boolean', default: false },
    // Writes a CPU profile (.cpuprofile, Chrome DevTools' format) of each job's page into this directory.
    profile: { type: 'string' },
    // Runs of the creates/push scenario per client (alternating), the median reported: the
    // machine is shared, single runs are noisy.
    repeat: { type: 'string', default: '3' },
    // An unminified bundle (readable profiles).
    'no-minify': { type: 'boolean', default: false },
  },
});
const sizes = values.sizes.split(',').map(Number);
const creates = Number(values.creates);
const polls = Number(values.polls);
const tabCount = Number(values.tabs);
const only = new Set(values.only.split(','));
const clients = values.clients.split(',') as Array<'quire' | 'kinto'>;
const CHROMIUM = process.env.QUIRE_CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const AUTH = `Basic ${Buffer.from('bench:bench').toString('base64')}`;
const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const kintoBundle = join(packageRoot, 'node_modules/kinto/dist/kinto.min.js');

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const seconds = (ms: number) => `${fmt(ms / 1000, 2)} s`;
const millis = (ms: number) => `${fmt(ms, 1)} ms`;
const kb = (bytes: number) => `${fmt(bytes / 1024, 1)} KB`;

/** The browser bundle as shipped (tsup, minified, Dexie inside: build/browser-bundle.ts). */
async function buildQuireBundle(outDir: string): Promise<{ file: string; raw: number; gzip: number }> {
  const { build } = await import('tsup');
  await build({
    ...browserBundle,
    entry: { 'quire-client': join(packageRoot, 'src/index.ts') },
    outDir,
    minify: !values['no-minify'],
    sourcemap: false,
    config: false,
    silent: true,
    dts: false,
  });
  const file = join(outDir, 'quire-client.js');
  const code = readFileSync(file);
  return { file, raw: code.length, gzip: gzipSync(code, { level: 9 }).length };
}

const call = (url: string, method: string, path: string, body?: unknown) => api(url, AUTH, method, path, body);

async function seed(storage: Storage, url: string, bucket: string, collection: string, count: number): Promise<void> {
  await seedCollection(storage, url, AUTH, { bucket, collection, count }, (i) => ({
    n: i,
    title: `record ${i}`,
    done: i % 3 === 0 ? 1 : 0,
    tags: ['bench', `t${i % 10}`],
  }));
}

/** A dump as the original client's importBulk and Quire's loadDump take it: every record, and the collection timestamp. */
async function makeDump(url: string, bucket: string, collection: string): Promise<string> {
  const data: unknown[] = [];
  let next: string | null = `/buckets/${bucket}/collections/${collection}/records?_sort=-last_modified&_limit=10000`;
  let timestamp: number | null = null;
  while (next) {
    const response = await call(url, 'GET', next);
    timestamp ??= Number(JSON.parse(response.headers.get('etag') ?? 'null'));
    data.push(...((await response.json()) as { data: unknown[] }).data);
    const link = response.headers.get('next-page');
    next = link ? link.slice(url.length) : null;
  }
  return JSON.stringify({ bucket, collection, timestamp, data });
}

interface Served {
  origin: string;
  close(): Promise<void>;
}

/** The API (the Fastify app's router) and, under /bench/, the page, the bundles and the dumps. */
async function serve(
  app: Awaited<ReturnType<typeof buildServer>>,
  files: Map<string, { type: string; body: () => Buffer | string }>,
): Promise<Served> {
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0]!;
    if (!path.startsWith('/bench/')) return app.routing(request, response);
    const file = files.get(path);
    if (!file) return void response.writeHead(404).end();
    response.writeHead(200, { 'Content-Type': file.type, 'Cache-Control': 'no-store' }).end(file.body());
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function openPage(context: BrowserContext, origin: string): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (error) => console.error(`page error: ${error.message}`));
  page.on('console', (message) => message.text().startsWith('[timing]') && console.log(message.text()));
  await page.goto(`${origin}/bench/`);
  await page.waitForFunction(() => (globalThis as { benchReady?: boolean }).benchReady === true);
  return page;
}

function run<T>(page: Page, job: string, args: Record<string, unknown> = {}): Promise<T> {
  return page.evaluate(
    ([name, input]) =>
      (globalThis as unknown as { bench: (job: string, args: unknown) => Promise<unknown> }).bench(
        name as string,
        input,
      ),
    [job, args] as const,
  ) as Promise<T>;
}

async function inFreshContext<T>(
  browser: Browser,
  origin: string,
  job: string,
  args: Record<string, unknown>,
): Promise<T> {
  const context = await browser.newContext();
  try {
    const page = await openPage(context, origin);
    if (!values.profile) return await run<T>(page, job, args);
    const cdp = await context.newCDPSession(page);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
    const result = await run<T>(page, job, args);
    const { profile } = await cdp.send('Profiler.stop');
    mkdirSync(values.profile, { recursive: true });
    const file = join(values.profile, `${job.replace(':', '-')}-${Date.now()}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    console.log(`profile: ${file}`);
    return result;
  } finally {
    await context.close();
  }
}

const PAGE = `<!doctype html><meta charset="utf-8"><title>quire bench</title>
<script src="/bench/kinto.min.js"></script>
<script type="module" src="/bench/page.js"></script>`;

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'quire-browser-bench-'));
  const storage = await createSqliteStorage({ path: join(work, 'bench.sqlite') });
  const settings = loadSettings({ env: {}, overrides: { userid_hmac_secret: 'bench', log_level: 'silent' } });
  const app = await buildServer({ settings, storage, logger: false });
  const bundle = await buildQuireBundle(work);
  const files = new Map<string, { type: string; body: () => Buffer | string }>([
    ['/bench/', { type: 'text/html', body: () => PAGE }],
    [
      '/bench/page.js',
      { type: 'text/javascript', body: () => readFileSync(join(packageRoot, 'bench/browser/page.js')) },
    ],
    ['/bench/quire-client.js', { type: 'text/javascript', body: () => readFileSync(bundle.file) }],
    ['/bench/kinto.min.js', { type: 'text/javascript', body: () => readFileSync(kintoBundle) }],
  ]);
  const served = await serve(app, files);
  const url = `${served.origin}/v1`;
  const pageOrigin = `http://quire.bench:${new URL(served.origin).port}`;
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      ...FLAGS,
      '--host-resolver-rules=MAP quire.bench 127.0.0.1',
      `--unsafely-treat-insecure-origin-as-secure=${pageOrigin}`,
    ],
  });
  const bucket = `bench-${Date.now().toString(36)}`;
  const rows: string[][] = [['scenario', 'client', 'figure', 'requests', 'notes']];
  const row = (cells: string[]) => {
    rows.push(cells);
    console.log(cells.join(' | '));
  };
  const name = (client: string) => (client === 'quire' ? 'Quire' : 'kinto 17');
  console.log(
    `Quire client vs kinto 17 in Chromium (${(await browser.version()).split(' ')[0]}), real IndexedDB; server: embedded SQLite, same process`,
  );
  try {
    await call(url, 'PUT', `/buckets/${bucket}`, { data: {} });
    const started = performance.now();
    for (const size of sizes) await seed(storage, url, bucket, `cold-${size}`, size);
    console.log(`seeded ${sizes.map((n) => fmt(n)).join(' + ')} records in ${seconds(performance.now() - started)}\n`);

    if (only.has('cold')) {
      for (const [turn, size] of sizes.entries()) {
        for (const client of turn % 2 === 0 ? clients : [...clients].reverse()) {
          const m = await inFreshContext<{
            coldMs: number;
            coldRequests: number;
            records: number;
            queryMs: number;
            pollP50: number;
            pollP95: number;
            pollRequests: number;
          }>(browser, pageOrigin, `${client}:cold`, {
            bucket,
            collection: `cold-${size}`,
            polls,
            lookup: Math.floor(size / 2),
          });
          row([
            `cold sync ${fmt(size)}`,
            name(client),
            seconds(m.coldMs),
            fmt(m.coldRequests),
            `${fmt((m.records / m.coldMs) * 1000)} records/s`,
          ]);
          row([`indexed query in ${fmt(size)}`, name(client), millis(m.queryMs), '0', 'one record by `n`']);
          row([
            `no-change poll at ${fmt(size)}`,
            name(client),
            `${millis(m.pollP50)} p50`,
            `${fmt(m.pollRequests, 1)}/poll`,
            `p95 ${millis(m.pollP95)}`,
          ]);
        }
      }
    }

    if (only.has('push')) {
      type Push = { createMs: number; pushMs: number; pushRequests: number; togetherMs: number };
      const runs = new Map<string, Push[]>(clients.map((client) => [client, []]));
      for (let round = 0; round < Number(values.repeat); round++) {
        for (const client of round % 2 === 0 ? clients : [...clients].reverse()) {
          const collection = `push-${client}-${round}`;
          await call(url, 'PUT', `/buckets/${bucket}/collections/${collection}`, { data: {} });
          runs
            .get(client)!
            .push(
              await inFreshContext<Push>(browser, pageOrigin, `${client}:push`, { bucket, collection, count: creates }),
            );
        }
      }
      const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
      for (const client of clients) {
        const list = runs.get(client)!;
        const m = {
          createMs: median(list.map((r) => r.createMs)),
          pushMs: median(list.map((r) => r.pushMs)),
          togetherMs: median(list.map((r) => r.togetherMs)),
          pushRequests: list[0]!.pushRequests,
        };
        const all = (key: keyof Push) => `runs ${list.map((r) => fmt(r[key] / 1000, 2)).join(', ')} s`;
        row([
          `${fmt(creates)} local creates, one by one`,
          name(client),
          seconds(m.createMs),
          '0',
          `${fmt(m.createMs / creates, 2)} ms each; ${all('createMs')}`,
        ]);
        row([
          `${fmt(creates)} local creates, same tick`,
          name(client),
          seconds(m.togetherMs),
          '0',
          `Promise.all; ${all('togetherMs')}`,
        ]);
        row([
          `push of ${fmt(creates)} creates`,
          name(client),
          seconds(m.pushMs),
          fmt(m.pushRequests),
          `the sync() after them; ${all('pushMs')}`,
        ]);
      }
    }

    if (only.has('dump')) {
      const size = Math.max(...sizes);
      const dumped = performance.now();
      const dump = await makeDump(url, bucket, `cold-${size}`);
      files.set('/bench/dump.json', { type: 'application/json', body: () => dump });
      console.log(`dump of ${fmt(size)} records: ${kb(dump.length)} in ${seconds(performance.now() - dumped)}`);
      // One more write after the dump: the first sync after loading it must bring it (and only it).
      await call(url, 'PUT', `/buckets/${bucket}/collections/cold-${size}/records/after-dump`, {
        data: { n: -1, title: 'after the dump', done: 0 },
      });
      for (const client of clients) {
        const m = await inFreshContext<{
          loadMs: number;
          records: number;
          firstSyncMs?: number;
          firstSyncRequests?: number;
          pulled?: number;
          skipped?: string;
        }>(browser, pageOrigin, `${client}:dump`, {
          bucket,
          collection: `cold-${size}`,
          dumpUrl: '/bench/dump.json',
          firstSync: client === 'quire' || values['kinto-dump-sync'],
        });
        if (m.skipped) {
          row([`load a ${fmt(size)}-record dump`, name(client), '—', '', m.skipped]);
          continue;
        }
        row([
          `load a ${fmt(size)}-record dump`,
          name(client),
          seconds(m.loadMs),
          '0',
          `${fmt(m.records)} records held`,
        ]);
        if (m.firstSyncMs === undefined)
          row([
            'first sync after the dump',
            name(client),
            '—',
            '',
            'not run (--kinto-dump-sync): re-downloads every record',
          ]);
        else
          row([
            'first sync after the dump',
            name(client),
            seconds(m.firstSyncMs),
            fmt(m.firstSyncRequests!),
            `${fmt(m.pulled!)} pulled`,
          ]);
      }
      const floor = await inFreshContext<{ loadMs: number; records: number }>(browser, pageOrigin, 'floor:dump', {
        dumpUrl: '/bench/dump.json',
      });
      row([
        `load a ${fmt(size)}-record dump`,
        'IndexedDB',
        seconds(floor.loadMs),
        '0',
        'the floor: bare IndexedDB puts, same indexes, 5,000 per transaction',
      ]);
      await call(url, 'DELETE', `/buckets/${bucket}/collections/cold-${size}/records/after-dump`);
    }

    if (only.has('tabs') && clients.includes('quire')) {
      const collection = 'tabs';
      await call(url, 'PUT', `/buckets/${bucket}/collections/${collection}`, { data: {} });
      const context = await browser.newContext();
      const pages: Page[] = [];
      const counts: number[] = [];
      for (let i = 0; i < tabCount; i++) {
        const page = await openPage(context, pageOrigin);
        const index = pages.length;
        counts.push(0);
        page.on('request', (request) => {
          if (request.url().startsWith(`${pageOrigin}/v1`)) counts[index]!++;
        });
        pages.push(page);
      }
      const startedAt = performance.now();
      await Promise.all(pages.map((page) => run(page, 'quire:tab', { bucket, collection })));
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const atStart = counts.reduce((a, b) => a + b, 0);
      const before = [...counts];
      await call(url, 'PUT', `/buckets/${bucket}/collections/${collection}/records/remote-1`, { data: { n: 1 } });
      const deadline = Date.now() + 10_000;
      for (const page of pages) {
        while (!(await run<{ found: boolean }>(page, 'quire:tab-count', { id: 'remote-1' })).found) {
          if (Date.now() > deadline) throw new Error('a tab never got the remote change');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      const seenMs = performance.now() - startedAt;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const perChange = counts.map((count, i) => count - before[i]!);
      row([`${tabCount} tabs: requests at start`, 'Quire', fmt(atStart), fmt(atStart), `per tab ${before.join(', ')}`]);
      row([
        `${tabCount} tabs: one remote change`,
        'Quire',
        fmt(perChange.reduce((a, b) => a + b, 0)),
        fmt(perChange.reduce((a, b) => a + b, 0)),
        `per tab ${perChange.join(', ')}; all tabs had it ${seconds(seenMs)} after start`,
      ]);
      for (const page of pages) await run(page, 'quire:tab-close');
      await context.close();
    }

    if (only.has('offline') && clients.includes('quire')) {
      const context = await browser.newContext();
      const page = await openPage(context, pageOrigin);
      await context.setOffline(true);
      const m = await run<{ attempts: number; online: boolean }>(page, 'quire:offline', {
        bucket,
        collection: 'offline',
        ms: 4500,
      });
      row([
        'start offline: requests in 4.5 s',
        'Quire',
        fmt(m.attempts),
        fmt(m.attempts),
        `navigator.onLine ${m.online}`,
      ]);
      await context.close();
    }

    if (only.has('bundle')) {
      const kinto = readFileSync(kintoBundle);
      row([
        'browser bundle (minified, gzip -9)',
        'Quire',
        kb(bundle.gzip),
        '',
        `${kb(bundle.raw)} minified, Dexie included`,
      ]);
      row([
        'browser bundle (minified, gzip -9)',
        'kinto 17',
        kb(gzipSync(kinto, { level: 9 }).length),
        '',
        `${kb(kinto.length)} dist/kinto.min.js`,
      ]);
    }

    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((cells) => cells[i]!.length)));
    console.log('');
    for (const [index, cells] of rows.entries()) {
      console.log(
        cells
          .map((cell, i) => (i < 2 || i === 4 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
          .join('  ')
          .trimEnd(),
      );
      if (index === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
    }
  } finally {
    await browser.close();
    await served.close();
    await app.close();
    await storage.close();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
