/**
 * Throughput of Quire next to its ceiling (not a test): five workloads against three servers, in
 * one sitting, so that the figures compare with each other.
 *
 *   cd /work/main && pnpm bench [options]          e.g. pnpm bench --duration 3 --only ceiling,embedded
 *   or: cd packages/server && pnpm bench [options]
 *   or: cd packages/server && node --conditions=@quire/source --import tsx bench/throughput.ts [options]
 * pnpm hands the options to the script as they are; `pnpm bench -- --duration 3` works too (pnpm
 * passes the `--` on, and a leading `--` is skipped here).
 *
 * `pnpm bench --scale [options]` runs bench/scale.ts instead (how costs grow with the data);
 * `pnpm bench --import [options]` runs bench/import.ts (quire import beside the bulk floor).
 *
 * Options:
 *   --only ceiling,postgresql,embedded   servers to run (default: these three, in this order; also
 *                                        `pglite`, the embedded store of earlier versions)
 *   --workloads get,page,poll,post,batch workloads to run (default: all five)
 *   --connections C                      autocannon connections (default 16)
 *   --duration S                         seconds per timed run (default 6)
 *   --url URL                            PostgreSQL (default: $QUIRE_BENCH_URL, $QUIRE_TEST_PG_URL,
 *                                        or postgresql://postgres@127.0.0.1:5432/test)
 *   --workers N                          server processes of the PostgreSQL server (default 1): N > 1
 *                                        runs N workers on one port as `quire start` does with
 *                                        `workers` (src/workers.ts); its CPU is then the sum over the
 *                                        primary and the workers. The embedded stores stay one process.
 *   --json PATH                          also write the results as JSON to PATH
 *   --cpu-prof                           run the Quire servers under `node --cpu-prof`; prints
 *                                        where the .cpuprofile files went
 *
 * Workloads (autocannon; a single request checks the answer first, then a 1 s warm-up, then the
 * timed run; every answer must have the expected status, else the bench fails):
 *   get    GET one record, a random one of the 1,000 of collection `items`        → 200
 *   page   GET the first page of 100 records of `items`                          → 200
 *   poll   `_since` poll, nothing changed: If-None-Match with the ETag of `items` → 304
 *   post   POST one record to collection `writes`                                → 201
 *   batch  POST /batch of 25 record creations, all into collection `batches`      → 200
 *          (each sub-response 201; also given as records/s)
 *
 * Servers, one at a time, each in a CHILD process (the bench forks itself with `--serve`, see
 * child-server.ts): autocannon parses every answer, and in the server's process it would share
 * its event loop, so the figures would measure both.
 *   ceiling     a bare Fastify app whose routes answer the same requests with the same shapes,
 *               from memory, with no auth and no storage: the most Fastify and Node do on this
 *               machine. Quire's figures are also given as a % of it: how much of that Quire's own
 *               work (auth, permissions, validation, storage) leaves, which compares across
 *               machines better than req/s does.
 *   postgresql  Quire on PostgreSQL (pool of 10 per process) in a fresh schema `quire_bench_<random>`,
 *               dropped at the end; skipped, with the reason, when PostgreSQL does not answer.
 *   embedded    Quire on the embedded store (SQLite) in a temporary directory, removed at the end.
 *   pglite      the same on PGlite, the embedded store it replaced (for comparison).
 *   observed    Quire on PostgreSQL as operators run it: metrics on (`metrics_enabled`) and one
 *               log line per request at `info` (written to /dev/null); compare with postgresql
 *               in the same run (`--only ceiling,postgresql,observed`) for the cost of both.
 *   pooled      Quire on PostgreSQL, straight, but as behind a transaction pooler
 *               (`storage_pooler` transaction: unnamed statements, jit set per transaction),
 *               LISTEN on its direct URL: the cost of giving up named prepared statements.
 *   pgbouncer   the same through a PgBouncer started by the bench (transaction mode).
 *   polled      through PgBouncer without a direct URL: notifications polled, read cache off.
 *               These three get a database of their own, dropped at the end.
 * Each Quire server is set up through its API first: bucket `bench`, collections `items` (1,000
 * records, created by /batch requests of 25 PUTs), `writes` and `batches`.
 *
 * The load generator, the server and PostgreSQL share this machine's cores: on a small machine,
 * compare figures of the same run rather than runs of different machines.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type autocannon from 'autocannon';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildServer } from '../src/app.js';
import { EMBEDDED_FILE } from '../src/storage/factory.js';
import { createPgliteStorage, createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { pgbouncerUnavailable, startPgbouncer } from '../test/helpers/pgbouncer.js';
import {
  childConfig,
  isServerChild,
  serveClusterInChild,
  serveInChild,
  startServerChild,
  stopServerChild,
} from './child-server.js';
import {
  AUTH,
  benchSettings,
  childCpuMs,
  cpuReply,
  formatNumber,
  load,
  postgresCpuMs,
  postgresProblem,
  recordId,
  runSql,
  type LoadResult,
} from './support.js';

const SERVERS = ['ceiling', 'postgresql', 'embedded', 'pglite', 'observed', 'pooled', 'pgbouncer', 'polled'] as const;
/** Servers on a database of their own (a schema cannot be chosen through a pooler). */
const ON_A_DATABASE = new Set<ServerName>(['pooled', 'pgbouncer', 'polled']);
/** Run unless `--only` says otherwise; `pglite` (the embedded store before SQLite) only on demand. */
const DEFAULT_SERVERS = 'ceiling,postgresql,embedded';
type ServerName = (typeof SERVERS)[number];
const WORKLOAD_KEYS = ['get', 'page', 'poll', 'post', 'batch'] as const;
type WorkloadKey = (typeof WORKLOAD_KEYS)[number];
/**
 * Issue 31's targets, as shares of the ceiling's throughput: PostgreSQL at least this, the
 * embedded store at least the PostgreSQL figure. Printed with the table, each met or not.
 */
