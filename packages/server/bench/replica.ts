/**
 * Readers on a hot standby beside a process on the primary (issue 39: a reader within 10% of a
 * process on the primary, same run). Not a test.
 *
 *   cd packages/server && node --conditions=@quire/source --import tsx bench/replica.ts \
 *     [--duration 5] [--connections 16] [--rounds 2]
 *
 * A private PostgreSQL primary and its streaming standby (initdb + pg_basebackup, as the replica
 * tests start them), a `quire start` process on the primary and a `readonly` one on the
 * standby, both with their defaults (the standby's poll cache on, 200 ms; the primary's off: see
 * README "Read replicas"), per-identity admission off on both. 1,000 records are written
 * through the primary and read through each process in turn, `--rounds` times: GET one record,
 * a page of 100, a 304 poll. The best round of each is printed with the reader's share of the
 * primary's throughput.
 */
import { parseArgs } from 'node:util';
import { startPrivatePostgres } from '../test/helpers/private-postgres.js';
import { type QuireProcess, startQuire, stopAll } from './quire-process.js';
import { AUTH, formatNumber, type LoadResult, load } from './support.js';
import { BATCH_SIZE, ITEMS_PATH, PAGE_SIZE, RECORD_IDS, RECORDS, recordData } from './throughput/config.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '2' },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const rounds = Number(values.rounds);

async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: AUTH, 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 200)}`);
  return { status: response.status, etag: response.headers.get('etag') ?? '' };
}

/** The bench's records, written through the primary in batches of 25. */
async function seed(writer: QuireProcess): Promise<string> {
  await call(writer.base, 'PUT', 'buckets/bench');
  await call(writer.base, 'PUT', 'buckets/bench/collections/items');
  for (let from = 0; from < RECORDS; from += BATCH_SIZE) {
    const requests = RECORD_IDS.slice(from, from + BATCH_SIZE).map((id, i) => ({
      method: 'PUT',
      path: `/buckets/bench/collections/items/records/${id}`,
      body: { data: recordData(from + i) },
    }));
    await call(writer.base, 'POST', 'batch', { requests });
  }
  return (await call(writer.base, 'GET', ITEMS_PATH.replace('/v1/', ''))).etag;
}

/** Until the reader lists the collection at the primary's ETag (replication, then its poll cache). */
async function caughtUp(reader: QuireProcess, etag: string): Promise<number> {
  const since = Date.now();
  while ((await call(reader.base, 'GET', ITEMS_PATH.replace('/v1/', ''))).etag !== etag) {
    if (Date.now() - since > 60_000) throw new Error('the reader did not catch up in 60 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Date.now() - since;
}

interface Workload {
  name: string;
  path: () => string;
  headers?: Record<string, string>;
  status: number;
}

async function measure(server: QuireProcess, workload: Workload): Promise<LoadResult> {
  const origin = server.base.replace(/\/v1\/$/, '');
  return load(
    workload.name,
    {
      url: origin,
      connections,
      duration,
      ...(workload.headers ? { headers: workload.headers } : {}),
      requests: [{ setupRequest: (request) => ({ ...request, path: workload.path() }) }],
    },
    workload.status,
  );
}

async function main(): Promise<void> {
  const primary = await startPrivatePostgres('bench/replica.ts');
  if (typeof primary === 'string') throw new Error(primary);
  const standby = await primary.standby();
  try {
    if (typeof standby === 'string') throw new Error(standby);
    // One user's 16 connections: its fair share off on both (the README's advice for readers).
    const env = { QUIRE_USERID_HMAC_SECRET: 'bench-secret', QUIRE_MAX_REQUESTS_IN_PROGRESS_PER_IDENTITY: '0' };
    const writer = await startQuire({ ...env, QUIRE_STORAGE_URL: primary.url(), QUIRE_STORAGE_AUTO_MIGRATE: 'true' });
    const etag = await seed(writer);
    const reader = await startQuire({ ...env, QUIRE_STORAGE_URL: standby.url(), QUIRE_READONLY: 'true' });
    console.log(`1,000 records through the primary; the reader listed them ${await caughtUp(reader, etag)} ms later`);
    const workloads: Workload[] = [
      { name: 'GET one', path: () => `${ITEMS_PATH}/${RECORD_IDS[Math.floor(Math.random() * RECORDS)]}`, status: 200 },
      { name: `page of ${PAGE_SIZE}`, path: () => `${ITEMS_PATH}?_limit=${PAGE_SIZE}`, status: 200 },
      { name: '304 poll', path: () => ITEMS_PATH, headers: { 'if-none-match': etag }, status: 304 },
    ];
    const rows = [['workload', 'primary req/s', 'reader req/s', 'reader / primary']];
    for (const workload of workloads) {
      const best = { primary: 0, reader: 0 };
      for (let round = 0; round < rounds; round++) {
        best.primary = Math.max(best.primary, (await measure(writer, workload)).requestsPerSecond);
        best.reader = Math.max(best.reader, (await measure(reader, workload)).requestsPerSecond);
      }
      const share = `${formatNumber((100 * best.reader) / best.primary)}%`;
      rows.push([workload.name, formatNumber(best.primary), formatNumber(best.reader), share]);
      console.log(rows.at(-1)!.join(' | '));
    }
    console.log(`\n${rows.map((row) => `| ${row.join(' | ')} |`).join('\n')}`);
  } finally {
    await stopAll();
    if (typeof standby !== 'string') await standby.destroy();
    await primary.destroy();
  }
}

await main();
