/**
 * Plans that do not depend on fresh statistics (issue 36 item 5), on PostgreSQL: 3,000 new
 * collections that nobody analysed yet (autovacuum off for this schema's tables, as production
 * databases analyse late after a burst of growth), 1,000 in each of 3 buckets, and a collection
 * of 5,000 records. Issue 36 measured a 500-entry page of the monitor at 12 s (12 ms after
 * ANALYZE), a fresh stream's first event at 16.7 s; here, before the fix: 2.4 s and 1.2 s (best of
 * 5), `_since` 0.9 s, `bucket=` 2.6 s. The monitor's walk joined every records scope to its
 * collection before cutting the page, each lookup through the index (parent_id, resource_name,
 * last_modified) filtering the bucket's collections; both are planner-proof now
 * (sql/collection-timestamps.ts, object-rows.ts `byKey`). Each read is timed best and median of a
 * few, never analysed then analysed (the machine is shared: see the assertion).
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/app.js';
import { createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { postgresSkipReason } from '../helpers/backends.js';
import { basicAuth, testSettings } from '../helpers/embedded-server.js';
import { dropSchema, newSchemaName, PG_URL, testClient } from '../helpers/postgres.js';
import { openEventStream } from '../helpers/sse.js';
import { listen } from './protocol.js';

const BUCKETS = 3;
const PER_BUCKET = 1_000;
const BIG = 5_000;
const MONITOR = '/buckets/monitor/collections/changes/records';
const PAGE_MS = 50;
const alice = basicAuth('alice');
const agent = new Agent({ connections: 8 });

/**
 * The best of `runs` timings of `work`, in ms, and their median: the machine is shared (a load of
 * 19 on 2 cores was seen beside these tests), which can slow any one request tenfold, so the
 * best run is asserted; a plan that walks what it should not is slow every time.
 */
async function timed(runs: number, work: () => Promise<unknown>): Promise<{ best: number; median: number }> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await work();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { best: Math.round(times[0]!), median: Math.round(times[Math.floor(runs / 2)]!) };
}