const TARGETS: Record<WorkloadKey, number> = { get: 0.25, page: 0.25, poll: 0.4, post: 0.1, batch: 0.05 };

/** What the child needs to open its server. */
interface ChildConfig {
  server: ServerName;
  url: string;
  /** Where the pooled servers LISTEN (their database, straight to PostgreSQL); none: they poll. */
  listenUrl?: string;
  schema: string;
  dataDir: string;
  /** Server processes (above 1: a cluster, PostgreSQL only). */
  workers: number;
}

const RECORDS = 1_000;
const PAGE_SIZE = 100;
const BATCH_SIZE = 25;
const WARM_UP_SECONDS = 1;
const COLLECTIONS = ['items', 'writes', 'batches'];
const BUCKET_PATH = '/v1/buckets/bench';
const ITEMS_PATH = `${BUCKET_PATH}/collections/items/records`;
const WRITES_PATH = `${BUCKET_PATH}/collections/writes/records`;
/** Sub-request paths of /batch have no `/v1` prefix. */
const BATCHES_SUBPATH = '/buckets/bench/collections/batches/records';
const JSON_HEADERS = { 'content-type': 'application/json' };
/** Precomputed, so that the load generator does not hash an id per request. */
const RECORD_IDS = Array.from({ length: RECORDS }, (_, i) => recordId(i + 1));

function recordData(i: number) {
  return { title: `Record ${i}`, n: i % 100, done: i % 2 === 0, tags: ['t1', 't2'], body: 'lorem ipsum '.repeat(8) };
}

// ---------------------------------------------------------------------------------------------
// Child: one server.

/** The ceiling's fixed ETag of `items`. */
const CEILING_ETAG = '"1700000000000"';

/** Answers the five workloads' requests with the shapes Quire answers them with, from memory. */
function ceilingApp(): FastifyInstance {
  const app = Fastify({ logger: false });
  const page = Array.from({ length: PAGE_SIZE }, (_, i) => ({
    ...recordData(i + 1),
    id: RECORD_IDS[i]!,
    last_modified: 1_700_000_000_000 - i,
  }));
  const created = (data: object) => ({ ...data, id: randomUUID(), last_modified: Date.now() });
  app.get<{ Params: { id: string } }>(`${ITEMS_PATH}/:id`, async (request) => ({
    data: { ...page[0], id: request.params.id },
  }));
  app.get(ITEMS_PATH, async (request, reply) => {
    reply.header('etag', CEILING_ETAG);
    if (request.headers['if-none-match'] === CEILING_ETAG) return reply.code(304).send();
    return { data: page };
  });
  app.post<{ Body: { data: object } }>(WRITES_PATH, async (request, reply) =>
    reply.code(201).send({ data: created(request.body.data) }),
  );
  app.post<{ Body: { defaults: { path: string }; requests: Array<{ body: { data: object } }> } }>(
    '/v1/batch',
    async (request) => ({
      responses: request.body.requests.map((sub) => ({
        status: 201,
        path: `/v1${request.body.defaults.path}`,
        body: { data: created(sub.body.data) },
        headers: {},
      })),
    }),
  );
  return app;
}

