/**
 * Live sync figures (not a test): the change stream of `/buckets/monitor/collections/changes/records`.
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/changes.ts \
 *     [--url postgresql://postgres@127.0.0.1:5432/test] [--writes 200] [--streams 2000] [--duration 10] [--burst 1000]
 *
 * Servers are real `quire start` processes (src/cli.ts) on one fresh PostgreSQL schema, dropped
 * at the end; the bench process is the clients.
 *   1. Latency: a record PUT through process A, until a replica following process B's stream
 *      has it — the event arrived and the `_since` pull it triggers (what @quire/client does)
 *      returned the record. `--writes` writes one after the other; p50 / p99.
 *   2. `--streams` streams open on one process: the process's memory (RSS) before and after
 *      opening them, and the write throughput (autocannon, 10 connections, POST of one record to
 *      one collection, `--duration` s) without streams, with streams that watch other collections
 *      (the usual case: each user follows their own lists), and with streams that all receive
 *      every write (the worst case: one collection everybody reads).
 *   3. A burst of `--burst` writes to one collection (batches of 25, 4 at a time), followed by a
 *      replica doing what the client does: on an event, pull `_since` (a pull in progress is
 *      followed by one more, not one per event). How many pulls, and whether it converged.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { type QuireProcess, startQuire, stopAll } from './quire-process.js';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    writes: { type: 'string', default: '200' },
    streams: { type: 'string', default: '2000' },
    duration: { type: 'string', default: '10' },
    burst: { type: 'string', default: '1000' },
  },
});

const MONITOR = 'buckets/monitor/collections/changes/records';
const auth = (user: string) => `Basic ${Buffer.from(`${user}:bench`).toString('base64')}`;
const ALICE = auth('alice');

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

async function request<Body = unknown>(
  method: string,
  url: string,
  body?: unknown,
  authorization = ALICE,
): Promise<{ status: number; json: Body }> {
  const response = await fetch(url, {
    method,
    headers: { Authorization: authorization, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : null };
}

/** A stream held with node:http (one socket each, as 2,000 browsers would), calling `onEvent` with each event id. */
function openStream(
  url: string,
  authorization: string,
  onEvent: (id: number) => void = () => {},
): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { agent: false, headers: { Authorization: authorization, Accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const id = /^id: (\d+)$/m.exec(block)?.[1];
            if (id) onEvent(Number(id));
          }
        });
        res.on('error', () => {});
        resolve(req);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

async function main(): Promise<void> {
  const schema = `quire_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: args.url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const storageUrl =
    `${args.url}${args.url!.includes('?') ? '&' : '?'}` + `options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const env = {
    QUIRE_STORAGE_URL: storageUrl,
    QUIRE_STORAGE_AUTO_MIGRATE: 'true',
    QUIRE_USERID_HMAC_SECRET: 'bench-secret',
    QUIRE_CHANGES_STREAM_MAX_PER_USER: '100000',
    QUIRE_CHANGES_STREAM_MAX_PER_PROCESS: '100000',
  };
  try {
    const a = await startQuire(env);
    const b = await startQuire(env);
    await request('PUT', `${a.base}buckets/bench`, { permissions: { read: ['system.Everyone'] } });
    await request('PUT', `${a.base}buckets/bench/collections/latency`);
    await request('PUT', `${a.base}buckets/bench/collections/load`);
    await request('PUT', `${a.base}buckets/bench/collections/burst`);
    const version = (await admin.query('SHOW server_version')).rows[0].server_version;
    console.log(`node ${process.version}, PostgreSQL ${version}, two quire processes`);
    await latency(a, b);
    await streams(a);
    await burst(a, b);
  } finally {
    await stopAll();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
  }
}

