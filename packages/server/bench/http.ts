/**
 * HTTP benchmark of Quire (not a test).
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/http.ts \
 *     [--backend postgresql|embedded] [--records N] [--duration S] [--connections C] \
 *     [--samples K] [--url postgresql://postgres@127.0.0.1:5432/test]
 *   or from the root: pnpm --filter @quire/server bench:pages --backend embedded --records 20000
 * (tsx is a devDependency of this package: `--import tsx` resolves from packages/server only.)
 *
 * Defaults: postgresql, 1,000,000 records (embedded: 100,000), 5 s × 20 connections per
 * autocannon run, 50 timed requests per page measurement.
 *
 * Measures, against a collection of N records:
 *   - single-record GET requests/s (random records), with autocannon;
 *   - `_since` polling requests/s: nothing changed (If-None-Match → 304), and a small change set;
 *   - latency (p50/p95 over K sequential requests) of the FIRST and of the LAST page of the
 *     list, for two page sizes, the last page reached with the server's own keyset token.
 *
 * The server runs in a CHILD process: autocannon parses every response and would otherwise
 * compete with the server for one event loop, so the numbers would measure both at once.
 *
 * Loading N records through HTTP would take far too long. On PostgreSQL they are inserted with
 * SQL, in the exact shape the SQL storage writes them (see storage/sql/migrations/001-initial.sql
 * and sql/objects.ts): one `objects` row per record (attributes in `data` without id and
 * last_modified, timestamps unique in the scope), the author's `write` ACE on each record, and
 * the scope's `timestamps` row at the newest timestamp. On the embedded store (SQLite, in
 * process) the storage's own API loads the same, chunk by chunk. The bucket and the collection
 * are created through the HTTP API (in process, with inject) beforehand.
 *
 * PostgreSQL: a fresh schema `quire_bench_<random>`, dropped at the end. Embedded: a data
 * directory in the temp folder (the child must reopen what the parent loaded), removed at the
 * end.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type autocannon from 'autocannon';
import pg from 'pg';
import { buildServer } from '../src/app.js';
import { EMBEDDED_FILE } from '../src/storage/factory.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { childConfig, isServerChild, serveInChild, startServerChild, stopServerChild } from './child-server.js';
import { AUTH, benchSettings, formatNumber, load, recordId } from './support.js';

type Backend = 'postgresql' | 'embedded';

/** What the child needs to open the same store the parent loaded. */
interface ChildConfig {
  backend: Backend;
  url: string;
  schema: string;
  dataDir: string;
}

const BUCKET = 'bench';
const COLLECTION = 'items';
const COLLECTION_URI = `/buckets/${BUCKET}/collections/${COLLECTION}`;
const RECORDS_PATH = `/v1${COLLECTION_URI}/records`;
/** Rows inserted per INSERT statement. */
const CHUNK = 250_000;
/** The page size used to walk to the end of the list (the server's default cap). */
const WALK_PAGE = 10_000;
const PAGE_SIZES = [100, WALK_PAGE];
const CHANGE_SET = 10;

/** recordId(i) of bench/support.ts, in SQL. */
const SQL_RECORD_ID = `md5('bench-' || i)::uuid::text`;

// ---------------------------------------------------------------------------------------------
// Child: the server.

async function serve(config: ChildConfig): Promise<void> {
  const storage: Storage =
    config.backend === 'postgresql'
      ? await createPostgresStorage({ url: config.url, schema: config.schema, poolSize: 10 })
      : await createSqliteStorage({ path: join(config.dataDir, EMBEDDED_FILE) });
  await serveInChild(await buildServer({ settings: benchSettings(), storage, logger: false }), storage);
}

// ---------------------------------------------------------------------------------------------
// Parent: load, start the child, measure, clean up.