async function serve(config: ChildConfig): Promise<void> {
  if (config.server === 'ceiling') return serveInChild(ceilingApp(), null);
  if (ON_A_DATABASE.has(config.server)) {
    // As behind a transaction pooler: unnamed statements, jit set per transaction.
    const storage = await createPostgresStorage({
      url: config.url,
      pooler: 'transaction',
      autoMigrate: true,
      poolSize: 10,
      ...(config.listenUrl ? { listenUrl: config.listenUrl } : {}),
    });
    return serveInChild(await buildServer({ settings: benchSettings(), storage, logger: false }), storage, cpuReply);
  }
  const onPostgresql = config.server === 'postgresql' || config.server === 'observed';
  const settings =
    config.server === 'observed'
      ? benchSettings({ metrics_enabled: true, log_level: 'info', log_format: 'json' })
      : benchSettings();
  const logger = config.server === 'observed' ? { stream: createWriteStream('/dev/null') } : false;
  if (onPostgresql && config.workers > 1) {
    // Every worker migrates the fresh schema: migrate() serialises them with an advisory lock.
    return serveClusterInChild(config.workers, async () => {
      const storage = await createPostgresStorage({
        url: config.url,
        schema: config.schema,
        autoMigrate: true,
        poolSize: 10,
      });
      return { app: await buildServer({ settings, storage, logger }), storage };
    });
  }
  const storage = onPostgresql
    ? await createPostgresStorage({ url: config.url, schema: config.schema, autoMigrate: true, poolSize: 10 })
    : config.server === 'pglite'
      ? await createPgliteStorage({ dataDir: config.dataDir })
      : await createSqliteStorage({ path: join(config.dataDir, EMBEDDED_FILE) });
  await serveInChild(await buildServer({ settings, storage, logger }), storage, cpuReply);
}

// ---------------------------------------------------------------------------------------------
// Parent: set up, load, report.

const WORKLOAD_NAMES: Record<WorkloadKey, string> = {
  get: 'GET one',
  page: `page of ${PAGE_SIZE}`,
  poll: '304 poll',
  post: 'POST one',
  batch: `batch of ${BATCH_SIZE}`,
};

interface Workload {
  key: WorkloadKey;
  method: 'GET' | 'POST';
  /** A function for a different path per request. */
  path: string | (() => string);
  headers?: Record<string, string>;
  body?: string;
  expected: number;
  /** Records written per request, for records/s. */
  recordsPerRequest?: number;
  /** Checks the body of the single answer that precedes the runs. */
  check?: (body: string) => void;
}

/** The workloads; `etag` is the current ETag of `items` (quoted). */
function workloads(etag: string): Workload[] {
  const batch = {
    defaults: { method: 'POST', path: BATCHES_SUBPATH },
    requests: Array.from({ length: BATCH_SIZE }, (_, i) => ({ body: { data: { title: 'x', n: i } } })),
  };
  return [
    {
      key: 'get',
      method: 'GET',
      path: () => `${ITEMS_PATH}/${RECORD_IDS[Math.floor(Math.random() * RECORDS)]}`,
      expected: 200,
    },
    {
      key: 'page',
      method: 'GET',
      path: `${ITEMS_PATH}?_limit=${PAGE_SIZE}`,
      expected: 200,
      check: (body) => {
        const count = (JSON.parse(body) as { data: unknown[] }).data.length;
        if (count !== PAGE_SIZE) throw new Error(`page of ${PAGE_SIZE}: got ${count} records`);
      },
    },
    {
      key: 'poll',
      method: 'GET',
      path: `${ITEMS_PATH}?_since=${etag.replaceAll('"', '')}`,
      headers: { 'if-none-match': etag },
      expected: 304,
    },
    {
      key: 'post',
      method: 'POST',
      path: WRITES_PATH,
      headers: JSON_HEADERS,
      body: JSON.stringify({ data: { title: 'x', n: 1 } }),
      expected: 201,
    },
    {
      key: 'batch',
      method: 'POST',
      path: '/v1/batch',
      headers: JSON_HEADERS,
      body: JSON.stringify(batch),
      expected: 200,
      recordsPerRequest: BATCH_SIZE,
      check: (body) => expectSubStatuses(`batch of ${BATCH_SIZE}`, body, BATCH_SIZE, 201),
    },
  ];
}

