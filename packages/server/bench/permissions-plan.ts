/**
 * The plans of `permissions.entries` on PostgreSQL (not a test): a store where one principal
 * (an owner) holds most of the permission rows, a reader with a few hundred entries beside it,
 * and a walker with many, whose listing is read page after page.
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/permissions-plan.ts \
 *     [--rows 200000] [--entries 200] [--walk 20000] [--page 1000] [--walks 7] [--url postgresql://…] [--keep]
 *     [--no-analyze] [--vacuum]
 *
 * The same store is measured in each state the planner may find it in: right after the bulk load
 * (no statistics, no visibility map: autovacuum is off for the bench's table, so that it cannot
 * change the state mid-run), then after ANALYZE (left out by `--no-analyze`), then after VACUUM
 * (`--vacuum`). In each: EXPLAIN ANALYZE of the reader's first page and of a page in the middle of
 * the walker's listing (the storage's own statements, captured from `listPermissionEntries`),
 * the reader's page (median) and the walker's whole walk (median of `--walks`), each beside its
 * target (issue 39 item 5: 200 entries within 10 ms, 20,000 within 200 ms, 1M rows).
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
    walks: { type: 'string', default: '7' },
    url: { type: 'string', default: process.env.QUIRE_BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    keep: { type: 'boolean', default: false },
    /** Only the state right after the bulk load (no statistics of what was loaded). */
    'no-analyze': { type: 'boolean', default: false },
    /** Also the state after VACUUM (the visibility map set: index-only scans without heap fetches). */
    vacuum: { type: 'boolean', default: false },
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

/** Times of `samples` calls after a first one (warming the cache), sorted. */
async function timed(fn: () => Promise<unknown>, samples: number): Promise<number[]> {
  await fn();
  const durations: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await fn();
    durations.push(performance.now() - start);
  }
  return durations.sort((a, b) => a - b);
}

const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)]!;
const verdict = (ms: number, target: number) =>
  `${ms.toFixed(1)} ms (target ${target} ms: ${ms <= target ? 'met' : 'NOT met'})`;

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
  console.log(`  loaded in ${((performance.now() - start) / 1000).toFixed(1)} s`);
}

const storage = await createPostgresStorage({ url: values.url, schema, autoMigrate: true, poolSize: 2 });
const client = new pg.Client({ connectionString: values.url, options: `-c search_path=${schema}` });
client.on('error', () => {});
await client.connect();
const reader = ['account:reader', 'system.Everyone', 'system.Authenticated'];
const walker = ['account:walker', 'system.Everyone', 'system.Authenticated'];
const page = Number(values.page);
const entries = (query: PermissionEntriesQuery) =>
  storage.read((session) => session.permissions.entries(query)) as Promise<PermissionEntry[]>;

/** The walker's every page, in order; the number of entries and pages. */
async function walk(): Promise<{ seen: number; pages: number }> {
  let pages = 1;
  let seen = 0;
  for (let after: string | undefined; ; pages++) {
    const got = await entries(queryOf(walker, page, after));
    seen += Math.min(got.length, page);
    if (got.length <= page) return { seen, pages };
    after = got[page - 1]!.uri;
  }
}

async function measure(state: string): Promise<void> {
  console.log(`\n${state}:`);
  await explain(client, "the reader's first page (10,000)", queryOf(reader, 10000));
  const all = await entries(queryOf(walker, 1000000));
  const middle = all[Math.floor(all.length / 2)]!.uri;
  await explain(client, `a page of ${page} in the middle of the walker's ${all.length} entries`, {
    ...queryOf(walker, page, middle),
  });
  const readerMs = await timed(() => entries(queryOf(reader, 10000)), 7);
  console.log(`\n  reader's first page: median ${verdict(median(readerMs), 10)}`);
  const { seen, pages } = await walk();
  // Beside each walk's time, the Node CPU it took (steadier on a shared machine: no waiting counted).
  const cpu: number[] = [];
  const walks = await timed(async () => {
    const start = process.cpuUsage();
    await walk();
    const used = process.cpuUsage(start);
    cpu.push((used.user + used.system) / 1000);
  }, Number(values.walks));
  console.log(
    `  walker: ${seen} entries in ${pages} pages of ${page}: ` +
      `median of ${walks.length} walks ${verdict(median(walks), 200)}` +
      ` (${walks.map((ms) => ms.toFixed(0)).join(', ')}); ` +
      `Node CPU per walk median ${median(cpu.sort((x, y) => x - y)).toFixed(0)} ms`,
  );
}

try {
  console.log(`permissions.entries plans: PostgreSQL, ${rows.toLocaleString('en')} rows of account:owner (${schema})`);
  // The states below are the bench's own: autovacuum would analyze (or vacuum) the table mid-run.
  await client.query('ALTER TABLE access_control_entries SET (autovacuum_enabled = false)');
  await load(client);
  await measure('right after the bulk load (no statistics, no visibility map)');
  if (!values['no-analyze']) {
    await client.query('ANALYZE access_control_entries');
    await measure('after ANALYZE');
  }
  if (values.vacuum) {
    await client.query('VACUUM (ANALYZE) access_control_entries');
    await measure('after VACUUM');
  }
} finally {
  await storage.close();
  if (values.keep) console.log(`  kept schema ${schema}`);
  else await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}
