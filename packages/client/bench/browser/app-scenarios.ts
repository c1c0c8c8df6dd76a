/**
 * The browser benchmark's app scenarios: a shipped dump loaded (beside bare IndexedDB, the floor),
 * several tabs of one app, a start without network, and the bundle's weight.
 */
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import {
  type Bench,
  call,
  clientName,
  fmt,
  inFreshContext,
  kb,
  kintoBundle,
  openPage,
  run,
  seconds,
} from './harness.js';

/** A dump as the original client's importBulk and Quire's loadDump take it: every record, and the timestamp. */
export async function makeDump(url: string, bucket: string, collection: string): Promise<string> {
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

interface DumpLoad {
  loadMs: number;
  records: number;
  firstSyncMs?: number;
  firstSyncRequests?: number;
  pulled?: number;
  skipped?: string;
}

export async function dumpScenario(bench: Bench, kintoFirstSync: boolean): Promise<void> {
  const { url, bucket, row } = bench;
  const size = Math.max(...bench.sizes);
  const records = `/buckets/${bucket}/collections/cold-${size}/records`;
  const dumped = performance.now();
  const dump = await makeDump(url, bucket, `cold-${size}`);
  bench.files.set('/bench/dump.json', { type: 'application/json', body: () => dump });
  console.log(`dump of ${fmt(size)} records: ${kb(dump.length)} in ${seconds(performance.now() - dumped)}`);
  // One more write after the dump: the first sync after loading it must bring it (and only it).
  await call(url, 'PUT', `${records}/after-dump`, { data: { n: -1, title: 'after the dump', done: 0 } });
  const load = `load a ${fmt(size)}-record dump`;
  for (const client of bench.clients) {
    const name = clientName(client);
    const firstSync = client === 'quire' || kintoFirstSync;
    const args = { bucket, collection: `cold-${size}`, dumpUrl: '/bench/dump.json', firstSync };
    const m = await inFreshContext<DumpLoad>(bench, `${client}:dump`, args);
    if (m.skipped) {
      row([load, name, '—', '', m.skipped]);
      continue;
    }
    row([load, name, seconds(m.loadMs), '0', `${fmt(m.records)} records held`]);
    if (m.firstSyncMs === undefined)
      row(['first sync after the dump', name, '—', '', 'not run (--kinto-dump-sync): re-downloads every record']);
    else
      row([
        'first sync after the dump',
        name,
        seconds(m.firstSyncMs),
        fmt(m.firstSyncRequests!),
        `${fmt(m.pulled!)} pulled`,
      ]);
  }
  const floor = await inFreshContext<{ loadMs: number }>(bench, 'floor:dump', { dumpUrl: '/bench/dump.json' });
  const note = 'the floor: bare IndexedDB puts, same indexes, 5,000 per transaction';
  row([load, 'IndexedDB', seconds(floor.loadMs), '0', note]);
  await call(url, 'DELETE', `${records}/after-dump`);
}

/** `tabs` tabs of one app auto-syncing one collection: requests at start, and for one remote change. */
export async function tabsScenario(bench: Bench, tabs: number): Promise<void> {
  const { url, bucket, pageOrigin } = bench;
  const collection = 'tabs';
  await call(url, 'PUT', `/buckets/${bucket}/collections/${collection}`, { data: {} });
  const context = await bench.browser.newContext();
  const pages: Page[] = [];
  const counts: number[] = [];
  for (let i = 0; i < tabs; i++) {
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
  const total = fmt(perChange.reduce((a, b) => a + b, 0));
  bench.row([`${tabs} tabs: requests at start`, 'Quire', fmt(atStart), fmt(atStart), `per tab ${before.join(', ')}`]);
  const note = `per tab ${perChange.join(', ')}; all tabs had it ${seconds(seenMs)} after start`;
  bench.row([`${tabs} tabs: one remote change`, 'Quire', total, total, note]);
  for (const page of pages) await run(page, 'quire:tab-close');
  await context.close();
}

/** A page started with no network: how many requests it tries in 4.5 s. */
export async function offlineScenario(bench: Bench): Promise<void> {
  const context = await bench.browser.newContext();
  const page = await openPage(context, bench.pageOrigin);
  await context.setOffline(true);
  const args = { bucket: bench.bucket, collection: 'offline', ms: 4500 };
  const m = await run<{ attempts: number; online: boolean }>(page, 'quire:offline', args);
  const attempts = fmt(m.attempts);
  bench.row(['start offline: requests in 4.5 s', 'Quire', attempts, attempts, `navigator.onLine ${m.online}`]);
  await context.close();
}

export function bundleScenario(bench: Bench, bundle: { raw: number; gzip: number; chunks: string[] }): void {
  const kinto = readFileSync(kintoBundle);
  const title = 'browser bundle (minified, gzip -9)';
  const chunks = bundle.chunks.length - 1;
  const note = `${kb(bundle.raw)} minified, Dexie included; the entry (${chunks} chunks loaded on first use)`;
  bench.row([title, 'Quire', kb(bundle.gzip), '', note]);
  const kintoGzip = kb(gzipSync(kinto, { level: 9 }).length);
  bench.row([title, 'kinto 17', kintoGzip, '', `${kb(kinto.length)} dist/kinto.min.js`]);
}