describe.skipIf(postgresSkipReason !== undefined)(
  'plans without fresh statistics [postgresql]',
  { timeout: 300_000 },
  () => {
    const schema = newSchemaName();
    let storage: Storage;
    let app: FastifyInstance;
    let base: string;

    async function admin<T>(fn: (client: ReturnType<typeof testClient>) => Promise<T>): Promise<T> {
      const client = testClient(PG_URL);
      await client.connect();
      try {
        await client.query(`SET search_path = ${schema}`);
        return await fn(client);
      } finally {
        await client.end();
      }
    }

    /** The schema's tables. */
    async function tables(client: ReturnType<typeof testClient>): Promise<string[]> {
      const { rows } = await client.query<{ name: string }>(
        'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1',
        [schema],
      );
      return rows.map(({ name }) => name);
    }

    async function get(path: string): Promise<{ status: number; body: { data: unknown[] } }> {
      const response = await request(`${base}${path}`, { headers: alice, dispatcher: agent });
      return { status: response.statusCode, body: (await response.body.json()) as { data: unknown[] } };
    }

    beforeAll(async () => {
      storage = await createPostgresStorage({ url: PG_URL, schema, autoMigrate: true, poolSize: 8 });
      // Nobody analyses these tables: the planner sees them as it would right after a burst.
      await admin(async (client) => {
        for (const name of await tables(client))
          await client.query(`ALTER TABLE "${name}" SET (autovacuum_enabled = false)`);
      });
      app = await buildServer({ settings: testSettings({ changes_enabled: true }), storage, logger: false });
      for (let b = 0; b < BUCKETS; b++) {
        expect((await app.inject({ method: 'PUT', url: `/v1/buckets/b${b}`, headers: alice })).statusCode).toBe(201);
        await storage.transaction((session) =>
          session.objects.insertMany(
            { resourceName: 'collection', parentId: `/buckets/b${b}` },
            Array.from({ length: PER_BUCKET }, (_, c) => ({ id: `c${c}`, data: {} })),
          ),
        );
        // A transaction each: collections changed one after the other, each at a timestamp of its own.
        for (let c = 0; c < PER_BUCKET; c++) {
          await storage.transaction((session) =>
            session.objects.insertMany({ resourceName: 'record', parentId: `/buckets/b${b}/collections/c${c}` }, [
              { id: 'r', data: { n: c } },
            ]),
          );
        }
      }
      // One collection grown by a burst too: its records are looked up by key.
      await storage.transaction((session) =>
        session.objects.insertMany(
          { resourceName: 'record', parentId: '/buckets/b0/collections/big' },
          Array.from({ length: BIG }, (_, i) => ({ id: `r${i}`, data: { n: i } })),
        ),
      );
      base = `http://127.0.0.1:${await listen(app)}/v1`;
    }, 300_000);

    afterAll(async () => {
      await app?.close();
      await storage?.close();
      if (process.env.QUIRE_TEST_KEEP_SCHEMA) console.log(`[fresh statistics] schema kept: ${schema}`);
      else await dropSchema(schema);
    });

    it('reads the monitor, _since, a stream and a record by key fast, however stale the statistics', async () => {
      const everAnalysed = await admin(async (client) => {
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_user_tables
          WHERE schemaname = $1 AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)`,
          [schema],
        );
        return rows[0]!.n;
      });
      expect(everAnalysed).toBe(0);
      const page = await get(`${MONITOR}?_limit=500`);
      expect(page.status).toBe(200);
      expect(page.body.data).toHaveLength(500);
      const since = (page.body.data as Array<{ last_modified: number }>).at(-1)!.last_modified;
      const sinceBig = Date.now() - 1;
      const measure = async () => ({
        page: await timed(5, () => get(`${MONITOR}?_limit=500&_sort=-last_modified`)),
        unsorted: await timed(5, () => get(`${MONITOR}?_limit=500`)),
        since: await timed(5, () => get(`${MONITOR}?_limit=500&_since=${since}`)),
        bucket: await timed(5, () => get(`${MONITOR}?_limit=500&bucket=b1`)),
        record: await timed(5, () => get(`/buckets/b0/collections/big/records/r${BIG - 7}`)),
        write: await timed(5, () =>
          request(`${base}/buckets/b0/collections/big/records/r${BIG - 9}`, {
            method: 'PUT',
            headers: { ...alice, 'content-type': 'application/json' },
            body: JSON.stringify({ data: { n: 1 } }),
            dispatcher: agent,
          }).then((response) => response.body.text()),
        ),
        records: await timed(5, () => get(`/buckets/b0/collections/big/records?_since=${sinceBig}&_limit=10`)),
        stream: await timed(3, async () => {
          const stream = await openEventStream(`${base}${MONITOR}`, alice);
          try {
            await stream.next();
          } finally {
            await stream.close();
          }
        }),
      });
      await measure(); // warm: the server's code and caches, not the plans (generic ones are replanned after ANALYZE)
      const fresh = await measure();
      await admin(async (client) => {
        for (const name of await tables(client)) await client.query(`ANALYZE "${name}"`);
      });
      const analysed = await measure();
      console.log(
        `[fresh statistics] ${BUCKETS * PER_BUCKET} collections, best/median of a few (ms),`,
        `never analysed: ${JSON.stringify(fresh)}; after ANALYZE: ${JSON.stringify(analysed)}`,
      );
      // As fast as with fresh statistics (the load of a shared machine moves both alike; PAGE_MS
      // where that is more), and never far from PAGE_MS (before: 0.9 to 3.1 s).
      for (const [read, { best, median }] of Object.entries(fresh)) {
        expect(best, read).toBeLessThanOrEqual(Math.max(PAGE_MS, 3 * analysed[read as keyof typeof analysed].best));
        expect(median, read).toBeLessThanOrEqual(4 * PAGE_MS);
      }
    });
  },
);
