/**
 * `quire import` beside the database's own bulk floor (not a test): the time to import N records
 * into each store, and in the same run the time the database takes to store the same rows bare.
 *
 *   pnpm bench --import [options]              (from the root or packages/server)
 *   or: cd packages/server && node --conditions=@quire/source --import tsx bench/import.ts [options]
 *
 * Options:
 *   --records N         records in one collection (default 1,000,000)
 *   --collections C     more collections, each with --spread records (default 10,000 × 11: the
 *                       review's 1.11M records in all)
 *   --spread S
 *   --backends postgresql,embedded   (PostgreSQL skipped, with the reason, when it does not answer)
 *   --url URL           PostgreSQL (default: $QUIRE_BENCH_URL, $QUIRE_TEST_PG_URL, or
 *                       postgresql://postgres@127.0.0.1:5432/test)
 *
 * The data: an export file (NDJSON, written once to a temporary directory) of bucket `bench`,
 * its collections and records `{n, title, done, tags}`, each with its author's write ACE (one of
 * 1,000 users), as `quire export` writes them. The import reads that file through `importStore`,
 * as `quire import --input` does, into a fresh store (a schema of its own; a new SQLite file).
 * The floors, the same rows (objects and ACEs) stored bare, in the same run:
 * - PostgreSQL: `COPY … FROM STDIN` of the rows, from a file in COPY's text format, into two
 *   tables of the same columns without index, constraint or trigger, in one transaction;
 * - embedded: the rows inserted into such tables by prepared multi-row INSERTs in one
 *   transaction (the row values built as the rows go, not parsed from a file).
 * The ratio import / floor is what to read: the machine is shared, absolute times vary.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { importStore } from '../src/transfer/import.js';
import { cpuMs as cpuTime, formatNumber, postgresProblem } from './support.js';

interface Shape {
  records: number;
  collections: number;
  spread: number;
}

interface Row {
  parent: string;
  id: string;
  lastModified: number;
  data: Record<string, unknown>;
  writer: string;
}

const FIRST = 1_700_000_000_000;
const BUCKET = '/buckets/bench';
const users = Array.from({ length: 1_000 }, (_, u) => `basicauth:${u.toString(16).padStart(64, '0')}`);

/** The records, in export order: the big collection, then the small ones. */
function* records({ records, collections, spread }: Shape): Generator<Row> {
  for (let i = 0; i < records; i++)
    yield {
      parent: `${BUCKET}/collections/items`,
      id: `r${i}`,
      lastModified: FIRST + i,
      data: { n: i, title: `record ${i}`, done: i % 3 === 0, tags: ['bench', `t${i % 10}`] },
      writer: users[i % users.length]!,
    };
  for (let c = 0; c < collections; c++)
    for (let i = 0; i < spread; i++)
      yield {
        parent: `${BUCKET}/collections/c${c}`,
        id: `r${i}`,
        lastModified: FIRST + i,
        data: { n: i, title: `record ${i}`, done: false, tags: ['bench'] },
        writer: users[(c + i) % users.length]!,
      };
}

/** The containers: bucket, the big collection and the small ones (as rows of the floors too). */
function* containers({ collections }: Shape): Generator<{ parent: string; resource: string; id: string; lm: number }> {
  yield { parent: '', resource: 'bucket', id: 'bench', lm: FIRST };
  yield { parent: BUCKET, resource: 'collection', id: 'items', lm: FIRST + 1 };
  for (let c = 0; c < collections; c++)
    yield { parent: BUCKET, resource: 'collection', id: `c${c}`, lm: FIRST + 2 + c };
}