/** Fails unless a /batch answer holds `count` sub-responses, all with `status`. */
function expectSubStatuses(name: string, body: string, count: number, status: number): void {
  const { responses } = JSON.parse(body) as { responses: Array<{ status: number }> };
  const statuses = responses.map((response) => response.status);
  if (statuses.length !== count || statuses.some((s) => s !== status)) {
    throw new Error(`${name}: expected ${count} sub-responses ${status}, got ${JSON.stringify(statuses)}`);
  }
}

/** One request; fails unless it has the expected status; returns the body. */
async function send(
  origin: string,
  method: string,
  path: string,
  expected: number,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ body: string; headers: Headers }> {
  const response = await fetch(`${origin}${path}`, { method, headers: { authorization: AUTH, ...headers }, body });
  const text = await response.text();
  if (response.status !== expected)
    throw new Error(`${method} ${path}: expected ${expected}, got ${response.status} ${text.slice(0, 300)}`);
  return { body: text, headers: response.headers };
}

/** The bucket, the three collections, and the records of `items`, through the API. */
async function setUp(origin: string): Promise<void> {
  await send(origin, 'PUT', BUCKET_PATH, 201, JSON_HEADERS, '{}');
  for (const collection of COLLECTIONS)
    await send(origin, 'PUT', `${BUCKET_PATH}/collections/${collection}`, 201, JSON_HEADERS, '{}');
  for (let from = 0; from < RECORDS; from += BATCH_SIZE) {
    const requests = RECORD_IDS.slice(from, from + BATCH_SIZE).map((id, i) => ({
      method: 'PUT',
      path: `${ITEMS_PATH.slice('/v1'.length)}/${id}`,
      body: { data: recordData(from + i + 1) },
    }));
    const { body } = await send(origin, 'POST', '/v1/batch', 200, JSON_HEADERS, JSON.stringify({ requests }));
    expectSubStatuses('set-up', body, requests.length, 201);
  }
}

function cannonOptions(origin: string, workload: Workload, connections: number, duration: number): autocannon.Options {
  const { method, headers, body, path } = workload;
  const options = { url: origin, connections, duration, method, headers, body };
  return typeof path === 'string'
    ? { ...options, url: `${origin}${path}` }
    : { ...options, requests: [{ setupRequest: (request) => ({ ...request, path: path() }) }] };
}

interface Options {
  connections: number;
  duration: number;
  url: string;
  keys: WorkloadKey[];
  /** Server processes of the PostgreSQL server. */
  workers: number;
  /** Where the Quire children write CPU profiles, if profiling. */
  profileDir: string | null;
}

interface Measure extends LoadResult {
  recordsPerSecond?: number;
  /** CPU time per request of the server process, and of every PostgreSQL process (ms). */
  serverCpuMs?: number;
  postgresCpuMs?: number;
}