interface SqlClient {
  query(text: string, params?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
  close(): Promise<void>;
}

/**
 * The embedded store's load, through its own API (in process, a statement costs microseconds):
 * the same records, ACEs and timestamps as loadRecords, chunk by chunk.
 */
async function loadEmbedded(storage: Storage, n: number, author: string): Promise<void> {
  const scope = { resourceName: 'record', parentId: COLLECTION_URI };
  for (let from = 1; from <= n; from += CHUNK) {
    const to = Math.min(n, from + CHUNK - 1);
    const objects = Array.from({ length: to - from + 1 }, (_, k) => {
      const i = from + k;
      return {
        id: recordId(i),
        data: {
          title: `Record number ${i}`,
          n: i % 100,
          done: i % 2 === 0,
          tags: [`t${i % 7}`, `t${i % 11}`],
          body: 'lorem ipsum '.repeat(8),
        },
      };
    });
    await storage.transaction(async (session) => {
      await session.objects.insertMany(scope, objects);
      for (const { id } of objects)
        await session.permissions.set(`${COLLECTION_URI}/records/${id}`, { write: [author] });
    });
    console.log(`  inserted ${formatNumber(to)} / ${formatNumber(n)} records`);
  }
}

/** Creates the schema, then the bucket and collection through the API (in process); returns the author's user id. */
async function createContainers(storage: Storage, load?: (author: string) => Promise<void>): Promise<string> {
  const app = await buildServer({ settings: benchSettings(), storage, logger: false });
  try {
    const headers = { authorization: AUTH, 'content-type': 'application/json' };
    const hello = await app.inject({ method: 'GET', url: '/v1/', headers });
    const userId = (hello.json() as { user: { id: string } }).user.id;
    for (const url of [`/v1/buckets/${BUCKET}`, `/v1${COLLECTION_URI}`]) {
      const response = await app.inject({ method: 'PUT', url, headers, payload: {} });
      if (response.statusCode !== 201) throw new Error(`PUT ${url}: ${response.statusCode} ${response.body}`);
    }
    await load?.(userId);
    return userId;
  } finally {
    await app.close();
    await storage.close();
  }
}

/** Inserts records 1..n with timestamps base+1..base+n, their ACEs, and the scope timestamp. */
async function loadRecords(sql: SqlClient, n: number, author: string): Promise<void> {
  const [now] = (await sql.query(`SELECT (floor(extract(epoch FROM clock_timestamp()) * 1000))::bigint AS now`)).rows;
  // Past timestamps, unique in the scope; later writes get max(now, newest + 1) as usual.
  const base = Number(now!.now) - n - 60_000;
  for (let from = 1; from <= n; from += CHUNK) {
    const to = Math.min(n, from + CHUNK - 1);
    await sql.query(
      `INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted)
       SELECT $1, 'record', ${SQL_RECORD_ID}, $2::bigint + i,
              jsonb_build_object(
                'title', 'Record number ' || i,
                'n', i % 100,
                'done', i % 2 = 0,
                'tags', jsonb_build_array('t' || (i % 7), 't' || (i % 11)),
                'body', repeat('lorem ipsum ', 8)),
              FALSE
       FROM generate_series($3::int, $4::int) AS i`,
      [COLLECTION_URI, base, from, to],
    );
    await sql.query(
      `INSERT INTO access_control_entries (object_id, permission, principal)
       SELECT $1 || '/records/' || ${SQL_RECORD_ID}, 'write', $2
       FROM generate_series($3::int, $4::int) AS i`,
      [COLLECTION_URI, author, from, to],
    );
    console.log(`  inserted ${formatNumber(to)} / ${formatNumber(n)} records`);
  }
  await sql.query(
    `INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES ($1, 'record', $2)
     ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = EXCLUDED.last_modified`,
    [COLLECTION_URI, base + n],
  );
  // What autovacuum would do shortly after such a load; without it the first plans are guesses.
  await sql.query('ANALYZE objects');
  await sql.query('ANALYZE access_control_entries');
  await sql.query('ANALYZE timestamps');
}

interface Row {
  scenario: string;
  value: string;
  detail: string;
}

/** An autocannon run (every answer must have the expected status) as a row. */
async function loadRow(name: string, options: autocannon.Options, expected: number): Promise<Row> {
  const { count, requestsPerSecond, p50, p99 } = await load(name, options, expected);
  return {
    scenario: name,
    value: `${formatNumber(requestsPerSecond)} req/s`,
    detail: `${expected} ×${formatNumber(count)}; latency p50 ${p50} ms, p99 ${p99} ms`,
  };
}

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

async function get(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { headers: { authorization: AUTH, ...headers } });
}

/** Sequential requests to one URL: p50/p95 wall time, each body read entirely. */
async function pageLatency(
  name: string,
  url: string,
  samples: number,
  expectedCount: number,
  expectNext: boolean,
): Promise<Row> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < samples + 3; i++) {
    const start = performance.now();
    const response = await get(url);
    const body = await response.text();
    const elapsed = performance.now() - start;
    if (response.status !== 200) throw new Error(`${name}: ${response.status} ${body.slice(0, 200)}`);
    const count = (JSON.parse(body) as { data: unknown[] }).data.length;
    if (count !== expectedCount || response.headers.has('next-page') !== expectNext) {
      throw new Error(
        `${name}: got ${count} records (expected ${expectedCount}), Next-Page ${response.headers.has('next-page')}`,
      );
    }
    bytes = body.length;
    if (i >= 3) times.push(elapsed); // the first three warm up
  }
  times.sort((a, b) => a - b);
  return {
    scenario: name,
    value: `p50 ${formatNumber(percentile(times, 50), 1)} ms`,
    detail:
      `p95 ${formatNumber(percentile(times, 95), 1)} ms; ${samples} sequential requests, ` +
      `${formatNumber(expectedCount)} records, ${formatNumber(bytes / 1024)} KiB`,
  };
}

