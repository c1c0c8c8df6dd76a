import { performance } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { BackendError, MigrationRequiredError } from '../errors.js';
import { describeStorage, randomScope } from '../testing.js';
import { createPgDriver } from './drivers/pg.js';
import { describeConcurrency } from './concurrency-testing.js';
import { describeDriver } from './drivers/testing.js';
import { checkMigrations, loadMigrations, migrate } from './migrate.js';
import { createPostgresStorage, type SqlStorage } from './sql-storage.js';
import {
  dropSchema,
  newSchemaName,
  PG_URL as url,
  postgresUnavailable,
  runAsAdmin,
} from '../../../test/helpers/postgres.js';

const reason = await postgresUnavailable('pg.test.ts');

if (reason !== undefined) {
  // postgresUnavailable threw where CI requires PostgreSQL (QUIRE_TEST_REQUIRE_PG) and printed why.
  describe.skip('postgresql (unreachable)', () => {
    it('needs a PostgreSQL server', () => {});
  });
} else {
  const schema = newSchemaName();
  const extraSchemas: string[] = [];
  const opened: SqlStorage[] = [];

  /** A storage on the file's schema; each call is a separate pool, like a separate process. */
  async function open(poolSize = 4): Promise<SqlStorage> {
    // Indexes built plainly: CONCURRENTLY waits for every older transaction of the shared test database.
    const storage = await createPostgresStorage({
      url,
      schema,
      poolSize,
      autoMigrate: true,
      concurrentIndexBuilds: false,
    });
    opened.push(storage);
    return storage;
  }

  let shared: Promise<SqlStorage> | undefined;
  const storage = () => (shared ??= open(10));

  afterAll(async () => {
    await Promise.all(opened.map((each) => each.close()));
    for (const name of [schema, ...extraSchemas]) await dropSchema(name);
  });

  describeStorage('postgresql', storage);
  describeDriver('postgresql', async () => {
    await storage(); // creates the schema
    return createPgDriver({ url, schema, poolSize: 2 });
  });

  describe('postgresql migrations', () => {
    it('two processes migrating at once apply each migration once, and migrating again does nothing', async () => {
      const fresh = newSchemaName();
      extraSchemas.push(fresh);
      await runAsAdmin(`CREATE SCHEMA ${fresh}`);
      const drivers = [createPgDriver({ url, schema: fresh }), createPgDriver({ url, schema: fresh })];
      try {
        await expect(checkMigrations(drivers[0]!)).rejects.toThrow(MigrationRequiredError);
        await expect(checkMigrations(drivers[0]!)).rejects.toThrow(/quire migrate/);
        const applied = await Promise.all(drivers.map((driver) => migrate(driver)));
        // Each migration applied exactly once, by one of the two.
        expect(applied.flat().sort()).toEqual((await loadMigrations()).map((migration) => migration.name));
        expect(await migrate(drivers[0]!)).toEqual([]);
        await expect(checkMigrations(drivers[1]!)).resolves.toBeUndefined();
      } finally {
        await Promise.all(drivers.map((driver) => driver.close()));
      }
    });

    it('refuses to start on a schema that is not migrated unless autoMigrate is set', async () => {
      const fresh = newSchemaName();
      extraSchemas.push(fresh);
      await runAsAdmin(`CREATE SCHEMA ${fresh}`);
      await expect(createPostgresStorage({ url, schema: fresh })).rejects.toThrow(MigrationRequiredError);
      const migrated = await createPostgresStorage({ url, schema: fresh, autoMigrate: true });
      await migrated.close();
      const started = await createPostgresStorage({ url, schema: fresh });
      expect(await started.ping()).toBe(true);
      await started.close();
    });

    it('reports an unreachable server as a BackendError', async () => {
      await expect(createPostgresStorage({ url: 'postgresql://postgres@127.0.0.1:1/none' })).rejects.toBeInstanceOf(
        BackendError,
      );
    });
  });

  // Hang guards: two processes' transactions and notifications on a loaded 2-core CI take seconds.
  describe('postgresql shared read cache, across processes', { timeout: 30_000 }, () => {
    const bucket = { resourceName: 'bucket', parentId: '' };

    /** Polls `read` until it gives `expected` (the other process's notification arrived), at most 15 s. */
    async function eventually<T>(read: () => Promise<T>, expected: T): Promise<void> {
      const deadline = performance.now() + 15_000;
      for (;;) {
        const value = await read();
        if (performance.now() > deadline || JSON.stringify(value) === JSON.stringify(expected))
          return expect(value).toEqual(expected);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }

    /** A storage whose notification channel is up (its cache answers from then on). */
    async function listening(): Promise<SqlStorage> {
      const before = (await listenerPids()).length;
      const store = await open(2);
      await eventually(async () => (await listenerPids()).length > before, true);
      return store;
    }

    async function listenerPids(): Promise<number[]> {
      const admin = createPgDriver({ url, poolSize: 1 });
      try {
        const rows = await admin.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN "quire_cache"'`,
        );
        return rows.map((row) => row.pid);
      } finally {
        await admin.close();
      }
    }

    it('a change committed by one process reaches what the other has cached: objects, ACLs and groups', async () => {
      const [a, b] = [await listening(), await listening()];
      const id = `cached-${randomScope().parentId.split('/')[2]}`;
      const uri = `/buckets/${id}`;
      await a.transaction((session) => session.objects.create(bucket, id, { v: 1 }));
      await a.transaction((session) => session.permissions.set(uri, { write: ['alice'] }));
      // Read by b: now cached there.
      expect(await b.read((session) => session.objects.get(bucket, id))).toMatchObject({ v: 1 });
      expect((await b.read((session) => session.permissions.get([uri]))).get(uri)).toEqual({ write: ['alice'] });
      expect(await b.read((session) => session.permissions.groupsOf(['carol']))).toEqual([]);
      // Changed by a: b sees it once the notification arrives, never the old value for long.
      await a.transaction((session) => session.objects.update(bucket, id, { v: 2 }));
      await a.transaction((session) => session.permissions.set(uri, { write: ['bob'] }));
      await a.transaction((session) => session.permissions.setGroupMembers(`${uri}/groups/g`, ['carol']));
      await eventually(async () => (await b.read((session) => session.objects.get(bucket, id)))?.v, 2);
      await eventually(async () => (await b.read((session) => session.permissions.get([uri]))).get(uri), {
        write: ['bob'],
      });
      await eventually(() => b.read((session) => session.permissions.groupsOf(['carol'])), [`${uri}/groups/g`]);
      // Nothing is announced for a transaction that rolled back.
      await a
        .transaction(async (session) => {
          await session.objects.update(bucket, id, { v: 3 });
          throw new Error('rolled back');
        })
        .catch(() => {});
      expect((await b.read((session) => session.objects.get(bucket, id)))?.v).toBe(2);
    });

    it('without its notification channel a process reads the database, and caches again once it is back', async () => {
      const [a, b] = [await listening(), await listening()];
      const id = `dropped-${randomScope().parentId.split('/')[2]}`;
      await a.transaction((session) => session.objects.create(bucket, id, { v: 1 }));
      expect(await b.read((session) => session.objects.get(bucket, id))).toMatchObject({ v: 1 });
      // Every channel connection is cut (as a database restart would): changes made meanwhile
      // cannot be announced, so no process may answer from what it cached before.
      await runAsAdmin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN "quire_cache"'`);
      await a.transaction((session) => session.objects.update(bucket, id, { v: 2 }));
      await eventually(async () => (await b.read((session) => session.objects.get(bucket, id)))?.v, 2);
      // The channels come back by themselves, and the caches with them.
      await eventually(async () => (await listenerPids()).length >= 2, true);
      expect(await b.read((session) => session.objects.get(bucket, id))).toMatchObject({ v: 2 }); // cached again
      await a.transaction((session) => session.objects.update(bucket, id, { v: 3 }));
      await eventually(async () => (await b.read((session) => session.objects.get(bucket, id)))?.v, 3);
    });

    it('a dropped shared connection fails only what was on it, and the next statement reconnects', async () => {
      const store = await open(2);
      const scope = randomScope();
      await store.transaction((session) => session.objects.create(scope, 'x', { v: 1 }));
      await runAsAdmin(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND query LIKE '%FROM objects WHERE parent_id%' AND state = 'idle'`,
      );
      // The first statement may meet the dead connection (a BackendError, never a crash).
      await store
        .read((session) => session.objects.get(scope, 'x'))
        .catch((error: unknown) => expect(error).toBeInstanceOf(BackendError));
      expect(await store.read((session) => session.objects.get(scope, 'x'))).toMatchObject({ v: 1 });
    });
  });

  describeConcurrency('postgresql', open);
}