/** Starts one server, runs the workloads against it, stops it and removes its data. */
async function runServer(server: ServerName, options: Options): Promise<Map<WorkloadKey, Measure>> {
  const pooled = ON_A_DATABASE.has(server) ? await pooledTarget(server, options.url) : null;
  const config: ChildConfig = {
    server,
    url: pooled?.url ?? options.url,
    ...(pooled?.listenUrl ? { listenUrl: pooled.listenUrl } : {}),
    schema: `quire_bench_${randomBytes(4).toString('hex')}`,
    dataDir: server === 'embedded' || server === 'pglite' ? await mkdtemp(join(tmpdir(), 'quire-bench-')) : '',
    workers: server === 'postgresql' || server === 'observed' ? options.workers : 1,
  };
  const profileDir = options.profileDir && server !== 'ceiling' ? join(options.profileDir, server) : null;
  let child: ChildProcess | null = null;
  const results = new Map<WorkloadKey, Measure>();
  try {
    const started = performance.now();
    const where = {
      ceiling: 'bare Fastify',
      postgresql: `schema ${config.schema}, ${config.workers} process${config.workers > 1 ? 'es' : ''}`,
      embedded: config.dataDir,
      pglite: config.dataDir,
      observed: `schema ${config.schema}, metrics and logs on`,
      pooled: 'straight to PostgreSQL as through a transaction pooler: unnamed statements, LISTEN direct',
      pgbouncer: 'through PgBouncer (transaction mode), LISTEN direct',
      polled: 'through PgBouncer (transaction mode), notifications polled, read cache off',
    }[server];
    const serverChild = await startServerChild(
      fileURLToPath(import.meta.url),
      config,
      profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    );
    child = serverChild.child;
    const origin = `http://127.0.0.1:${serverChild.port}`;
    if (server !== 'ceiling') await setUp(origin);
    console.log(
      `${server} (${where}, pid ${child.pid}): ready in ${formatNumber((performance.now() - started) / 1000, 1)} s`,
    );

    const etag = (await send(origin, 'GET', `${ITEMS_PATH}?_limit=1`, 200)).headers.get('etag');
    if (!etag) throw new Error(`${server}: no ETag on the list of records`);
    for (const workload of workloads(etag).filter((w) => options.keys.includes(w.key))) {
      const path = typeof workload.path === 'string' ? workload.path : workload.path();
      const { body } = await send(origin, workload.method, path, workload.expected, workload.headers, workload.body);
      workload.check?.(body);
      const cannon = cannonOptions(origin, workload, options.connections, options.duration);
      const name = `${server}, ${WORKLOAD_NAMES[workload.key]}`;
      // Not measured: lets the JIT compile this workload's code paths and the pool open its connections.
      await load(`${name} (warm-up)`, { ...cannon, duration: WARM_UP_SECONDS }, workload.expected);
      const cpuBefore =
        server === 'ceiling' ? null : { server: await childCpuMs(child), postgres: await postgresCpuMs() };
      const result: Measure = await load(name, cannon, workload.expected);
      if (cpuBefore) {
        // CPU per request tells changes apart even when another process shares the machine.
        result.serverCpuMs = ((await childCpuMs(child)) - cpuBefore.server) / result.count;
        result.postgresCpuMs = ((await postgresCpuMs()) - cpuBefore.postgres) / result.count;
      }
      if (workload.recordsPerRequest) result.recordsPerSecond = result.requestsPerSecond * workload.recordsPerRequest;
      results.set(workload.key, result);
      const cpu =
        result.serverCpuMs === undefined
          ? ''
          : `, CPU per request ${formatNumber(result.serverCpuMs, 3)} ms server + ${formatNumber(result.postgresCpuMs!, 3)} ms PostgreSQL`;
      console.log(
        `  ${WORKLOAD_NAMES[workload.key].padEnd(12)} ${formatNumber(result.requestsPerSecond).padStart(7)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms${cpu}`,
      );
    }
  } finally {
    if (child) await stopServerChild(child);
    if (server === 'postgresql' || server === 'observed') await dropSchema(config);
    await pooled?.close();
    if (config.dataDir) await rm(config.dataDir, { recursive: true, force: true });
  }
  if (profileDir)
    console.log(`  CPU profile(s): ${(await readdir(profileDir)).map((file) => join(profileDir, file)).join(', ')}`);
  return results;
}

/**
 * A fresh database for a pooled server: its URL (through a PgBouncer started here, in transaction
 * mode, for `pgbouncer` and `polled`), where it LISTENs, and what undoes it all.
 */
async function pooledTarget(
  server: ServerName,
  url: string,
): Promise<{ url: string; listenUrl?: string; close: () => Promise<void> }> {
  const database = `quire_bench_${randomBytes(4).toString('hex')}`;
  const admin = (sql: string) => runSql(url, sql);
  await admin(`CREATE DATABASE ${database}`);
  const direct = new URL(url);
  direct.pathname = `/${database}`;
  const bouncer = server === 'pooled' ? null : await startPgbouncer({ target: url, poolSize: 10 });
  return {
    url: bouncer ? bouncer.url(database) : direct.toString(),
    ...(server === 'polled' ? {} : { listenUrl: direct.toString() }),
    close: async () => {
      await bouncer?.stop();
      await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    },
  };
}

