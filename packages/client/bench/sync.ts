/**
 * Sync benchmark: Quire's client beside kinto.js (the published `kinto` package), doing the same
 * work against the same Quire server in one run. Speed is never asserted in tests; this prints.
 *
 *   pnpm --filter @quire/client bench [-- --records 10000,100000 --push 10000 --polls 20]
 *   QUIRE_BENCH_PG_URL=postgresql://postgres@127.0.0.1:5432/test pnpm --filter @quire/client bench
 *
 * The server runs in this process on the embedded store (or PostgreSQL when QUIRE_BENCH_PG_URL is
 * set); records are inserted through the storage API. Each measurement runs in a fresh child
 * process with a fresh fake-indexeddb, so time and memory belong to one client and one job.
 * Memory: peak RSS and peak JS heap during the job (sampled every 10 ms), and the heap still
 * retained after it (after GC) — which includes the replica itself, since fake-indexeddb keeps
 * the database in the JS heap. "peak − retained" is what the sync needed on top of the data.
 *
 * Scenarios: cold sync of N records; a no-change poll (median/p95 over K polls after a cold
 * sync of the first size); a push of M records created locally (local write time shown apart).
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildServer, createPgliteStorage, createPostgresStorage, loadSettings, type Storage } from '@quire/server';
import { api, seedCollection } from './seed.js';
import type { Measurement, Task } from './worker.js';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '10000,100000' },
    push: { type: 'string', default: '10000' },
    polls: { type: 'string', default: '20' },
    only: { type: 'string', default: 'quire,kinto' },
  },
});
const sizes = values.records.split(',').map(Number);
const pushCount = Number(values.push);
const polls = Number(values.polls);
const impls = values.only.split(',') as Task['impl'][];
const USER = 'bench';
const AUTH = `Basic ${Buffer.from(`${USER}:bench`).toString('base64')}`;

const call = (url: string, method: string, path: string, body?: unknown) => api(url, AUTH, method, path, body);

async function seed(storage: Storage, url: string, bucket: string, collection: string, count: number): Promise<void> {
  await seedCollection(storage, url, AUTH, { bucket, collection, count }, (i) => ({
    n: i,
    title: `record ${i}`,
    done: i % 3 === 0,
    tags: ['bench', `t${i % 10}`],
  }));
  const head = await call(url, 'HEAD', `/buckets/${bucket}/collections/${collection}/records`);
  if (head.headers.get('total-objects') !== String(count))
    throw new Error(`seeding ${collection}: got ${head.headers.get('total-objects')}`);
}

/** Warms the server (JIT, PGlite caches) on the paths measured, so the first client measured is not penalised. */
async function warmUp(url: string, bucket: string): Promise<void> {
  await call(url, 'PUT', `/buckets/${bucket}/collections/warmup`, { data: {} });
  for (let batch = 0; batch < 20; batch++) {
    const requests = Array.from({ length: 25 }, (_, i) => ({
      method: 'PUT',
      path: `/buckets/${bucket}/collections/warmup/records/w${batch}-${i}`,
      headers: { 'If-None-Match': '*' },
      body: { data: { n: i } },
    }));
    await call(url, 'POST', '/batch', { requests });
  }
  for (const size of sizes) {
    let next: string | null =
      `${url}/buckets/${bucket}/collections/cold-${size}/records?_sort=-last_modified&_limit=2000`;
    for (let page = 0; next && page < 5; page++)
      next = (await call(url, 'GET', next.slice(url.length))).headers.get('next-page');
  }
}

function runTask(task: Task): Promise<Measurement> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('./worker.ts', import.meta.url)), [], {
      execArgv: ['--conditions=@quire/source', '--import', 'tsx', '--expose-gc', '--max-old-space-size=4096'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', (message: { ok: boolean; measurement?: Measurement; error?: string }) => {
      if (message.ok) resolve(message.measurement!);
      else reject(new Error(`${task.impl} ${task.kind}: ${message.error}`));
    });
    child.once(
      'exit',
      (code) => code !== 0 && reject(new Error(`${task.impl} ${task.kind} worker exited with ${code}`)),
    );
    child.send(task);
  });
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;

