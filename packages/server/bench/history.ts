/**
 * Write cost of the history plugin (not a test): the same write workloads against a server
 * with `history_enabled` off, then on.
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/history.ts \
 *     [--backend postgresql|embedded] [--duration S] [--rounds R] [--connections C] [--rate N] [--workload TEXT] \
 *     [--history-settings '{"history_drain_delay_ms": 1000}'] [--history-preload N] \
 *     [--url postgresql://postgres@127.0.0.1:5432/test]
 *
 * Workloads (autocannon, C connections, as fast as the server goes; with `--rate N`, an
 * open-loop load of N evenly spaced requests per second instead, for latencies under a load
 * below saturation. R alternating rounds of S seconds per mode after a warm-up, medians
 * reported; one fresh store per mode, both servers up side by side):
 *   - POST one record, always to the same collection;
 *   - POST one record to one of 20 collections of the same bucket (history entries of a
 *     bucket share one timestamp sequence, so this shows any added contention);
 *   - POST /batch of 25 record PUTs to one collection.
 *
 * `--history-preload N` (PostgreSQL) first stores N entries in the bench bucket's history, as
 * months of writes would leave it, to show whether a long history slows writes down; it also
 * prints the latency of a few history reads.
 *
 * As in bench/http.ts the server runs in a CHILD process, so that autocannon's parsing does
 * not share the server's event loop. PostgreSQL: a fresh schema per mode, dropped at the end.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { buildServer } from '../src/app.js';
import { loadSettings } from '../src/config.js';
import { EMBEDDED_FILE } from '../src/storage/factory.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { HISTORY_TOPIC, READ_PRINCIPALS_FIELD } from '../src/history/drainer.js';
import type { Storage } from '../src/storage/types.js';
import {
  askChild,
  childConfig,
  isServerChild,
  serveInChild,
  startServerChild,
  stopServerChild,
} from './child-server.js';
import { childCpuMs, cpuReply, postgresCpuMs } from './support.js';

type Backend = 'postgresql' | 'embedded';

interface ChildConfig {
  backend: Backend;
  url: string;
  schema: string;
  dataDir: string;
  history: boolean;
  /** Settings of the server with history on (e.g. `{"history_drain_delay_ms": 1000}`). */
  historySettings: Record<string, unknown>;
}

const AUTH = `Basic ${Buffer.from('bench:bench').toString('base64')}`;
const COLLECTIONS = 20;
const BATCH_SIZE = 25;

async function openStorage(config: ChildConfig): Promise<Storage> {
  return config.backend === 'postgresql'
    ? createPostgresStorage({ url: config.url, schema: config.schema, poolSize: 10, autoMigrate: true })
    : createSqliteStorage({ path: join(config.dataDir, EMBEDDED_FILE) });
}

async function serve(config: ChildConfig): Promise<void> {
  const storage = await openStorage(config);
  const settings = loadSettings({
    env: {},
    overrides: {
      userid_hmac_secret: 'bench',
      log_level: 'silent',
      history_enabled: config.history,
      ...(config.history ? config.historySettings : {}),
    },
  });
  const app = await buildServer({ settings, storage, logger: false });
  const headers = { authorization: AUTH, 'content-type': 'application/json' };
  await app.inject({ method: 'PUT', url: '/v1/buckets/bench', headers, payload: {} });
  for (let i = 0; i < COLLECTIONS; i++)
    await app.inject({ method: 'PUT', url: `/v1/buckets/bench/collections/c${i}`, headers, payload: {} });
  await serveInChild(app, storage, {
    drained: () => drainLag(storage),
    ...cpuReply,
  });
}

/**
 * How long after a run the history still had entries pending (drain lag): the write
 * throughput must not be bought by letting the outbox grow.
 */
async function drainLag(storage: Storage): Promise<{ lagMs: number }> {
  const started = performance.now();
  while ((await storage.read((session) => session.outbox.keys(HISTORY_TOPIC))).length > 0)
    await new Promise((resolve) => setTimeout(resolve, 5));
  return { lagMs: performance.now() - started };
}

