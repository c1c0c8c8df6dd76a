/**
 * The plans of a filter on a declared field in a mid-size collection beside a big one (issue
 * 39): the index's statistics are the whole table's, dominated by the big collection.
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/declared-plan.ts \
 *     [--big 1000000] [--mid 100000] [--url postgresql://…] [--keep]
 *
 * Loads both collections in SQL (`n` a permutation of 0..size-1), builds the declared index on
 * `n`, ANALYZE, then prints EXPLAIN ANALYZE of the storage's own statements for `gt_n` keeping
 * 10 records of the mid collection, and the listing's median time.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import type { ListOptions, Scope } from '../src/storage/types.js';

const { values } = parseArgs({
  options: {
    big: { type: 'string', default: '1000000' },
    mid: { type: 'string', default: '100000' },
    url: { type: 'string', default: process.env.QUIRE_BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    schema: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const schema = values.schema ?? `quire_bench_${randomBytes(4).toString('hex')}`;
const client = new pg.Client({ connectionString: values.url, options: `-c search_path=${schema}` });
client.on('error', () => {});

async function load(parentId: string, size: number): Promise<void> {
  // n: a permutation of 0..size-1 unrelated to the order of creation (a prime stride).
  await client.query(
    `INSERT INTO objects (parent_id, resource_name, id, last_modified, data)
     SELECT $1, 'record', 'r' || i, 1000 + i,
       jsonb_build_object('n', (i::bigint * 7919) % $2::bigint, 'm', (i::bigint * 104729) % $2::bigint)
     FROM generate_series(0, $2::int - 1) AS i`,
    [parentId, size],
  );
  await client.query(
    `INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES ($1, 'record', 1000 + $2::bigint)
     ON CONFLICT DO NOTHING`,
    [parentId, size],
  );
}

/**
 * A selective filter on a field without a declared index (`m`) in the big collection,
 * beside the bare statement.
 */
async function unindexed(size: number): Promise<void> {
  const scope: Scope = { parentId: '/buckets/b/collections/big', resourceName: 'record' };
  const value = size - 11;
  const median = async (fn: () => Promise<unknown>) => {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const start = performance.now();
      await fn();
      times.push(performance.now() - start);
    }
    return times.sort((a, b) => a - b)[1]!.toFixed(0);
  };
  const ours = await median(() =>
    storage.read((session) =>
      session.objects.list(scope, {
        filters: [{ field: 'm', operator: 'gt', value }],
        sorting: [{ field: 'last_modified', direction: -1 }],
        limit: 101,
      }),
    ),
  );
  const bare = await median(() =>
    client.query(
      `SELECT id, last_modified, data FROM objects WHERE parent_id = $1 AND resource_name = 'record' AND NOT deleted
       AND data -> 'm' > $2::jsonb ORDER BY last_modified DESC LIMIT 101`,
      [scope.parentId, JSON.stringify(value)],
    ),
  );
  console.log(`gt_m=${value} (no declared index) on the big collection: Quire ${ours} ms, bare statement ${bare} ms`);
}

const storage = await createPostgresStorage({
  url: values.url,
  schema,
  autoMigrate: true,
  poolSize: 2,
  keepIndexes: false,
});
await client.connect();
try {
  const big = Number(values.big);
  const mid = Number(values.mid);
  const loaded = (await client.query(`SELECT count(*)::int AS n FROM objects`)).rows[0].n as number;
  if (loaded === 0) {
    const start = performance.now();
    await load('/buckets/b/collections/big', big);
    await load('/buckets/b/collections/mid', mid);
    await client.query('ANALYZE objects');
    console.log(`loaded ${big} + ${mid} records in ${((performance.now() - start) / 1000).toFixed(1)} s (${schema})`);
  }
  await client.query(
    `INSERT INTO objects (parent_id, resource_name, id, last_modified, data) VALUES
     ('/buckets/b', 'collection', 'mid', 1, '{"indexes": ["n"]}'),
     ('/buckets/b', 'collection', 'big', 1, '{"indexes": ["n"]}')
     ON CONFLICT DO NOTHING`,
  );
  await client.query(
    `INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES ('/buckets/b', 'collection', 1)
     ON CONFLICT DO NOTHING`,
  );
  console.log('indexed:', [...(await storage.updateIndexes())]);
  const scope: Scope = { parentId: '/buckets/b/collections/mid', resourceName: 'record' };
  const options: ListOptions = {
    filters: [{ field: 'n', operator: 'gt', value: mid - 11 }],
    sorting: [{ field: 'last_modified', direction: -1 }],
    limit: 101,
  };
  const times: number[] = [];
  let found = 0;
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    found = (await storage.read((session) => session.objects.list(scope, options))).length;
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  console.log(`gt_n=${mid - 11} on the mid collection: ${found} records, median ${times[2]!.toFixed(1)} ms`);
  await unindexed(Number(values.big));
} finally {
  await storage.close();
  if (!values.keep) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  else console.log(`kept ${schema}`);
  await client.end();
}
