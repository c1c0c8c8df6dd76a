/**
 * How Quire's costs grow with the data (not a test): the same requests against stores of
 * growing size, and the growth factor of each, PostgreSQL and embedded. A path whose cost grows
 * with the whole store rather than with what the caller asked for shows as a factor far above 1.
 *
 *   pnpm bench --scale [options]               (from the root or packages/server)
 *   or: cd packages/server && node --conditions=@quire/source --import tsx bench/scale.ts [options]
 *
 * Options:
 *   --backends postgresql,embedded   stores to run (default both; PostgreSQL is skipped, with the
 *                                    reason, when it does not answer)
 *   --stages 1000:100,100000:1000,1000000:10000
 *                                    N records in the measured collection : C collections the
 *                                    caller may read (the change monitor's size), per stage
 *   --samples K                      timed requests per figure (default 15; a slow request gets
 *                                    fewer, at least 5, within --budget seconds; after 2 untimed)
 *   --budget S                       seconds per figure at most (default 3)
 *   --url URL                        PostgreSQL (default: $QUIRE_BENCH_URL, $QUIRE_TEST_PG_URL, or
 *                                    postgresql://postgres@127.0.0.1:5432/test)
 *   --json PATH                      also write the figures as JSON
 *
 * Each stage is loaded through the import path (`quire import`'s importStore, replacing what the
 * previous stage loaded, one transaction, ending by analysing what it loaded), its declared index
 * built (`updateIndexes`), then it is served by a
 * `quire`-like server in a CHILD process (the bench's requests, one at a time, do not share its
 * event loop). PostgreSQL: a database of the bench's own, dropped at the end. A stage holds:
 * - bucket `scale` of user alice, with collection `items` of N records `{n, m, title, done,
 *   tags}`: `n` and `m` are two permutations of 0..N-1 unrelated to the order of creation (a
 *   filter on them cannot stop early by chance); the collection declares an index on `n` (the
 *   `indexes` extension, see the server README), none on `m`;
 * - 1,000 other users, each the author (write ACE) of the records i ≡ user (mod 1,000): the
 *   permission store holds N entries; alice holds 200 of them (a read ACE on 200 records), her
 *   bucket's and the root's (bucket creation), whatever N;
 * - C more collections in alice's bucket, each with a records timestamp: what the change
 *   monitor lists for her.
 * The figures are the best of K sequential requests (ms, client included: fetch over a
 * kept-alive connection; see `best`), and the growth factor is last stage / first stage. Requests: GET one record
 * (random), the first page (100, default order), a page in the middle (a Next-Page token of the
 * middle record), a `_since` poll answered 304, the count (HEAD, Total-Records), a filter and
 * a sort on a data field with and without a declared index (`gt_n=`/`gt_m=` keeping 10
 * records, `_sort=-n`/`-m` with `_limit=10`), the change monitor, `GET /permissions`, POST
 * one record, and a /batch of 25 creations.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildServer } from '../src/app.js';
import { EMBEDDED_FILE } from '../src/storage/factory.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { childConfig, isServerChild, serveInChild, startServerChild, stopServerChild } from './child-server.js';
import { ALICE_ENTRIES, load, type Stage } from './scale/data.js';
import { best, type Options, ROWS, type Row } from './scale/requests.js';
import { benchSettings, formatNumber, postgresProblem, runSql } from './support.js';

type Backend = 'postgresql' | 'embedded';

interface ChildConfig {
  backend: Backend;
  /**
   * PostgreSQL: the bench's own database (CREATE INDEX CONCURRENTLY waits for every older
   * transaction of its database).
   */
  url: string;
  dataDir: string;
}

// ---------------------------------------------------------------------------------------------
// Child: the server.

/** The store; `keepIndexes: false` for the loading (as `quire import` opens it: no index builds racing it). */
async function openStorage(config: ChildConfig, { keepIndexes = true } = {}): Promise<Storage> {
  return config.backend === 'postgresql'
    ? createPostgresStorage({ url: config.url, autoMigrate: true, poolSize: 10, keepIndexes })
    : createSqliteStorage({ path: join(config.dataDir, EMBEDDED_FILE), keepIndexes });
}

async function serve(config: ChildConfig): Promise<void> {
  const storage = await openStorage(config);
  await serveInChild(await buildServer({ settings: benchSettings(), storage, logger: false }), storage);
}

// ---------------------------------------------------------------------------------------------
// Parent: each stage loaded, then served and measured.

interface StageResult {
  stage: Stage;
  loadMs: number;
  indexMs: number;
  figures: number[];
}

