/**
 * Two deletions of one record at once, from two processes (PostgreSQL): the one that commits
 * second reads the record once the first releases it (a write reads its object locked), finds a
 * tombstone and answers 404 like any deletion of a missing record, not 500. The other process
 * is plain SQL held open mid-way.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import type { Storage } from '../src/storage/types.js';
import { basicAuth, testSettings } from './helpers/embedded-server.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable, testClient } from './helpers/postgres.js';

const alice = { ...basicAuth('alice'), 'content-type': 'application/json' };
const pgReason = await postgresUnavailable('concurrent-delete.test.ts');

describe.skipIf(pgReason !== undefined)('concurrent deletions of a record, on PostgreSQL', { timeout: 60_000 }, () => {
  const schema = newSchemaName();
  let storage: Storage;
  let app: FastifyInstance;

  beforeAll(async () => {
    storage = await createPostgresStorage({ url: PG_URL, schema, poolSize: 4, autoMigrate: true });
    app = await buildServer({ settings: testSettings(), storage, logger: false });
  });

  afterAll(async () => {
    await app?.close();
    await storage?.close();
    if (!pgReason) await dropSchema(schema);
  });

  it('the deletion that commits second gets 404, not 500', async () => {
    for (const url of ['/v1/buckets/b', '/v1/buckets/b/collections/c', '/v1/buckets/b/collections/c/records/r']) {
      expect((await app.inject({ method: 'PUT', url, headers: alice })).statusCode).toBe(201);
    }
    const other = testClient({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    const watcher = testClient({ connectionString: PG_URL });
    await other.connect();
    await watcher.connect();
    try {
      const otherPid = (await other.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      // The other process deletes r as the storage does: scope lock first, then the tombstone.
      await other.query('BEGIN');
      await other.query(
        'UPDATE timestamps SET last_modified = last_modified + 1 ' +
          `WHERE parent_id = '/buckets/b/collections/c' AND resource_name = 'record'`,
      );
      await other.query(
        `UPDATE objects SET deleted = TRUE, data = '{"deleted": true}' ` +
          `WHERE parent_id = '/buckets/b/collections/c' AND resource_name = 'record' AND id = 'r'`,
      );

      // Ours waits for the record the other holds.
      const deletion = app.inject({ method: 'DELETE', url: '/v1/buckets/b/collections/c/records/r', headers: alice });
      for (let waiting = 0; waiting === 0; ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const { rows } = await watcher.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
          [otherPid],
        );
        waiting = rows[0]!.n;
      }
      await other.query('COMMIT');

      const res = await deletion;
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ code: 404, errno: 110, details: { id: 'r', resource_name: 'record' } });
    } finally {
      await other.end();
      await watcher.end();
    }
  });
});