/** Why PgBouncer cannot be used here, or null. */
function pgbouncerProblem(): string | null {
  return pgbouncerUnavailable('bench/throughput.ts') ?? null;
}

async function dropSchema(config: ChildConfig): Promise<void> {
  await runSql(config.url, `DROP SCHEMA IF EXISTS ${config.schema} CASCADE`);
}

/** Values of a comma-separated option, each checked against `allowed`. */
function listOption<T extends string>(name: string, value: string | undefined, allowed: readonly T[]): T[] {
  if (value === undefined) return [...allowed];
  const values = value.split(',').map((v) => v.trim());
  const unknown = values.filter((v) => !allowed.includes(v as T));
  if (unknown.length > 0) throw new Error(`--${name}: unknown ${unknown.join(', ')} (allowed: ${allowed.join(', ')})`);
  return allowed.filter((v) => values.includes(v)); // in the canonical order
}

function positiveInteger(name: string, value: string): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number <= 0) throw new Error(`--${name} must be a positive integer`);
  return number;
}

/** A ratio as a percentage, with a decimal below 10% (Quire's writes are a small fraction of the ceiling). */
function percent(part: number, whole: number): string {
  const value = (100 * part) / whole;
  return `${formatNumber(value, value < 10 ? 1 : 0)}%`;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({
    args: argv[0] === '--' ? argv.slice(1) : argv,
    options: {
      only: { type: 'string' },
      workloads: { type: 'string' },
      connections: { type: 'string', default: '16' },
      duration: { type: 'string', default: '6' },
      url: {
        type: 'string',
        default:
          process.env.QUIRE_BENCH_URL ?? process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
      },
      workers: { type: 'string', default: '1' },
      json: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
    },
  });
  const servers = listOption('only', values.only ?? DEFAULT_SERVERS, SERVERS);
  const options: Options = {
    connections: positiveInteger('connections', values.connections),
    duration: positiveInteger('duration', values.duration),
    url: values.url,
    keys: listOption('workloads', values.workloads, WORKLOAD_KEYS),
    workers: positiveInteger('workers', values.workers),
    profileDir: values['cpu-prof'] ? await mkdtemp(join(tmpdir(), 'quire-bench-prof-')) : null,
  };
  const date = new Date().toISOString();
  const header =
    `Quire throughput, ${date}; Node ${process.version}, ${cpus().length} CPUs; ` +
    `autocannon ${options.connections} connections × ${options.duration} s per workload (after ${WARM_UP_SECONDS} s of warm-up); ` +
    `postgresql in ${options.workers} process${options.workers > 1 ? 'es' : ''}`;
  console.log(`${header}\n`);

  const results = new Map<ServerName, Map<WorkloadKey, Measure>>();
  const skipped = new Map<ServerName, string>();
  for (const server of servers) {
    const problem =
      server === 'postgresql' || server === 'observed' || ON_A_DATABASE.has(server)
        ? ((await postgresProblem(options.url)) ??
          (server === 'pgbouncer' || server === 'polled' ? pgbouncerProblem() : null))
        : null;
    if (problem) {
      skipped.set(server, problem);
      console.log(`${server}: skipped, ${problem}`);
      continue;
    }
    results.set(server, await runServer(server, options));
  }

  // The table: one row per workload, one column per server; ratios to the ceiling (and, for embedded, to postgresql).
  const titles: Record<ServerName, string> = {
    ceiling: 'ceiling req/s · p50/p99 ms',
    postgresql: 'postgresql req/s (% of ceiling) · p50/p99 ms',
    embedded: 'embedded req/s (% of ceiling, % of postgresql) · p50/p99 ms',
    pglite: 'pglite req/s (% of ceiling, % of postgresql) · p50/p99 ms',
    observed: 'observed req/s (% of ceiling, % of postgresql) · p50/p99 ms',
    pooled: 'pooled req/s (% of ceiling, % of postgresql) · p50/p99 ms',
    pgbouncer: 'pgbouncer req/s (% of ceiling, % of postgresql) · p50/p99 ms',
    polled: 'polled req/s (% of ceiling, % of postgresql) · p50/p99 ms',
  };
  const json: Array<Record<string, unknown>> = [];
  const rows = options.keys.map((key) => {
    const ceiling = results.get('ceiling')?.get(key);
    const postgresql = results.get('postgresql')?.get(key);
    const cells = servers.map((server) => {
      const result = results.get(server)?.get(key);
      if (!result) return 'skipped';
      const rps = result.requestsPerSecond;
      const ratios = [
        server !== 'ceiling' && ceiling ? percent(rps, ceiling.requestsPerSecond) : null,
        server !== 'ceiling' && server !== 'postgresql' && postgresql
          ? `${percent(rps, postgresql.requestsPerSecond)} of postgresql`
          : null,
      ].filter((ratio) => ratio !== null);
      const records = result.recordsPerSecond ? ` = ${formatNumber(result.recordsPerSecond)} records/s` : '';
      json.push({
        server,
        workload: key,
        name: WORKLOAD_NAMES[key],
        requestsPerSecond: rps,
        ...(result.recordsPerSecond ? { recordsPerSecond: result.recordsPerSecond } : {}),
        p50: result.p50,
        p99: result.p99,
        ...(result.serverCpuMs === undefined
          ? {}
          : { serverCpuMsPerRequest: result.serverCpuMs, postgresCpuMsPerRequest: result.postgresCpuMs }),
        ...(server !== 'ceiling' && ceiling ? { ofCeiling: rps / ceiling.requestsPerSecond } : {}),
        ...(server !== 'ceiling' && server !== 'postgresql' && postgresql
          ? { ofPostgresql: rps / postgresql.requestsPerSecond }
          : {}),
      });
      return `${formatNumber(rps)}${records}${ratios.length > 0 ? ` (${ratios.join(', ')})` : ''} · ${result.p50}/${result.p99}`;
    });
    return [WORKLOAD_NAMES[key], ...cells, targetCell(key, ceiling, postgresql, results.get('embedded')?.get(key))];
  });
  const table = [
    ['workload', ...servers.map((server) => titles[server]), 'target: postgresql ≥ · embedded ≥ postgresql'],
    ...rows,
  ];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join(' | ')} |`;
  console.log(`\n${header}\n`);
  console.log(line(table[0]!));
  console.log(`|${widths.map((width, column) => `${'-'.repeat(width + 1)}${column === 0 ? '-' : ':'}`).join('|')}|`);
  for (const row of rows) console.log(line(row));
  for (const [server, reason] of skipped) console.log(`\n${server} skipped: ${reason}`);

  if (values.json) {
    const report = {
      date,
      node: process.version,
      cpus: cpus().length,
      connections: options.connections,
      duration: options.duration,
      warmUp: WARM_UP_SECONDS,
      postgresqlWorkers: options.workers,
      skipped: Object.fromEntries(skipped),
      results: json,
    };
    await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nJSON written to ${values.json}`);
  }
}

/** Whether the run met a workload's target (blank without a ceiling in the same run). */
function targetCell(
  key: WorkloadKey,
  ceiling: Measure | undefined,
  postgresql: Measure | undefined,
  embedded: Measure | undefined,
): string {
  const target = TARGETS[key];
  if (!ceiling) return percent(target, 1);
  const verdict = (measure: Measure | undefined, floor: number) =>
    measure ? (measure.requestsPerSecond >= floor ? 'met' : 'not met') : '–';
  const postgresFloor = target * ceiling.requestsPerSecond;
  return `${percent(target, 1)}: ${verdict(postgresql, postgresFloor)} · ${verdict(embedded, Math.max(postgresFloor, postgresql?.requestsPerSecond ?? 0))}`;
}

if (process.argv.includes('--scale')) {
  // `pnpm bench --scale`: the growth table of bench/scale.ts, which runs itself on import.
  await import('./scale.js');
} else if (process.argv.includes('--import')) {
  // `pnpm bench --import`: quire import beside the database's bulk floor (bench/import.ts).
  await import('./import.js');
} else if (isServerChild()) {
  await serve(childConfig<ChildConfig>());
} else {
  await main();
}
