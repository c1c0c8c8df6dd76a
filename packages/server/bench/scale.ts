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
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildServer } from '../src/app.js';
import { EMBEDDED_FILE } from '../src/storage/factory.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { importStore } from '../src/transfer/import.js';
import { childConfig, isServerChild, serveInChild, startServerChild, stopServerChild } from './child-server.js';
import { benchSettings, formatNumber, postgresProblem, runSql } from './support.js';

type Backend = 'postgresql' | 'embedded';

interface ChildConfig {
  backend: Backend;
  /** PostgreSQL: the bench's own database (CREATE INDEX CONCURRENTLY waits for every older transaction of its database). */
  url: string;
  dataDir: string;
}

interface Stage {
  records: number;
  collections: number;
}

const SECRET = 'bench-secret'; // benchSettings' userid_hmac_secret
const USERS = 1_000;
const ALICE_ENTRIES = 200;
const BUCKET = '/buckets/scale';
const ITEMS = `${BUCKET}/collections/items`;
const RECORDS_PATH = `/v1${ITEMS}/records`;
/** The first record's timestamp; record i has FIRST + i (unique in the scope, in creation order). */
const FIRST = 1_700_000_000_000;
const ALICE = `Basic ${Buffer.from('alice:alice').toString('base64')}`;
const userId = (name: string) =>
  `basicauth:${createHmac('sha256', SECRET).update(`${name}:${name}`, 'utf8').digest('hex')}`;

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
// Parent: the data, through the import path.