/** Writes the export file (as `quire export` would) and the COPY files of the PostgreSQL floor. */
async function writeFiles(shape: Shape, dir: string): Promise<void> {
  const out = createWriteStream(join(dir, 'export.ndjson'));
  const objects = createWriteStream(join(dir, 'objects.copy'));
  const aces = createWriteStream(join(dir, 'aces.copy'));
  const put = async (stream: NodeJS.WritableStream, text: string) => {
    if (!stream.write(text)) await new Promise((resolve) => stream.once('drain', resolve));
  };
  await put(out, '{"format":"quire-export","version":1}\n');
  for (const { parent, resource, id, lm } of containers(shape)) {
    await put(out, `${JSON.stringify({ object: { id, last_modified: lm }, parent, resource })}\n`);
    await put(objects, `${parent}\t${resource}\t${id}\t${lm}\t{}\tf\n`);
  }
  let parent = '';
  for (const row of records(shape)) {
    if (row.parent !== parent && parent)
      await put(
        out,
        `${JSON.stringify({ scope: { parent, resource: 'record', timestamp: FIRST + shape.records } })}\n`,
      );
    parent = row.parent;
    const object = { ...row.data, id: row.id, last_modified: row.lastModified };
    const line = { object, parent: row.parent, permissions: { write: [row.writer] }, resource: 'record' };
    await put(out, `${JSON.stringify(line)}\n`);
    await put(objects, `${row.parent}\trecord\t${row.id}\t${row.lastModified}\t${JSON.stringify(row.data)}\tf\n`);
    await put(aces, `${row.parent}/records/${row.id}\twrite\t${row.writer}\n`);
  }
  for (const stream of [out, objects, aces]) await new Promise((resolve) => stream.end(resolve));
}

const BARE_TABLES = `
  CREATE TABLE bare_objects (
    parent_id text, resource_name text, id text, last_modified bigint, data jsonb, deleted boolean);
  CREATE TABLE bare_aces (object_id text, permission text, principal text);`;

async function postgresFloor(url: string, schema: string, dir: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    await client.query(BARE_TABLES);
    const started = performance.now();
    await client.query('BEGIN');
    for (const [table, file] of [
      ['bare_objects', 'objects.copy'],
      ['bare_aces', 'aces.copy'],
    ] as const)
      await pipeline(createReadStream(join(dir, file)), client.query(copyFrom(`COPY ${table} FROM STDIN`)));
    await client.query('COMMIT');
    return performance.now() - started;
  } finally {
    await client.end();
  }
}

function embeddedFloor(shape: Shape, path: string): number {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`CREATE TABLE bare_objects (parent_id TEXT, resource_name TEXT, id TEXT, last_modified INTEGER, data BLOB,
    deleted INTEGER) STRICT; CREATE TABLE bare_aces (object_id TEXT, permission TEXT, principal TEXT) STRICT`);
  const ROWS = 64;
  const objectSql = (n: number) =>
    `INSERT INTO bare_objects VALUES ${Array(n).fill('(?, ?, ?, ?, jsonb(?), 0)').join(', ')}`;
  const aceSql = (n: number) => `INSERT INTO bare_aces VALUES ${Array(n).fill('(?, ?, ?)').join(', ')}`;
  const full = { objects: db.prepare(objectSql(ROWS)), aces: db.prepare(aceSql(ROWS)) };
  const started = performance.now();
  db.exec('BEGIN');
  let objects: unknown[] = [];
  let aces: unknown[] = [];
  const flush = (force: boolean) => {
    if (objects.length >= ROWS * 5 || (force && objects.length))
      (objects.length === ROWS * 5 ? full.objects : db.prepare(objectSql(objects.length / 5))).run(objects);
    if (aces.length >= ROWS * 3 || (force && aces.length))
      (aces.length === ROWS * 3 ? full.aces : db.prepare(aceSql(aces.length / 3))).run(aces);
    if (objects.length >= ROWS * 5 || force) objects = [];
    if (aces.length >= ROWS * 3 || force) aces = [];
  };
  for (const { parent, resource, id, lm } of containers(shape)) {
    objects.push(parent, resource, id, lm, '{}');
    flush(false);
  }
  for (const row of records(shape)) {
    objects.push(row.parent, 'record', row.id, row.lastModified, JSON.stringify(row.data));
    aces.push(`${row.parent}/records/${row.id}`, 'write', row.writer);
    flush(false);
  }
  flush(true);
  db.exec('COMMIT');
  const ms = performance.now() - started;
  db.close();
  return ms;
}

/** The import, timed, with the time of each of its steps (reading and staging, then the store's end). */
async function timeImport(
  storage: Storage,
  dir: string,
): Promise<{ ms: number; cpuMs: number; objects: number; steps: string }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const steps: Array<[string, number]> = [['reading', started]];
  const { objects } = await importStore(storage, createReadStream(join(dir, 'export.ndjson')), {
    batchSize: 5000,
    replace: false,
    inputName: 'bench',
    onPhase: (phase) => steps.push([phase, performance.now()]),
  });
  const ended = performance.now();
  const cpuMs = cpuTime(process.cpuUsage(cpu));
  const times = steps.map(
    ([name, at], i) => `${name} ${formatNumber(((steps[i + 1]?.[1] ?? ended) - at) / 1000, 1)} s`,
  );
  return { ms: ended - started, cpuMs, objects, steps: times.join(', ') };
}