/** 1. Latency A → replica through B. */
async function latency(a: QuireProcess, b: QuireProcess): Promise<void> {
  const writes = Number(args.writes);
  let newest = 0;
  let wake: (() => void) | null = null;
  const stream = await openStream(`${b.base}${MONITOR}?collection=latency`, ALICE, (id) => {
    newest = Math.max(newest, id);
    wake?.();
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const latencies: number[] = [];
  let since = newest;
  for (let i = 0; i < writes; i++) {
    const started = performance.now();
    const written = await request<{ data: { last_modified: number } }>(
      'PUT',
      `${a.base}buckets/bench/collections/latency/records/r${i}`,
      { data: { i } },
    );
    const stamp = written.json.data.last_modified;
    while (newest < stamp) await new Promise<void>((resolve) => (wake = resolve));
    wake = null;
    const pulled = await request<{ data: Array<{ id: string }> }>(
      'GET',
      `${b.base}buckets/bench/collections/latency/records?_since=${since}`,
    );
    if (!pulled.json.data.some((record) => record.id === `r${i}`)) throw new Error(`r${i} not in the pull`);
    since = stamp;
    latencies.push(performance.now() - started);
  }
  stream.destroy();
  console.log(
    `1. write through A -> in a replica following B: p50 ${percentile(latencies, 50).toFixed(1)} ms, ` +
      `p99 ${percentile(latencies, 99).toFixed(1)} ms (${writes} writes; PUT alone included)`,
  );
}

/** 2. Streams: memory, and write throughput without / with them. */
async function streams(a: QuireProcess): Promise<void> {
  const count = Number(args.streams);
  const duration = Number(args.duration);
  const throughput = async () => {
    let i = 0;
    const result = await autocannon({
      url: `${a.base}buckets/bench/collections/load/records`,
      connections: 10,
      duration,
      headers: { authorization: ALICE, 'content-type': 'application/json' },
      requests: [{ method: 'POST', setupRequest: (req) => ({ ...req, body: JSON.stringify({ data: { i: i++ } }) }) }],
    });
    return result.requests.average;
  };
  const open = async (collection: string, counter: () => void) => {
    const streams: http.ClientRequest[] = [];
    for (let i = 0; i < count; i += 100) {
      streams.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(100, count - i) }, (_, j) =>
            openStream(`${a.base}${MONITOR}?collection=${collection}`, auth(`user${(i + j) % 200}`), counter),
          ),
        )),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return streams;
  };
  const pct = (value: number, base: number) =>
    `${value >= base ? '+' : ''}${(((value - base) / base) * 100).toFixed(1)}%`;
  const without = await throughput();
  const before = rssMb(a.pid);
  // Streams that watch other collections (each user following their own lists: the usual case).
  const quiet = await open('elsewhere', () => {});
  const afterQuiet = rssMb(a.pid);
  const withQuiet = await throughput();
  for (const stream of quiet) stream.destroy();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  // Streams that all read the written collection: every write is sent to every one of them.
  let received = 0;
  const busy = await open('load', () => received++);
  const afterBusy = rssMb(a.pid);
  received = 0;
  const withBusy = await throughput();
  const delivered = received;
  const afterLoad = rssMb(a.pid);
  for (const stream of busy) stream.destroy();
  console.log(
    `2. ${count} streams on one process ` +
      `(memory: RSS of the server process; writes: POST one record, 10 connections, ${duration} s)`,
  );
  console.log(
    `   RSS ${before.toFixed(0)} MB -> ${afterQuiet.toFixed(0)} MB with ${count} streams open ` +
      `(+${(afterQuiet - before).toFixed(0)} MB); ${afterBusy.toFixed(0)} MB before and ${afterLoad.toFixed(0)} MB ` +
      'after the load with every stream receiving',
  );
  console.log(
    `   writes: ${without.toFixed(0)} req/s without streams; ` +
      `${withQuiet.toFixed(0)} req/s (${pct(withQuiet, without)}) with ${count} streams watching other collections; ` +
      `${withBusy.toFixed(0)} req/s (${pct(withBusy, without)}) with ${count} streams receiving every write ` +
      `(${delivered.toLocaleString('en-US')} events delivered)`,
  );
}

/** 3. A burst of writes, followed by a replica. */
async function burst(a: QuireProcess, b: QuireProcess): Promise<void> {
  const total = Number(args.burst);
  let pulls = 0;
  let pulling = false;
  let again = false;
  let since = 0;
  const ids = new Set<string>();
  const pull = async (): Promise<void> => {
    if (pulling) {
      again = true;
      return;
    }
    pulling = true;
    do {
      again = false;
      pulls++;
      let url: string | null = `${b.base}buckets/bench/collections/burst/records?_since=${since}&_sort=-last_modified`;
      let newest = since;
      while (url) {
        const response = await fetch(url, { headers: { Authorization: ALICE } });
        const body = (await response.json()) as { data: Array<{ id: string; last_modified: number }> };
        for (const record of body.data) {
          ids.add(record.id);
          newest = Math.max(newest, record.last_modified);
        }
        url = response.headers.get('next-page');
      }
      since = newest;
    } while (again);
    pulling = false;
  };
  let events = 0;
  const stream = await openStream(`${b.base}${MONITOR}?collection=burst`, ALICE, () => {
    events++;
    void pull();
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const pullsBefore = pulls;
  const eventsBefore = events;
  const started = performance.now();
  const batches = Array.from({ length: Math.ceil(total / 25) }, (_, k) =>
    Array.from({ length: Math.min(25, total - k * 25) }, (_, j) => ({
      method: 'PUT',
      path: `/buckets/bench/collections/burst/records/b${k * 25 + j}`,
      body: { data: { n: k * 25 + j } },
    })),
  );
  for (let k = 0; k < batches.length; k += 4) {
    await Promise.all(batches.slice(k, k + 4).map((requests) => request('POST', `${a.base}batch`, { requests })));
  }
  const written = performance.now() - started;
  const deadline = Date.now() + 30_000;
  while ((ids.size < total || pulling) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  const converged = performance.now() - started;
  stream.destroy();
  console.log(
    `3. burst of ${total} writes (${written.toFixed(0)} ms): ${events - eventsBefore} events, ` +
      `${pulls - pullsBefore} pulls; replica has ${ids.size}/${total} records ` +
      `${converged.toFixed(0)} ms after the first write`,
  );
}

await main();