/** Where PostgreSQL's write-ahead log ends now (null on the embedded store). */
async function walPosition(wal: pg.Client | null): Promise<string | null> {
  return wal ? (await wal.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn : null;
}

async function walBytesSince(wal: pg.Client | null, from: string | null): Promise<number> {
  if (!wal || from === null) return 0;
  return Number(
    (await wal.query<{ bytes: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS bytes', [from])).rows[0]!
      .bytes,
  );
}

interface Measured extends Result {
  serverCpuMs: number;
  postgresCpuMs: number;
  /** WAL written per request: what the commits have to flush to disk. */
  walBytes: number;
}

/**
 * One run, with the CPU the server process and PostgreSQL spent per request, and the WAL
 * written: unlike throughput, these do not depend on what else the machine is doing.
 */
async function measuredRun(
  child: ChildProcess,
  wal: pg.Client | null,
  ...args: Parameters<typeof run>
): Promise<Measured> {
  const [serverBefore, postgresBefore, walBefore] = [
    await childCpuMs(child),
    await postgresCpuMs(),
    await walPosition(wal),
  ];
  const result = await run(...args);
  const [serverAfter, postgresAfter, walBytes] = [
    await childCpuMs(child),
    await postgresCpuMs(),
    await walBytesSince(wal, walBefore),
  ];
  const requests = Math.max(1, result.rps * args[1]);
  return {
    ...result,
    serverCpuMs: (serverAfter - serverBefore) / requests,
    postgresCpuMs: (postgresAfter - postgresBefore) / requests,
    walBytes: walBytes / requests,
  };
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

type RequestSpec = () => { method: string; path: string; body: string };

async function run(
  port: number,
  duration: number,
  connections: number,
  rate: number | undefined,
  request: RequestSpec,
): Promise<Result> {
  if (rate) return pacedRun(port, duration, rate, request);
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    duration,
    connections,
    headers: { authorization: AUTH, 'content-type': 'application/json' },
    requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, ...request() }) }],
  } as never);
  const errors = result.errors + result.non2xx;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors };
}

/**
 * A fixed offered load, open loop: request i leaves at start + i/rate whether or not the
 * earlier ones were answered (a slower server faces a growing queue, as with real users),
 * each on a free keep-alive connection. autocannon's `overallRate` instead sends each
 * second's quota in a burst at the top of the second, which measures queueing in the burst.
 * Latency runs from the request's departure to the end of its response.
 */
async function pacedRun(port: number, duration: number, rate: number, request: RequestSpec): Promise<Result> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
  const latencies: number[] = [];
  let errors = 0;
  const send = (spec: ReturnType<RequestSpec>) =>
    new Promise<void>((resolve) => {
      const sent = performance.now();
      const outgoing = http.request(
        {
          host: '127.0.0.1',
          port,
          agent,
          method: spec.method,
          path: spec.path,
          headers: { authorization: AUTH, 'content-type': 'application/json' },
        },
        (response) => {
          response.resume();
          response.on('end', () => {
            if (response.statusCode! >= 400) errors++;
            else latencies.push(performance.now() - sent);
            resolve();
          });
        },
      );
      outgoing.on('error', () => {
        errors++;
        resolve();
      });
      outgoing.end(spec.body);
    });
  const pending: Array<Promise<void>> = [];
  const start = performance.now();
  const total = Math.round(rate * duration);
  for (let i = 0; i < total; i++) {
    const wait = start + (i * 1000) / rate - performance.now();
    if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait));
    pending.push(send(request()));
  }
  await Promise.all(pending);
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { rps: latencies.length / duration, p50: at(0.5), p99: at(0.99), errors };
}

