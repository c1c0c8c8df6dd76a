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
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { buildServer } from '../src/app.js';
import { loadSettings } from '../src/config.js';
import { EMBEDDED_FILE } from '../src/storage/factory.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { HISTORY_TOPIC } from '../src/history/drainer.js';
import type { Storage } from '../src/storage/types.js';
import {
  askChild,
  childConfig,
  isServerChild,
  serveInChild,
  startServerChild,
  stopServerChild,
} from './child-server.js';
import { AUTH, type Measured, measuredRun, type RequestSpec, run } from './history/load.js';
import { historyReadLatencies, preloadHistory, vacuum } from './history/preload.js';
import { median, pairedChange } from './history/stats.js';
import { cpuReply } from './support.js';

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

/** One server of a mode (history off or on), in its child process. */
interface Server {
  history: boolean;
  child: ChildProcess;
  port: number;
  schema: string;
  dataDir: string;
}

interface RunOptions {
  duration: number;
  rounds: number;
  connections: number;
  rate: number | undefined;
}

/** A mode's medians over the rounds. */
interface Summary {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  server: number;
  postgres: number;
  wal: number;
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
  const options: RunOptions = {
    duration: Number(values.duration),
    rounds: Number(values.rounds),
    connections: Number(values.connections),
    rate: values.rate === undefined ? undefined : Number(values.rate),
  };
  const preload = Number(values['history-preload']);
  if (preload > 0 && backend !== 'postgresql') throw new Error('--history-preload needs --backend postgresql');
  // Both servers run side by side and the runs alternate, so that a change of machine load
  // affects both modes alike; medians over the rounds are reported.
  const servers: Server[] = [];
  // The bench's own PostgreSQL connection: WAL positions, and the vacuum between rounds.
  const wal = backend === 'postgresql' ? new pg.Client({ connectionString: values.url }) : null;
  wal?.on('error', () => {}); // PostgreSQL ended the session: the next query fails, no unhandled 'error' event
  await wal?.connect();
  try {
    for (const history of [false, true]) {
      const server = await startServer(backend, values.url, history, JSON.parse(values['history-settings']));
      servers.push(server);
      if (history && preload > 0) {
        await preloadHistory(wal!, server.schema, preload);
        await historyReadLatencies(server.port);
      }
    }
    printTableHead(backend, options);
    for (const workload of WORKLOADS.filter((candidate) => candidate.name.includes(values.workload))) {
      const { samples, maxLag } = await measureWorkload(workload.request, servers, wal, options);
      console.log(tableRow(workload.name, samples, maxLag));
    }
  } finally {
    await wal?.end();
    for (const server of servers) await removeServer(backend, values.url, server);
  }
}

/** A server of one mode in a child process, on a fresh schema (or directory). */
async function startServer(
  backend: Backend,
  url: string,
  history: boolean,
  historySettings: Record<string, unknown>,
): Promise<Server> {
  const schema = `quire_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const dataDir = backend === 'embedded' ? await mkdtemp(join(tmpdir(), 'quire-bench-')) : '';
  const config: ChildConfig = { backend, url, schema, dataDir, history, historySettings };
  const { child, port } = await startServerChild(fileURLToPath(import.meta.url), config);
  return { history, child, port, schema, dataDir };
}

/** Stops a server and drops its schema (or removes its directory). */
async function removeServer(backend: Backend, url: string, server: Server): Promise<void> {
  await stopServerChild(server.child);
  if (backend === 'postgresql') {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => {}); // PostgreSQL ended the session: the next query fails, no unhandled 'error' event
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${server.schema} CASCADE`);
    await client.end();
  } else await rm(server.dataDir, { recursive: true, force: true });
}

function printTableHead(backend: Backend, { duration, rounds, connections, rate }: RunOptions): void {
  console.log(
    `${backend}, ${connections} connections${rate ? `, ${rate} req/s offered` : ''}, ` +
      `${rounds} alternating rounds of ${duration} s per mode and workload`,
  );
  console.log('Changes: median of the per-round ratios on/off [95% interval]. Medians over the rounds otherwise.');
  const columns = [
    'workload',
    'req/s off → on',
    'req/s change',
    'CPU ms/request off → on (server + PostgreSQL)',
    'CPU change',
    'p50 off → on (ms)',
    'p50 change',
    'p99 off → on (ms)',
    'p99 change',
    'WAL KB/request off → on',
    'errors',
    'history lag after a run (max)',
  ];
  console.log(`| ${columns.join(' | ')} |`);
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
}

/**
 * One workload: an unrecorded warm-up on each server, then the rounds, both modes per round;
 * the samples of each mode (off, on) and the longest drain lag of the history.
 */
async function measureWorkload(
  request: RequestSpec,
  servers: Server[],
  wal: pg.Client | null,
  { duration, rounds, connections, rate }: RunOptions,
): Promise<{ samples: [Measured[], Measured[]]; maxLag: number }> {
  const samples: [Measured[], Measured[]] = [[], []];
  let maxLag = 0;
  // Unrecorded warm-up: the first seconds of a workload run on cold JIT, caches and pool.
  for (const server of servers) await run(server.port, Math.min(duration, 2), connections, rate, request);
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
      samples[index]!.push(await measuredRun(server.child, wal, server.port, duration, connections, rate, request));
      if (server.history) maxLag = Math.max(maxLag, (await askChild<{ lagMs: number }>(server.child, 'drained')).lagMs);
    }
    if (wal)
      await vacuum(
        wal,
        servers.map((server) => server.schema),
      );
  }
  return { samples, maxLag };
}

function summary(results: Measured[]): Summary {
  return {
    rps: median(results.map((r) => r.rps)),
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    server: median(results.map((r) => r.serverCpuMs)),
    postgres: median(results.map((r) => r.postgresCpuMs)),
    wal: median(results.map((r) => r.walBytes)),
  };
}

/** The table's row of a workload: medians off → on, and the paired changes. */
function tableRow(name: string, [offRuns, onRuns]: [Measured[], Measured[]], maxLag: number): string {
  const [off, on] = [summary(offRuns), summary(onRuns)];
  const cpu = (mode: Summary) => mode.server + mode.postgres;
  const split = (mode: Summary) => `${cpu(mode).toFixed(2)} (${mode.server.toFixed(2)} + ${mode.postgres.toFixed(2)})`;
  const change = (figure: (run: Measured) => number) => pairedChange(offRuns.map(figure), onRuns.map(figure));
  const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);
  const cells = [
    name,
    `${off.rps.toFixed(0)} → ${on.rps.toFixed(0)}`,
    change((r) => r.rps),
    `${split(off)} → ${split(on)}`,
    change((r) => r.serverCpuMs + r.postgresCpuMs),
    `${ms(off.p50)} → ${ms(on.p50)}`,
    change((r) => r.p50),
    `${ms(off.p99)} → ${ms(on.p99)}`,
    change((r) => r.p99),
    `${(off.wal / 1024).toFixed(2)} → ${(on.wal / 1024).toFixed(2)}`,
    `${off.errors + on.errors}`,
    `${maxLag.toFixed(0)} ms`,
  ];
  return `| ${cells.join(' | ')} |`;
}

if (isServerChild()) {
  await serve(childConfig<ChildConfig>());
} else {
  await main();
}
