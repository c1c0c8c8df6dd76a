/** bench/history.ts on PostgreSQL: the vacuum between rounds, and a long history preloaded (and read). */
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { READ_PRINCIPALS_FIELD } from '../../src/history/drainer.js';
import { AUTH } from './load.js';
import { median } from './stats.js';

/**
 * Autovacuum is off on the CI machines (and may be anywhere): between rounds the bench does
 * what it would do in a deployment, so that neither mode runs on a growing pile of dead rows.
 */
export async function vacuum(client: pg.Client, schemas: string[]): Promise<void> {
  for (const schema of schemas) {
    const tables = await client.query<{ name: string }>(
      'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1',
      [schema],
    );
    for (const { name } of tables.rows)
      await client.query(`VACUUM (ANALYZE) ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(name)}`);
  }
}

/**
 * Stores `count` history entries of the usual shape (a record created by the bench's user)
 * in the bucket's history, timestamped before now so that new entries come after them, with
 * random ids as the drainer gives them.
 */
export async function preloadHistory(client: pg.Client, schema: string, count: number): Promise<void> {
  const bucket = '/buckets/bench';
  const principal = `basicauth:${'f'.repeat(64)}`;
  await client.query(`SET search_path = ${client.escapeIdentifier(schema)}`);
  // Below the entries the server's set-up already wrote: a history's timestamps are unique.
  const { rows: oldest } = await client.query<{ min: string | null }>(
    'SELECT min(last_modified)::text AS min FROM history WHERE parent_id = $1',
    [bucket],
  );
  const first = Math.min(Date.now(), Number(oldest[0]?.min ?? Date.now())) - count - 1;
  await client.query(
    `INSERT INTO history (parent_id, resource_name, id, last_modified, data, deleted)
     SELECT $1, 'history', gen_random_uuid()::text, $2::bigint + record.n, jsonb_build_object(
       'action', 'create', 'resource_name', 'record',
       'uri', $1 || '/collections/c' || record.n % 20 || '/records/' || record.id,
       'user_id', $3::text, 'date', '2026-11-22T10:00:00.000000+00:00',
       'collection_id', 'c' || record.n % 20, 'record_id', record.id,
       'target', jsonb_build_object(
         'data', jsonb_build_object('id', record.id, 'last_modified', $2::bigint + record.n, 'title', 'x', 'n', 1),
         'permissions', jsonb_build_object('write', jsonb_build_array($3::text))),
       $5::text, jsonb_build_array($3::text)), FALSE
     FROM (SELECT n, gen_random_uuid()::text AS id FROM generate_series(1, $4::int) AS n) AS record`,
    [bucket, first, principal, count, READ_PRINCIPALS_FIELD],
  );
  await client.query(
    `INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES ($1, 'history', $2)
     ON CONFLICT (parent_id, resource_name)
     DO UPDATE SET last_modified = GREATEST(timestamps.last_modified, EXCLUDED.last_modified)`,
    [bucket, first + count],
  );
  await client.query('RESET search_path');
  // Settled, as months-old rows are: visibility map and hint bits set, dirty pages on disk.
  await client.query(`VACUUM (ANALYZE) ${client.escapeIdentifier(schema)}.history`);
  await client.query('CHECKPOINT');
  const { rows } = await client.query<{ table: string; indexes: string }>(
    `SELECT pg_size_pretty(pg_table_size($1::regclass)) AS table,
            pg_size_pretty(pg_indexes_size($1::regclass)) AS indexes`,
    [`${schema}.history`],
  );
  console.log(`history preloaded: ${count} entries; history table ${rows[0]!.table}, its index ${rows[0]!.indexes}`);
}

/** Median latency of history reads on the server with history on (a long history must not slow them). */
export async function historyReadLatencies(port: number): Promise<void> {
  const reads = {
    'first page (newest 10)': '_limit=10',
    'oldest 10': '_limit=10&_sort=last_modified',
    'filtered (resource_name=record, 10)': '_limit=10&resource_name=record',
    'count (HEAD)': '',
  };
  for (const [label, query] of Object.entries(reads)) {
    const method = label.startsWith('count') ? 'HEAD' : 'GET';
    const times: number[] = [];
    for (let i = 0; i < 35; i++) {
      const started = performance.now();
      const response = await fetch(`http://127.0.0.1:${port}/v1/buckets/bench/history?${query}`, {
        method,
        headers: { authorization: AUTH },
      });
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`${label}: HTTP ${response.status}`);
      if (i >= 5) times.push(performance.now() - started); // the first ones warm up
    }
    console.log(`history read, ${label}: ${median(times).toFixed(2)} ms (median of ${times.length})`);
  }
}
