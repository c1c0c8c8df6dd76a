/**
 * The plans of `permissions.entries` on PostgreSQL (not a test): a store where one principal
 * (an owner) holds most of the permission rows, a reader with a few hundred entries beside it,
 * and a walker with many, whose listing is read page after page.
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/permissions-plan.ts \
 *     [--rows 200000] [--entries 200] [--walk 20000] [--page 1000] [--url postgresql://…] [--keep] [--no-analyze]
 *
 * Prints EXPLAIN ANALYZE of the reader's first page and of a page in the middle of the walker's
 * listing, then medians of the reader's page and the time to walk the walker's every page.
 * The statement is the storage's own (captured from `listPermissionEntries`).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { IMPLIED_PERMISSIONS } from '../src/permission/authorizer.js';
import { listPermissionEntries } from '../src/storage/sql/permission-entries.js';
import type { SqlSessionState } from '../src/storage/sql/session-state.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import type { PermissionEntriesQuery, PermissionEntry } from '../src/storage/types.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '200000' },
    entries: { type: 'string', default: '200' },
    walk: { type: 'string', default: '20000' },
    page: { type: 'string', default: '1000' },
    url: { type: 'string', default: process.env.QUIRE_BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    keep: { type: 'boolean', default: false },
    /** Leave the planner without statistics of what was loaded (as right after a bulk load). */
    'no-analyze': { type: 'boolean', default: false },
  },
});
const rows = Number(values.rows);
const schema = `quire_bench_${randomBytes(4).toString('hex')}`;
const RECORD = `'/buckets/b/collections/c/records/r' || i`;

/** The statement `entries` sends for `query`, captured by a session that only records it. */
async function statementOf(query: PermissionEntriesQuery): Promise<{ text: string; params: unknown[] }> {
  let captured: { text: string; params: unknown[] } | undefined;
  const recorder = {
    query: async (text: string, params: unknown[]) => {
      captured = { text, params };
      return [];
    },
  } as unknown as SqlSessionState;
  await listPermissionEntries(recorder, query);
  return captured!;
}

function queryOf(principals: string[], limit: number, after?: string): PermissionEntriesQuery {
  return {
    principals,
    globalGrants: [],
    implied: IMPLIED_PERMISSIONS,
    extraEntries: [],
    sorting: [{ field: 'uri', direction: -1 }],
    limit: limit + 1,
    ...(after === undefined ? {} : { after: { uri: after } }),
  };
}

async function explain(client: pg.Client, label: string, query: PermissionEntriesQuery): Promise<void> {
  const { text, params } = await statementOf(query);
  const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${text}`, params);
  console.log(`\n  EXPLAIN ANALYZE, ${label}:`);
  for (const row of plan.rows) console.log(`    ${row['QUERY PLAN']}`);
}

async function median(fn: () => Promise<unknown>, samples = 7): Promise<number> {
  await fn();
  const durations: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await fn();
    durations.push(performance.now() - start);
  }
  return durations.sort((a, b) => a - b)[Math.floor(samples / 2)]!;
}

async function load(client: pg.Client): Promise<void> {
  const start = performance.now();
  const every = (n: number) => Math.max(1, Math.floor(rows / n));
  await client.query(
    `INSERT INTO access_control_entries (object_id, permission, principal)
     SELECT ${RECORD}, 'write', 'account:owner' FROM generate_series(1, $1::int) AS i
     UNION ALL SELECT ${RECORD}, 'read', 'account:reader' FROM generate_series(1, $1::int, $2::int) AS i
     UNION ALL SELECT ${RECORD}, 'read', 'account:walker' FROM generate_series(1, $1::int, $3::int) AS i
     UNION ALL SELECT ${RECORD}, 'write', 'account:walker' FROM generate_series(1, $1::int, $3::int * 2) AS i`,
    [rows, every(Number(values.entries)), every(Number(values.walk))],
  );
  if (!values['no-analyze']) await client.query('ANALYZE access_control_entries');
  console.log(`  loaded in ${((performance.now() - start) / 1000).toFixed(1)} s`);
}

const storage = await createPostgresStorage({ url: values.url, schema, autoMigrate: true, poolSize: 2 });
const client = new pg.Client({ connectionString: values.url, options: `-c search_path=${schema}` });
client.on('error', () => {});
await client.connect();
try {
  console.log(`permissions.entries plans: PostgreSQL, ${rows.toLocaleString('en')} rows of account:owner (${schema})`);
  await load(client);
  const reader = ['account:reader', 'system.Everyone', 'system.Authenticated'];
  const walker = ['account:walker', 'system.Everyone', 'system.Authenticated'];
  const page = Number(values.page);
  const entries = (query: PermissionEntriesQuery) =>
    storage.read((session) => session.permissions.entries(query)) as Promise<PermissionEntry[]>;
  await explain(client, "the reader's first page (10,000)", queryOf(reader, 10000));
  const all = await entries(queryOf(walker, 1000000));
  const middle = all[Math.floor(all.length / 2)]!.uri;
  await explain(client, `a page of ${page} in the middle of the walker's ${all.length} entries`, {
    ...queryOf(walker, page, middle),
  });
  const readerMs = await median(() => entries(queryOf(reader, 10000)));
  console.log(`\n  reader's first page: median ${readerMs.toFixed(1)} ms (target 10 ms)`);
  const walkStart = performance.now();
  let pages = 0;
  let seen = 0;
  for (let after: string | undefined; ; pages++) {
    const got = await entries(queryOf(walker, page, after));
    seen += Math.min(got.length, page);
    if (got.length <= page) break;
    after = got[page - 1]!.uri;
  }
  const walkMs = performance.now() - walkStart;
  // Issue 39 item 5: 20,000 entries within 200 ms, 200 within 10 ms (a store of 1M rows).
  console.log(`  walker: ${seen} entries in ${pages + 1} pages of ${page}: ${walkMs.toFixed(0)} ms (target 200 ms)`);
} finally {
  await storage.close();
  if (values.keep) console.log(`  kept schema ${schema}`);
  else await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}