async function main(): Promise<void> {
  const pgUrl = process.env.QUIRE_BENCH_PG_URL;
  const storage = pgUrl
    ? await createPostgresStorage({
        url: pgUrl,
        schema: `quire_client_bench_${randomBytes(4).toString('hex')}`,
        autoMigrate: true,
      })
    : await createPgliteStorage();
  const settings = loadSettings({ env: {}, overrides: { userid_hmac_secret: 'bench', log_level: 'silent' } });
  const app = await buildServer({ settings, storage, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/v1`;
  const bucket = `bench-${randomBytes(3).toString('hex')}`;
  console.log(
    `Quire client vs kinto.js — server: ${pgUrl ? 'PostgreSQL' : 'embedded (PGlite)'}, same process; ` +
      'clients: fresh child process each, fake-indexeddb',
  );
  console.log(`node ${process.version}; cold sizes ${sizes.join(', ')}; push ${pushCount}; ${polls} polls`);
  try {
    await call(url, 'PUT', `/buckets/${bucket}`, { data: {} });
    const seeded = performance.now();
    for (const size of sizes) await seed(storage, url, bucket, `cold-${size}`, size);
    console.log(
      `seeded ${sizes.map((n) => fmt(n)).join(' + ')} records in ${fmt((performance.now() - seeded) / 1000, 1)} s\n`,
    );

    await warmUp(url, bucket);
    const rows: string[][] = [
      ['scenario', 'client', 'time', 'records/s', 'requests', 'peak RSS', 'peak heap', 'retained heap', 'notes'],
    ];
    await coldRows(rows, url, bucket);
    await pollRows(rows, url, bucket);
    await pushRows(rows, url, bucket);
    printTable(rows);
  } finally {
    await app.close();
    await storage.close();
  }
}

/** Alternates which client goes first, so neither always meets a colder server. */
const ordered = (turn: number) => (turn % 2 === 0 ? impls : [...impls].reverse());
const clientName = (impl: Task['impl']) => (impl === 'quire' ? 'Quire' : 'kinto.js');

/** A run's time, records per second and requests: the cells of a cold sync's or a push's row. */
const throughputCells = (m: Measurement) => [
  `${fmt(m.ms / 1000, 2)} s`,
  fmt((m.records / m.ms) * 1000),
  fmt(m.requests),
];

/** A run's peak RSS, peak heap and heap kept after it: the memory cells of every row. */
const memoryCells = (m: Measurement) => [
  `${fmt(m.peakRssMb)} MB`,
  `${fmt(m.peakHeapMb)} MB`,
  `${fmt(m.retainedHeapMb)} MB`,
];

/** Adds a row to the table, and prints it at once. */
function addRow(rows: string[][], row: string[]): void {
  rows.push(row);
  console.log(row.join(' | '));
}

/** Cold sync of each size, by each client. */
async function coldRows(rows: string[][], url: string, bucket: string): Promise<void> {
  for (const [turn, size] of sizes.entries()) {
    for (const impl of ordered(turn)) {
      const m = await runTask({ impl, kind: 'cold', url, bucket, collection: `cold-${size}`, count: 0, user: USER });
      addRow(rows, [
        `cold sync ${fmt(size)}`,
        clientName(impl),
        ...throughputCells(m),
        ...memoryCells(m),
        `${fmt(m.records)} records`,
      ]);
    }
  }
}

/** No-change polls after a cold sync of the first size. */
async function pollRows(rows: string[][], url: string, bucket: string): Promise<void> {
  for (const impl of ordered(sizes.length)) {
    const m = await runTask({
      impl,
      kind: 'poll',
      url,
      bucket,
      collection: `cold-${sizes[0]}`,
      count: polls,
      user: USER,
    });
    addRow(rows, [
      `no-change poll (${fmt(sizes[0]!)})`,
      clientName(impl),
      `${fmt(percentile(m.extra, 50), 1)} ms p50`,
      '',
      `${fmt(m.requests, 1)}/poll`,
      ...memoryCells(m),
      `p95 ${fmt(percentile(m.extra, 95), 1)} ms`,
    ]);
  }
}

/** A push of local changes, into a collection of each client's own. */
async function pushRows(rows: string[][], url: string, bucket: string): Promise<void> {
  for (const impl of ordered(sizes.length + 1)) {
    const collection = `push-${impl}`;
    await call(url, 'PUT', `/buckets/${bucket}/collections/${collection}`, { data: {} });
    const m = await runTask({ impl, kind: 'push', url, bucket, collection, count: pushCount, user: USER });
    addRow(rows, [
      `push ${fmt(pushCount)} local changes`,
      clientName(impl),
      ...throughputCells(m),
      ...memoryCells(m),
      `local writes ${fmt(m.extra[0]! / 1000, 2)} s`,
    ]);
  }
}

function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  console.log('');
  for (const [index, row] of rows.entries()) {
    console.log(row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '));
    if (index === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}

await main();