const WORKLOADS: Array<{ name: string; request: RequestSpec }> = [
  {
    name: 'POST record, one collection',
    request: () => ({
      method: 'POST',
      path: '/v1/buckets/bench/collections/c0/records',
      body: '{"data":{"title":"x","n":1}}',
    }),
  },
  {
    name: `POST record, ${COLLECTIONS} collections`,
    request: () => ({
      method: 'POST',
      path: `/v1/buckets/bench/collections/c${Math.floor(Math.random() * COLLECTIONS)}/records`,
      body: '{"data":{"title":"x","n":1}}',
    }),
  },
  {
    name: `POST /batch of ${BATCH_SIZE} PUTs`,
    request: () => ({
      method: 'POST',
      path: '/v1/batch',
      body: JSON.stringify({
        requests: Array.from({ length: BATCH_SIZE }, () => ({
          method: 'PUT',
          path: `/buckets/bench/collections/c1/records/${randomUUID()}`,
          body: { data: { n: 1 } },
        })),
      }),
    }),
  },
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * The change from off to on as `+x% [low, high]`: the median of the per-round ratios (each
 * round runs both modes back to back, so a ratio cancels what the machine did then) and a 95%
 * bootstrap interval of that median. An interval that holds 0 means no change this run could
 * tell from the machine's noise (runs on another day may still differ more than that).
 */
function pairedChange(off: number[], on: number[]): string {
  const ratios = off.map((value, i) => on[i]! / value);
  const estimates = Array.from({ length: 2000 }, () =>
    median(ratios.map(() => ratios[Math.floor(Math.random() * ratios.length)]!)),
  ).sort((a, b) => a - b);
  const percent = (ratio: number) => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)}%`;
  return `${percent(median(ratios))} [${percent(estimates[50]!)}, ${percent(estimates[1949]!)}]`;
}

/**
 * Autovacuum is off on the CI machines (and may be anywhere): between rounds the bench does
 * what it would do in a deployment, so that neither mode runs on a growing pile of dead rows.
 */
async function vacuum(client: pg.Client, schemas: string[]): Promise<void> {
  for (const schema of schemas) {
    const tables = await client.query<{ name: string }>(
      'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1',
      [schema],
    );
    for (const { name } of tables.rows)
      await client.query(`VACUUM (ANALYZE) ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(name)}`);
  }
}

/**
 * Stores `count` history entries of the usual shape (a record created by the bench's user)
 * in the bucket's history, timestamped before now so that new entries come after them, with
 * random ids as the drainer gives them.
 */
async function preloadHistory(client: pg.Client, schema: string, count: number): Promise<void> {
  const bucket = '/buckets/bench';
  const principal = `basicauth:${'f'.repeat(64)}`;
  const first = Date.now() - count - 1;
  await client.query(`SET search_path = ${client.escapeIdentifier(schema)}`);
  await client.query(
    `INSERT INTO history (parent_id, resource_name, id, last_modified, data, deleted)
     SELECT $1, 'history', gen_random_uuid()::text, $2::bigint + record.n, jsonb_build_object(
       'action', 'create', 'resource_name', 'record',
       'uri', $1 || '/collections/c' || record.n % 20 || '/records/' || record.id,
       'user_id', $3::text, 'date', '2026-11-22T10:00:00.000000+00:00',
       'collection_id', 'c' || record.n % 20, 'record_id', record.id,
       'target', jsonb_build_object('data',
         jsonb_build_object('id', record.id, 'last_modified', $2::bigint + record.n, 'title', 'x', 'n', 1),
                                    'permissions', jsonb_build_object('write', jsonb_build_array($3::text))),
       $5::text, jsonb_build_array($3::text)), FALSE
     FROM (SELECT n, gen_random_uuid()::text AS id FROM generate_series(1, $4::int) AS n) AS record`,
    [bucket, first, principal, count, READ_PRINCIPALS_FIELD],
  );
  await client.query(
    `INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES ($1, 'history', $2)
     ON CONFLICT (parent_id, resource_name)
     DO UPDATE SET last_modified = GREATEST(timestamps.last_modified, EXCLUDED.last_modified)`,
    [bucket, first + count],
  );
  await client.query('RESET search_path');
  // Settled, as months-old rows are: visibility map and hint bits set, dirty pages on disk.
  await client.query(`VACUUM (ANALYZE) ${client.escapeIdentifier(schema)}.history`);
  await client.query('CHECKPOINT');
  const { rows } = await client.query<{ table: string; indexes: string }>(
    'SELECT pg_size_pretty(pg_table_size($1::regclass)) AS table, ' +
      'pg_size_pretty(pg_indexes_size($1::regclass)) AS indexes',
    [`${schema}.history`],
  );
  console.log(`history preloaded: ${count} entries; history table ${rows[0]!.table}, its index ${rows[0]!.indexes}`);
}

/** Median latency of history reads on the server with history on (a long history must not slow them). */
async function historyReadLatencies(port: number): Promise<void> {
  const reads = {
    'first page (newest 10)': '_limit=10',
    'oldest 10': '_limit=10&_sort=last_modified',
    'filtered (resource_name=record, 10)': '_limit=10&resource_name=record',
    'count (HEAD)': '',
  };
  for (const [label, query] of Object.entries(reads)) {
    const method = label.startsWith('count') ? 'HEAD' : 'GET';
    const times: number[] = [];
    for (let i = 0; i < 35; i++) {
      const started = performance.now();
      const response = await fetch(`http://127.0.0.1:${port}/v1/buckets/bench/history?${query}`, {
        method,
        headers: { authorization: AUTH },
      });
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`${label}: HTTP ${response.status}`);
      if (i >= 5) times.push(performance.now() - started); // the first ones warm up
    }
    console.log(`history read, ${label}: ${median(times).toFixed(2)} ms (median of ${times.length})`);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      backend: { type: 'string', default: 'postgresql' },
      duration: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '5' },
      connections: { type: 'string', default: '10' },
      // Offered requests per second, paced (unset: autocannon as fast as the server goes).
      // Below saturation, the latencies show what a write costs more under a steady load.
      rate: { type: 'string' },
      // Settings of the server with history on, as JSON.
      'history-settings': { type: 'string', default: '{}' },
      // Runs only the workloads whose name contains this text.
      workload: { type: 'string', default: '' },
      // Entries stored in the history before the runs (PostgreSQL only).
      'history-preload': { type: 'string', default: '0' },
      url: { type: 'string', default: process.env.QUIRE_BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    },
  });
  const backend = values.backend as Backend;
  const duration = Number(values.duration);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  const rate = values.rate === undefined ? undefined : Number(values.rate);
  const preload = Number(values['history-preload']);
  if (preload > 0 && backend !== 'postgresql') throw new Error('--history-preload needs --backend postgresql');
  // Both servers run side by side and the runs alternate, so that a change of machine load
  // affects both modes alike; medians over the rounds are reported.
  const servers: Array<{ history: boolean; child: ChildProcess; port: number; schema: string; dataDir: string }> = [];
  // The bench's own PostgreSQL connection: WAL positions, and the vacuum between rounds.
  const wal = backend === 'postgresql' ? new pg.Client({ connectionString: values.url }) : null;
  wal?.on('error', () => {}); // PostgreSQL ended the session: the next query fails, no unhandled 'error' event
  await wal?.connect();
  try {
    for (const history of [false, true]) {
      const schema = `quire_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const dataDir = backend === 'embedded' ? await mkdtemp(join(tmpdir(), 'quire-bench-')) : '';
      const { child, port } = await startServerChild(fileURLToPath(import.meta.url), {
        backend,
        url: values.url!,
        schema,
        dataDir,
        history,
        historySettings: JSON.parse(values['history-settings']!),
      });
      servers.push({ history, child, port, schema, dataDir });
      if (history && preload > 0) {
        await preloadHistory(wal!, schema, preload);
        await historyReadLatencies(port);
      }
    }
    console.log(
      `${backend}, ${connections} connections${rate ? `, ${rate} req/s offered` : ''}, ${rounds} alternating ` +
        `rounds of ${duration} s per mode and workload`,
    );
    console.log('Changes: median of the per-round ratios on/off [95% interval]. Medians over the rounds otherwise.');
    console.log(
      '| workload | req/s off → on | req/s change | CPU ms/request off → on (server + PostgreSQL) | CPU ' +
        'change | p50 off → on (ms) | p50 change | p99 off → on (ms) | p99 change | WAL KB/request off → on | ' +
        'errors | history lag after a run (max) |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const workload of WORKLOADS.filter((candidate) => candidate.name.includes(values.workload!))) {
      const samples: Measured[][] = [[], []];
      let maxLag = 0;
      // Unrecorded warm-up: the first seconds of a workload run on cold JIT, caches and pool.
      for (const server of servers) await run(server.port, Math.min(duration, 2), connections, rate, workload.request);
      if (wal)
        await vacuum(
          wal,
          servers.map((server) => server.schema),
        );
      for (let round = 0; round < rounds; round++) {
        // ABBA order (off, on, on, off...): whatever the previous run leaves behind (dirty
        // buffers, WAL to flush, a checkpoint) falls on both modes alike.
        const order = round % 2 === 0 ? [...servers.entries()] : [...servers.entries()].reverse();
        for (const [index, server] of order) {
          samples[index]!.push(
            await measuredRun(server.child, wal, server.port, duration, connections, rate, workload.request),
          );
          if (server.history)
            maxLag = Math.max(maxLag, (await askChild<{ lagMs: number }>(server.child, 'drained')).lagMs);
        }
        if (wal)
          await vacuum(
            wal,
            servers.map((server) => server.schema),
          );
      }
      const [off, on] = samples.map((results) => ({
        rps: median(results.map((r) => r.rps)),
        p50: median(results.map((r) => r.p50)),
        p99: median(results.map((r) => r.p99)),
        errors: results.reduce((sum, r) => sum + r.errors, 0),
        server: median(results.map((r) => r.serverCpuMs)),
        postgres: median(results.map((r) => r.postgresCpuMs)),
        wal: median(results.map((r) => r.walBytes)),
      }));
      const cpu = (mode: typeof off) => mode!.server + mode!.postgres;
      const split = (mode: typeof off) =>
        `${cpu(mode).toFixed(2)} (${mode!.server.toFixed(2)} + ${mode!.postgres.toFixed(2)})`;
      const [offRuns, onRuns] = samples as [Measured[], Measured[]];
      const rpsChange = pairedChange(
        offRuns.map((r) => r.rps),
        onRuns.map((r) => r.rps),
      );
      const cpuChange = pairedChange(
        offRuns.map((r) => r.serverCpuMs + r.postgresCpuMs),
        onRuns.map((r) => r.serverCpuMs + r.postgresCpuMs),
      );
      const p50Change = pairedChange(
        offRuns.map((r) => r.p50),
        onRuns.map((r) => r.p50),
      );
      const p99Change = pairedChange(
        offRuns.map((r) => r.p99),
        onRuns.map((r) => r.p99),
      );
      const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);
      console.log(
        `| ${workload.name} | ${off!.rps.toFixed(0)} → ${on!.rps.toFixed(0)} | ${rpsChange} | ${split(off)} → ` +
          `${split(on)} | ${cpuChange} | ${ms(off!.p50)} → ${ms(on!.p50)} | ${p50Change} | ${ms(off!.p99)} → ` +
          `${ms(on!.p99)} | ${p99Change} | ${(off!.wal / 1024).toFixed(2)} → ${(on!.wal / 1024).toFixed(2)} | ` +
          `${off!.errors + on!.errors} | ${maxLag.toFixed(0)} ms |`,
      );
    }
  } finally {
    await wal?.end();
    for (const server of servers) {
      await stopServerChild(server.child);
      if (backend === 'postgresql') {
        const client = new pg.Client({ connectionString: values.url });
        client.on('error', () => {}); // PostgreSQL ended the session: the next query fails, no unhandled 'error' event
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS ${server.schema} CASCADE`);
        await client.end();
      } else await rm(server.dataDir, { recursive: true, force: true });
    }
  }
}

if (isServerChild()) {
  await serve(childConfig<ChildConfig>());
} else {
  await main();
}
