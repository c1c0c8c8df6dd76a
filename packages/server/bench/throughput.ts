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
import { mkdtemp, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { childConfig, isServerChild } from './child-server.js';
import { postgresProblem } from './support.js';
import { serve } from './throughput/child.js';
import {
  type ChildConfig,
  DEFAULT_SERVERS,
  ON_A_DATABASE,
  type Options,
  SERVERS,
  type ServerName,
  WARM_UP_SECONDS,
  WORKLOAD_KEYS,
} from './throughput/config.js';
import { printTable, type Results } from './throughput/report.js';
import { pgbouncerProblem, runServer } from './throughput/run-server.js';

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
    `autocannon ${options.connections} connections × ${options.duration} s per workload ` +
    `(after ${WARM_UP_SECONDS} s of warm-up); ` +
    `postgresql in ${options.workers} process${options.workers > 1 ? 'es' : ''}`;
  console.log(`${header}\n`);

  const results: Results = new Map();
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

  const json = printTable(header, servers, options.keys, results, skipped);
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
