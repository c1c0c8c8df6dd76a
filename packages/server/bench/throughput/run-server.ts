/** The throughput bench's parent side for one server: start it, run the workloads, stop it, clean up. */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { pgbouncerUnavailable, startPgbouncer } from '../../test/helpers/pgbouncer.js';
import { startServerChild, stopServerChild } from '../child-server.js';
import { type CpuSample, hostileNeighbour, type Kind } from '../hostile-neighbour.js';
import { backendsCpuMs, childCpuMs, cpuMs, formatNumber, load, postgresCpuMs, runSql } from '../support.js';
import {
  type ChildConfig,
  ITEMS_PATH,
  type Measure,
  ON_A_DATABASE,
  type Options,
  percent,
  RECORD_IDS,
  RECORDS,
  type ServerName,
  WARM_UP_SECONDS,
  WORKLOAD_NAMES,
  type WorkloadKey,
} from './config.js';
import { cannonOptions, send, setUp, workloads } from './workloads.js';

/** The script the server child runs: bench/throughput.ts, which forks itself with `--serve`. */
const ENTRY = fileURLToPath(new URL('../throughput.ts', import.meta.url));

/** Starts one server, runs the workloads against it, stops it and removes its data. */
export async function runServer(server: ServerName, options: Options): Promise<Map<WorkloadKey, Measure>> {
  const pooled = ON_A_DATABASE.has(server) ? await pooledTarget(server, options.url) : null;
  const schema = `quire_bench_${randomBytes(4).toString('hex')}`;
  const config: ChildConfig = {
    server, // its connections named after its schema: the neighbour row counts its backends' CPU
    url: pooled?.url ?? (server === 'postgresql' ? withApplicationName(options.url, schema) : options.url),
    ...(pooled?.listenUrl ? { listenUrl: pooled.listenUrl } : {}),
    schema,
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
      ENTRY,
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
          : `, CPU per request ${formatNumber(result.serverCpuMs, 3)} ms server + ` +
            `${formatNumber(result.postgresCpuMs!, 3)} ms PostgreSQL`;
      console.log(
        `  ${WORKLOAD_NAMES[workload.key].padEnd(12)} ${formatNumber(result.requestsPerSecond).padStart(7)} req/s, ` +
          `p50 ${result.p50} ms, p99 ${result.p99} ms${cpu}`,
      );
    }
    if (server !== 'ceiling' && options.keys.includes('get'))
      await neighbourRow(origin, options, child, server === 'postgresql' ? schema : null);
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
 * The hostile neighbour row (hostile-neighbour.ts): a bystander's GETs beside the worst allowed
 * listings, with the CPU of the server, of the load generator and (`application`: on PostgreSQL,
 * the server's connections' name) of its backends.
 */
async function neighbourRow(origin: string, options: Options, child: ChildProcess, application: string | null) {
  const client = application ? new pg.Client({ connectionString: options.url }) : null;
  await client?.connect();
  const sample = async (): Promise<CpuSample> => ({
    server: await childCpuMs(child),
    bench: cpuMs(process.cpuUsage()),
    backends: client && application ? await backendsCpuMs(client, application) : new Map(),
  });
  try {
    await printNeighbour(origin, options.duration, sample);
  } finally {
    await client?.end();
  }
}

async function printNeighbour(origin: string, duration: number, cpu: () => Promise<CpuSample>): Promise<void> {
  const path = () => `${ITEMS_PATH}/${RECORD_IDS[Math.floor(Math.random() * RECORDS)]}`;
  const result = await hostileNeighbour(origin, path, ITEMS_PATH, duration, cpu);
  const share = percent(result.beside, result.alone);
  console.log(
    `  hostile neighbour: bystander ${formatNumber(result.alone)} req/s alone, ${formatNumber(result.beside)} ` +
      `beside (${share}; target ≥ 50%), the neighbour ${formatNumber(result.hostile)} worst listings/s`,
  );
  const ms = (value: number) => formatNumber(value);
  const split = (kind: Kind) => {
    const { server, bench, pgListings, pgOthers } = result.cpu![kind];
    const database = `PostgreSQL ${ms(pgOthers)} + ${ms(pgListings)} (listings')`;
    return `${kind} server ${ms(server)}, ${database}, load ${ms(bench)}`;
  };
  console.log(`    CPU ms per s: ${split('alone')}; ${split('beside')}; ${split('neighbour')}`);
  const solo = result.cpu!.neighbour;
  const perListing = (value: number) => formatNumber(value / Math.max(result.hostileAlone, 1e-3), 2);
  console.log(
    `    the neighbour alone: ${ms(result.hostileAlone)} listings/s, CPU per listing ${perListing(solo.server)} ms ` +
      `server + ${perListing(solo.pgListings + solo.pgOthers)} ms PostgreSQL`,
  );
}

/** `url` with `application_name` set: the server's connections are then found in pg_stat_activity. */
function withApplicationName(url: string, name: string): string {
  const named = new URL(url);
  named.searchParams.set('application_name', name);
  return named.toString();
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
export function pgbouncerProblem(): string | null {
  return pgbouncerUnavailable('bench/throughput.ts') ?? null;
}

async function dropSchema(config: ChildConfig): Promise<void> {
  await runSql(config.url, `DROP SCHEMA IF EXISTS ${config.schema} CASCADE`);
}