/** A permutation of 0..n-1 (multiplication by a prime that does not divide n, modulo n). */
function permutation(prime: number, n: number): (i: number) => number {
  let p = prime;
  while (n % p === 0 || gcd(p, n) !== 1) p += 2;
  return (i) => Number((BigInt(i) * BigInt(p)) % BigInt(n));
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** The stage's export stream: the lines `quire import` reads (transfer/format.ts). */
function* exportLines({ records, collections }: Stage): Generator<string> {
  const alice = userId('alice');
  const n = permutation(7_919, records);
  const m = permutation(104_729, records);
  const aliceEvery = Math.max(1, Math.floor(records / ALICE_ENTRIES));
  yield JSON.stringify({ format: 'quire-export', version: 1 });
  yield JSON.stringify({
    object: { id: 'scale', last_modified: FIRST },
    parent: '',
    permissions: { write: [alice] },
    resource: 'bucket',
  });
  yield JSON.stringify({
    object: { id: 'items', indexes: ['n'], last_modified: FIRST + 1 },
    parent: BUCKET,
    resource: 'collection',
  });
  for (let c = 0; c < collections; c++) {
    yield JSON.stringify({
      object: { id: `m${c}`, last_modified: FIRST + 2 + c },
      parent: BUCKET,
      resource: 'collection',
    });
  }
  yield JSON.stringify({ scope: { parent: BUCKET, resource: 'collection', timestamp: FIRST + 2 + collections } });
  for (let c = 0; c < collections; c++)
    yield JSON.stringify({
      scope: { parent: `${BUCKET}/collections/m${c}`, resource: 'record', timestamp: FIRST + c },
    });
  const authors = Array.from({ length: USERS }, (_, u) => userId(`user${u}`));
  for (let i = 0; i < records; i++) {
    const permissions: Record<string, string[]> = { write: [authors[i % USERS]!] };
    if (i % aliceEvery === 0 && i / aliceEvery < ALICE_ENTRIES) permissions.read = [alice];
    const object = {
      id: `r${i}`,
      last_modified: FIRST + i,
      n: n(i),
      m: m(i),
      title: `record ${i}`,
      done: i % 3 === 0,
      tags: ['scale', `t${i % 10}`],
    };
    yield JSON.stringify({ object, parent: ITEMS, permissions, resource: 'record' });
  }
  yield JSON.stringify({ scope: { parent: ITEMS, resource: 'record', timestamp: FIRST + records - 1 } });
}

/** Imports the stage, then builds its declared index; the time of each. */
async function load(storage: Storage, stage: Stage): Promise<{ loadMs: number; indexMs: number }> {
  const started = performance.now();
  const stream = Readable.from(
    (function* () {
      for (const line of exportLines(stage)) yield `${line}\n`;
    })(),
  );
  await importStore(storage, stream, { batchSize: 5_000, replace: true });
  const loaded = performance.now();
  const indexed = await storage.updateIndexes?.();
  if (!indexed?.has('n')) throw new Error('the declared index on n was not built');
  return { loadMs: loaded - started, indexMs: performance.now() - loaded };
}

// ---------------------------------------------------------------------------------------------
// Parent: the requests.

interface Options {
  samples: number;
  budgetMs: number;
}

/**
 * The shortest duration (ms) of `request` over the samples, after two untimed calls. The best
 * of K, not the median: on a machine whose cores other work shares, a request's median mostly
 * measures how long it waited for a core; the best is what it costs.
 */
async function best(request: () => Promise<void>, { samples, budgetMs }: Options): Promise<number> {
  await request();
  await request();
  const durations: number[] = [];
  const deadline = performance.now() + budgetMs;
  while (durations.length < samples && (durations.length < 5 || performance.now() < deadline)) {
    const start = performance.now();
    await request();
    durations.push(performance.now() - start);
  }
  return Math.min(...durations);
}

async function call(
  origin: string,
  method: string,
  path: string,
  expected: number,
  { body, headers = {} }: { body?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: {
      Authorization: ALICE,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status !== expected)
    throw new Error(`${method} ${path}: expected ${expected}, got ${response.status} ${text.slice(0, 300)}`);
  return { headers: response.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const dataLength = (body: Record<string, unknown>) => (body.data as unknown[]).length;

function expectLength(what: string, actual: number, expected: number): void {
  if (actual !== expected) throw new Error(`${what}: expected ${expected} items, got ${actual}`);
}

/** The rows of the table: a label, what its scale is (records, collections…), and the request. */
interface Row {
  label: string;
  scale: 'records' | 'collections' | 'ACEs';
  run: (origin: string, stage: Stage) => Promise<() => Promise<void>>;
}

const ROWS: Row[] = [
  {
    label: 'GET one record',
    scale: 'records',
    run:
      async (origin, { records }) =>
      async () =>
        void (await call(origin, 'GET', `${RECORDS_PATH}/r${Math.floor(Math.random() * records)}`, 200)),
  },
  {
    label: 'first page (100)',
    scale: 'records',
    run: async (origin) => async () =>
      expectLength('first page', dataLength((await call(origin, 'GET', `${RECORDS_PATH}?_limit=100`, 200)).body), 100),
  },
  {
    label: 'middle page (100, Next-Page token)',
    scale: 'records',
    run: async (origin, { records }) => {
      const middle = Math.floor(records / 2);
      const token = Buffer.from(
        JSON.stringify({
          last_object: { last_modified: FIRST + middle },
          offset: records - middle,
          nonce: 'pagination-token-scale',
        }),
      ).toString('base64');
      const path = `${RECORDS_PATH}?_limit=100&_token=${encodeURIComponent(token)}`;
      return async () =>
        expectLength('middle page', dataLength((await call(origin, 'GET', path, 200)).body), Math.min(100, middle));
    },
  },
  {
    label: '304 poll (_since, If-None-Match)',
    scale: 'records',
    run: async (origin) => {
      const etag = (await call(origin, 'GET', `${RECORDS_PATH}?_limit=1`, 200)).headers.get('etag')!;
      const path = `${RECORDS_PATH}?_since=${etag.replaceAll('"', '')}`;
      return async () => void (await call(origin, 'GET', path, 304, { headers: { 'If-None-Match': etag } }));
    },
  },
  {
    label: 'count (HEAD, Total-Records)',
    scale: 'records',
    run: async (origin) => async () => {
      const total = Number((await call(origin, 'HEAD', RECORDS_PATH, 200)).headers.get('total-records'));
      if (!(total > 0)) throw new Error(`count: Total-Records ${total}`);
    },
  },
  ...(['n', 'm'] as const).flatMap((field): Row[] => {
    const which = field === 'n' ? 'declared index' : 'no index';
    return [
      {
        label: `filter gt_${field}= (10 of N, ${which})`,
        scale: 'records',
        run:
          async (origin, { records }) =>
          async () =>
            expectLength(
              `gt_${field}`,
              dataLength(
                (await call(origin, 'GET', `${RECORDS_PATH}?gt_${field}=${records - 11}&_limit=10`, 200)).body,
              ),
              10,
            ),
      },
      {
        label: `sort _sort=-${field}&_limit=10 (${which})`,
        scale: 'records',
        run:
          async (origin, { records }) =>
          async () => {
            const { body } = await call(origin, 'GET', `${RECORDS_PATH}?_sort=-${field}&_limit=10`, 200);
            const first = (body.data as Array<Record<string, number>>)[0]?.[field];
            if (first !== records - 1)
              throw new Error(`_sort=-${field}: the first record has ${field} = ${first}, not ${records - 1}`);
          },
      },
    ];
  }),
  {
    label: 'change monitor (GET, every collection)',
    scale: 'collections',
    // One page: every collection, up to storage_max_fetch_size (10,000) entries.
    run:
      async (origin, { collections }) =>
      async () =>
        expectLength(
          'monitor',
          dataLength((await call(origin, 'GET', '/v1/buckets/monitor/collections/changes/records', 200)).body),
          Math.min(collections + 1, 10_000),
        ),
  },
  {
    label: `GET /permissions (${ALICE_ENTRIES + 2} entries)`,
    scale: 'ACEs',
    run: async (origin) => async () =>
      expectLength(
        'permissions',
        dataLength((await call(origin, 'GET', '/v1/permissions', 200)).body),
        ALICE_ENTRIES + 2,
      ),
  },
  {
    label: 'POST one record',
    scale: 'records',
    run: async (origin) => async () =>
      void (await call(origin, 'POST', RECORDS_PATH, 201, { body: { data: { title: 'new', n: -1, m: -1 } } })),
  },
  {
    label: 'batch of 25 creations',
    scale: 'records',
    run: async (origin) => {
      const body = {
        defaults: { method: 'POST', path: `${ITEMS}/records` },
        requests: Array.from({ length: 25 }, (_, i) => ({
          body: { data: { title: 'batched', n: -1 - i, m: -1 - i } },
        })),
      };
      return async () => void (await call(origin, 'POST', '/v1/batch', 200, { body }));
    },
  },
];

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
        `${backend}: ${formatNumber(stage.records)} records, ${formatNumber(stage.collections)} collections loaded through the import path in ${formatNumber(loadMs / 1000, 1)} s, the declared index built in ${formatNumber(indexMs / 1000, 1)} s`,
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
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => (column < 2 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join(' | ')} |`;
  return [
    `${backend}: latency of one request, best of the samples, ms (stages loaded in ${results.map(({ loadMs }) => `${formatNumber(loadMs / 1000, 1)} s`).join(', ')}; the declared index built in ${results.map(({ indexMs }) => `${formatNumber(indexMs / 1000, 1)} s`).join(', ')})`,
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
  const header = `Quire at scale, ${date}; Node ${process.version}, ${cpus().length} CPUs; best of ${options.samples} sequential requests (at least 5 within ${values.budget} s)`;
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