async function runBackend(backend: string, shape: Shape, dir: string, url: string): Promise<string> {
  const total = shape.records + shape.collections * shape.spread;
  let floorMs: number;
  let floorCpuMs: number;
  let result: { ms: number; cpuMs: number; objects: number; steps: string };
  if (backend === 'postgresql') {
    const schemas = [`quire_bench_import_${Date.now()}_a`, `quire_bench_import_${Date.now()}_b`];
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      for (const schema of schemas) await admin.query(`CREATE SCHEMA ${schema}`);
      const cpu = process.cpuUsage();
      floorMs = await postgresFloor(url, schemas[0]!, dir);
      floorCpuMs = cpuTime(process.cpuUsage(cpu));
      const storage = await createPostgresStorage({ url, schema: schemas[1]!, autoMigrate: true, keepIndexes: false });
      try {
        result = await timeImport(storage, dir);
      } finally {
        await storage.close();
      }
    } finally {
      for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    }
  } else {
    const cpu = process.cpuUsage();
    floorMs = embeddedFloor(shape, join(dir, 'floor.sqlite'));
    floorCpuMs = cpuTime(process.cpuUsage(cpu));
    const storage = await createSqliteStorage({ path: join(dir, 'import.sqlite'), keepIndexes: false });
    try {
      result = await timeImport(storage, dir);
    } finally {
      await storage.close();
    }
  }
  const seconds = (ms: number) => `${formatNumber(ms / 1000, 1)} s`;
  console.log(`${backend}: ${result.steps}`);
  // This process's CPU: the embedded store's all (SQLite runs in it), PostgreSQL's client side only.
  // Steadier than the times on a shared machine.
  console.log(
    `${backend}: CPU of this process: import ${seconds(result.cpuMs)}, floor ${seconds(floorCpuMs)}` +
      (backend === 'embedded' ? ` (×${formatNumber(result.cpuMs / floorCpuMs, 2)})` : ''),
  );
  const rate = formatNumber(total / (result.ms / 1000));
  const ratio = formatNumber(result.ms / floorMs, 2);
  return `| ${backend} | ${formatNumber(total)} | ${seconds(result.ms)} | ${rate} | ${seconds(floorMs)} | ×${ratio} |`;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2).filter((arg) => arg !== '--import');
  const { values } = parseArgs({
    args: argv[0] === '--' ? argv.slice(1) : argv,
    options: {
      records: { type: 'string', default: '1000000' },
      collections: { type: 'string', default: '10000' },
      spread: { type: 'string', default: '11' },
      backends: { type: 'string', default: 'postgresql,embedded' },
      url: {
        type: 'string',
        default:
          process.env.QUIRE_BENCH_URL ?? process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
      },
    },
  });
  const shape = {
    records: Number(values.records),
    collections: Number(values.collections),
    spread: Number(values.spread),
  };
  const dir = await mkdtemp(join(tmpdir(), 'quire-bench-import-'));
  try {
    await writeFiles(shape, dir);
    const size = (await stat(join(dir, 'export.ndjson'))).size;
    console.log(
      `quire import, ${new Date().toISOString()}; Node ${process.version}, ${cpus().length} CPUs; ` +
        `${formatNumber(shape.records)} records + ${formatNumber(shape.collections)} collections × ${shape.spread}, ` +
        `each with a write ACE (${formatNumber(size / 1e6)} MB of NDJSON)\n`,
    );
    const rows = [
      '| store | records | import | records/s | floor (bare, same rows) | import / floor |',
      '|---|---:|---:|---:|---:|---:|',
    ];
    for (const backend of values.backends.split(',').map((name) => name.trim())) {
      const problem = backend === 'postgresql' ? await postgresProblem(values.url) : null;
      if (problem) {
        console.log(`${backend}: skipped, ${problem}`);
        continue;
      }
      const row = await runBackend(backend, shape, dir, values.url);
      console.log(row);
      rows.push(row);
    }
    console.log(`\n${rows.join('\n')}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