/** Swaps `_limit` in a Next-Page URL (the keyset token does not depend on it). */
function withLimit(url: string, limit: number, drop: string[] = []): string {
  const parsed = new URL(url);
  parsed.searchParams.set('_limit', String(limit));
  for (const name of drop) parsed.searchParams.delete(name);
  return parsed.toString();
}

/**
 * Walks the whole list (ids only, WALK_PAGE per page) following Next-Page: checks that every
 * record comes exactly once, and returns, for each page size, the URL of the last page (built
 * from the server's own tokens) and how many records it holds.
 */
async function lastPageUrls(origin: string, total: number): Promise<Map<number, { url: string; count: number }>> {
  let url: string | null = `${origin}${RECORDS_PATH}?_fields=id&_limit=${WALK_PAGE}`;
  let previousUrl = url;
  let lastPageSize = 0;
  const seen = new Set<string>();
  let pages = 0;
  while (url) {
    const response = await get(url);
    if (response.status !== 200) throw new Error(`walk: ${response.status}`);
    const { data } = (await response.json()) as { data: Array<{ id: string }> };
    for (const { id } of data) seen.add(id);
    pages++;
    lastPageSize = data.length;
    previousUrl = url;
    url = response.headers.get('next-page');
  }
  if (seen.size !== total)
    throw new Error(`walk: saw ${seen.size} distinct records in ${pages} pages, expected ${total}`);
  const result = new Map<number, { url: string; count: number }>();
  for (const size of PAGE_SIZES) {
    // The last page of `size` records: the tail of the last WALK_PAGE page.
    const count = total % size || size;
    const skip = lastPageSize - count;
    let last = previousUrl;
    if (skip > 0) {
      const response = await get(withLimit(previousUrl, skip));
      await response.arrayBuffer();
      last = response.headers.get('next-page') ?? '';
      if (!last) throw new Error('walk: no Next-Page before the last page');
    }
    result.set(size, { url: withLimit(last, size, ['_fields']), count });
  }
  console.log(
    `  walked ${formatNumber(pages)} page(s) of ${formatNumber(WALK_PAGE)}: ${formatNumber(seen.size)} ` +
      'distinct records',
  );
  return result;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      backend: { type: 'string', default: 'postgresql' },
      records: { type: 'string' },
      duration: { type: 'string', default: '5' },
      connections: { type: 'string', default: '20' },
      samples: { type: 'string', default: '50' },
      url: { type: 'string', default: process.env.QUIRE_BENCH_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    },
  });
  const backend = values.backend as Backend;
  if (backend !== 'postgresql' && backend !== 'embedded') throw new Error(`--backend must be postgresql or embedded`);
  const total = Number(values.records ?? (backend === 'postgresql' ? 1_000_000 : 100_000));
  const duration = Number(values.duration);
  const connections = Number(values.connections);
  const samples = Number(values.samples);
  if (![total, duration, connections, samples].every((v) => Number.isSafeInteger(v) && v > 0))
    throw new Error('bad numeric option');

  const config: ChildConfig = {
    backend,
    url: values.url,
    schema: `quire_bench_${randomBytes(4).toString('hex')}`,
    dataDir: backend === 'embedded' ? await mkdtemp(join(tmpdir(), 'quire-bench-')) : '',
  };
  console.log(
    `Quire HTTP benchmark: ${backend}, ${formatNumber(total)} ` +
      `records${backend === 'postgresql' ? `, schema ${config.schema}` : `, ${config.dataDir}`}`,
  );

  let child: ChildProcess | null = null;
  const rows: Row[] = [];
  try {
    // 1. Schema, bucket, collection (through the API), then the records (SQL).
    let started = performance.now();
    if (backend === 'postgresql') {
      const author = await createContainers(
        await createPostgresStorage({ url: config.url, schema: config.schema, autoMigrate: true, poolSize: 2 }),
      );
      const sql = await openSql(config);
      try {
        await loadRecords(sql, total, author);
      } finally {
        await sql.close();
      }
    } else {
      const storage = await createSqliteStorage({ path: join(config.dataDir, EMBEDDED_FILE) });
      await createContainers(storage, (author) => loadEmbedded(storage, total, author));
    }
    console.log(`  loaded in ${formatNumber((performance.now() - started) / 1000, 1)} s`);

    // 2. The server, in its own process.
    started = performance.now();
    const server = await startServerChild(fileURLToPath(import.meta.url), config);
    child = server.child;
    const origin = `http://127.0.0.1:${server.port}`;
    console.log(
      `  server listening on ${origin} (pid ${child.pid}) after ${formatNumber(performance.now() - started)} ms`,
    );

    // 3. Pages: first vs last, each page size (walk first: it also checks the data).
    const lastPages = await lastPageUrls(origin, total);
    for (const size of PAGE_SIZES) {
      const firstCount = Math.min(size, total);
      rows.push(
        await pageLatency(
          `first page, _limit=${size}`,
          `${origin}${RECORDS_PATH}?_limit=${size}`,
          samples,
          firstCount,
          total > size,
        ),
      );
      const last = lastPages.get(size)!;
      rows.push(await pageLatency(`last page, _limit=${size}`, last.url, samples, last.count, false));
    }

    // 4. Single-record GET, random records.
    const cannon = { url: origin, connections, duration };
    rows.push(
      await loadRow(
        'GET one record (random ids)',
        {
          ...cannon,
          requests: [
            {
              setupRequest: (request) => ({
                ...request,
                path: `${RECORDS_PATH}/${recordId(1 + Math.floor(Math.random() * total))}`,
              }),
            },
          ],
        },
        200,
      ),
    );

    // 5. `_since` polling: nothing changed → 304.
    const head = await fetch(`${origin}${RECORDS_PATH}?_limit=1`, { headers: { authorization: AUTH } });
    await head.arrayBuffer();
    const etag = head.headers.get('etag')!;
    const since = etag.replaceAll('"', '');
    rows.push(
      await loadRow(
        '_since poll, no change (If-None-Match → 304)',
        { ...cannon, url: `${origin}${RECORDS_PATH}?_since=${since}`, headers: { 'if-none-match': etag } },
        304,
      ),
    );

    // 6. `_since` polling with a small change set: CHANGE_SET records updated after the poll's ETag.
    for (let i = 1; i <= CHANGE_SET; i++) {
      const id = recordId(Math.ceil((i * total) / (CHANGE_SET + 1)));
      const response = await fetch(`${origin}${RECORDS_PATH}/${id}`, {
        method: 'PATCH',
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: JSON.stringify({ data: { done: 'changed', nonce: randomUUID() } }),
      });
      if (response.status !== 200) throw new Error(`PATCH ${id}: ${response.status} ${await response.text()}`);
    }
    const check = await get(`${origin}${RECORDS_PATH}?_since=${since}`);
    const changed = ((await check.json()) as { data: unknown[] }).data.length;
    if (changed !== CHANGE_SET) throw new Error(`_since returned ${changed} changes, expected ${CHANGE_SET}`);
    rows.push(
      await loadRow(
        `_since poll, ${CHANGE_SET} changes (200)`,
        { ...cannon, url: `${origin}${RECORDS_PATH}?_since=${since}`, headers: { 'if-none-match': etag } },
        200,
      ),
    );
  } finally {
    if (child) await stopServerChild(child);
    await cleanUp(config);
  }

  const machine = `${process.version}, ${(await import('node:os')).cpus().length} CPUs`;
  console.log(
    `\nResults: ${backend}, ${formatNumber(total)} records; autocannon ${connections} connections × ${duration} s; ` +
      `page latency over ${samples} sequential requests; ${machine}\n`,
  );
  const widths = [Math.max(...rows.map((r) => r.scenario.length), 8), Math.max(...rows.map((r) => r.value.length), 5)];
  const line = (a: string, b: string, c: string) => `| ${a.padEnd(widths[0]!)} | ${b.padStart(widths[1]!)} | ${c}`;
  console.log(line('Scenario', 'Value', 'Detail'));
  console.log(`|${'-'.repeat(widths[0]! + 2)}|${'-'.repeat(widths[1]! + 2)}|${'-'.repeat(40)}`);
  for (const row of rows) console.log(line(row.scenario, row.value, row.detail));
}

async function openSql(config: ChildConfig): Promise<SqlClient> {
  const client = new pg.Client({ connectionString: config.url, options: `-c search_path=${config.schema}` });
  client.on('error', () => {}); // PostgreSQL ended the session: the next query fails, no unhandled 'error' event
  await client.connect();
  return { query: (text, params) => client.query(text, params), close: () => client.end() };
}

async function cleanUp(config: ChildConfig): Promise<void> {
  if (config.backend === 'postgresql') {
    const client = new pg.Client({ connectionString: config.url });
    client.on('error', () => {}); // PostgreSQL ended the session: the next query fails, no unhandled 'error' event
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS ${config.schema} CASCADE`);
      console.log(`  dropped schema ${config.schema}`);
    } finally {
      await client.end();
    }
  } else {
    await rm(config.dataDir, { recursive: true, force: true });
    console.log(`  removed ${config.dataDir}`);
  }
}

if (isServerChild()) {
  await serve(childConfig<ChildConfig>());
} else {
  await main();
}