async function runBackend(backend: Backend, stages: Stage[], url: string, options: Options): Promise<StageResult[]> {
  const database = `quire_bench_scale_${randomBytes(4).toString('hex')}`;
  const databaseUrl = new URL(url);
  databaseUrl.pathname = `/${database}`;
  const config: ChildConfig = {
    backend,
    url: databaseUrl.toString(),
    dataDir: backend === 'embedded' ? await mkdtemp(join(tmpdir(), 'quire-bench-scale-')) : '',
  };
  if (backend === 'postgresql') await runSql(url, `CREATE DATABASE ${database}`);
  const results: StageResult[] = [];
  try {
    for (const stage of stages) {
      const storage = await openStorage(config, { keepIndexes: false });
      let timings: { loadMs: number; indexMs: number };
      try {
        timings = await load(storage, stage);
      } finally {
        await storage.close();
      }
      const { loadMs, indexMs } = timings;
      console.log(
        `${backend}: ${formatNumber(stage.records)} records, ${formatNumber(stage.collections)} collections ` +
          `loaded through the import path in ${formatNumber(loadMs / 1000, 1)} s, ` +
          `the declared index built in ${formatNumber(indexMs / 1000, 1)} s`,
      );
      let child: ChildProcess | null = null;
      try {
        const started = await startServerChild(fileURLToPath(import.meta.url), config);
        child = started.child;
        const origin = `http://127.0.0.1:${started.port}`;
        const figures: number[] = [];
        for (const row of ROWS) {
          const figure = await best(await row.run(origin, stage), options);
          figures.push(figure);
          console.log(`  ${row.label.padEnd(44)} ${formatNumber(figure, 2).padStart(9)} ms`);
        }
        results.push({ stage, loadMs, indexMs, figures });
      } finally {
        if (child) await stopServerChild(child);
      }
    }
  } finally {
    if (backend === 'postgresql') await runSql(url, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    if (config.dataDir) await rm(config.dataDir, { recursive: true, force: true });
  }
  return results;
}

const sizeOf = (row: Row, stage: Stage) =>
  formatNumber(
    row.scale === 'collections'
      ? stage.collections
      : row.scale === 'ACEs'
        ? stage.records + 1 + ALICE_ENTRIES
        : stage.records,
  );

function table(backend: Backend, results: StageResult[]): string {
  const first = results[0]!;
  const last = results.at(-1)!;
  const header = [
    'request',
    'grows with',
    ...results.map(({ stage }) => `N = ${formatNumber(stage.records)}, C = ${formatNumber(stage.collections)}`),
    `growth ×${formatNumber(last.stage.records / first.stage.records)}`,
  ];
  const rows = ROWS.map((row, i) => [
    row.label,
    `${row.scale} (${results.map(({ stage }) => sizeOf(row, stage)).join(' / ')})`,
    ...results.map(({ figures }) => `${formatNumber(figures[i]!, 2)} ms`),
    `×${formatNumber(last.figures[i]! / first.figures[i]!, 1)}`,
  ]);
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => row[column]!.length)));
  const pad = (cell: string, column: number) =>
    column < 2 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!);
  const line = (row: string[]) => `| ${row.map(pad).join(' | ')} |`;
  const seconds = (ms: number) => `${formatNumber(ms / 1000, 1)} s`;
  return [
    `${backend}: latency of one request, best of the samples, ms ` +
      `(stages loaded in ${results.map(({ loadMs }) => seconds(loadMs)).join(', ')}; ` +
      `the declared index built in ${results.map(({ indexMs }) => seconds(indexMs)).join(', ')})`,
    '',
    line(header),
    `|${widths.map((width, column) => `${'-'.repeat(width + 1)}${column < 2 ? '-' : ':'}`).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

function parseStages(text: string): Stage[] {
  return text.split(',').map((part) => {
    const [records, collections] = part.split(':').map(Number);
    if (
      !Number.isSafeInteger(records) ||
      records! < ALICE_ENTRIES ||
      !Number.isSafeInteger(collections) ||
      collections! < 1
    ) {
      throw new Error(`--stages: "${part}" is not records:collections (records ≥ ${ALICE_ENTRIES}, collections ≥ 1)`);
    }
    return { records: records!, collections: collections! };
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2).filter((arg) => arg !== '--scale');
  const { values } = parseArgs({
    args: argv[0] === '--' ? argv.slice(1) : argv,
    options: {
      backends: { type: 'string', default: 'postgresql,embedded' },
      stages: { type: 'string', default: '1000:100,100000:1000,1000000:10000' },
      samples: { type: 'string', default: '15' },
      budget: { type: 'string', default: '3' },
      url: {
        type: 'string',
        default:
          process.env.QUIRE_BENCH_URL ?? process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
      },
      json: { type: 'string' },
    },
  });
  const backends = values.backends.split(',').map((name) => name.trim()) as Backend[];
  for (const backend of backends)
    if (backend !== 'postgresql' && backend !== 'embedded') throw new Error(`--backends: unknown ${backend}`);
  const stages = parseStages(values.stages);
  const options: Options = { samples: Math.max(5, Number(values.samples)), budgetMs: Number(values.budget) * 1000 };
  const date = new Date().toISOString();
  const header =
    `Quire at scale, ${date}; Node ${process.version}, ${cpus().length} CPUs; ` +
    `best of ${options.samples} sequential requests (at least 5 within ${values.budget} s)`;
  console.log(`${header}\n`);
  const started = performance.now();
  const tables: string[] = [];
  const json: Record<string, unknown> = {};
  for (const backend of backends) {
    const problem = backend === 'postgresql' ? await postgresProblem(values.url) : null;
    if (problem) {
      tables.push(`${backend}: skipped, ${problem}`);
      console.log(`${backend}: skipped, ${problem}`);
      continue;
    }
    const results = await runBackend(backend, stages, values.url, options);
    tables.push(table(backend, results));
    json[backend] = results.map(({ stage, loadMs, indexMs, figures }) => ({
      ...stage,
      loadMs,
      indexMs,
      figures: Object.fromEntries(ROWS.map((row, i) => [row.label, figures[i]])),
    }));
  }
  console.log(`\n${header}; ${formatNumber((performance.now() - started) / 60_000, 1)} min in all\n`);
  console.log(tables.join('\n\n'));
  if (values.json)
    await writeFile(
      values.json,
      `${JSON.stringify({ date, node: process.version, cpus: cpus().length, results: json }, null, 2)}\n`,
    );
}

if (isServerChild()) {
  await serve(childConfig<ChildConfig>());
} else {
  await main();
}
