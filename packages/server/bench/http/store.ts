/**
 * bench/http.ts's store: N records loaded in the exact shape the storage writes them (SQL on
 * PostgreSQL, the storage's own API on the embedded store), and removed at the end.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { buildServer } from '../../src/app.js';
import { EMBEDDED_FILE } from '../../src/storage/factory.js';
import { createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { AUTH, benchSettings, formatNumber, recordId } from '../support.js';

export type Backend = 'postgresql' | 'embedded';

/** What the child needs to open the same store the parent loaded. */
export interface ChildConfig {
  backend: Backend;
  url: string;
  schema: string;
  dataDir: string;
}

const BUCKET = 'bench';
const COLLECTION = 'items';
export const COLLECTION_URI = `/buckets/${BUCKET}/collections/${COLLECTION}`;
export const RECORDS_PATH = `/v1${COLLECTION_URI}/records`;
/** Rows inserted per INSERT statement. */
const CHUNK = 250_000;

/** recordId(i) of bench/support.ts, in SQL. */
const SQL_RECORD_ID = `md5('bench-' || i)::uuid::text`;

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

/**
 * Creates the schema, then the bucket and collection through the API (in process); returns the
 * author's user id.
 */
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
  const [now] = (await sql.query('SELECT (floor(extract(epoch FROM clock_timestamp()) * 1000))::bigint AS now')).rows;
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

async function openSql(config: ChildConfig): Promise<SqlClient> {
  const client = new pg.Client({ connectionString: config.url, options: `-c search_path=${config.schema}` });
  client.on('error', () => {}); // PostgreSQL ended the session: the next query fails, no unhandled 'error' event
  await client.connect();
  return { query: (text, params) => client.query(text, params), close: () => client.end() };
}

export async function cleanUp(config: ChildConfig): Promise<void> {
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

/**
 * The schema, the bucket and collection (through the API, in process), then N records (SQL on
 * PostgreSQL, the storage's API on the embedded store); prints how long it took.
 */
export async function loadStore(config: ChildConfig, total: number): Promise<void> {
  const started = performance.now();
  if (config.backend === 'postgresql') {
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
}
