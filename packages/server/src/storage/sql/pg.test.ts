import { performance } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { BackendError, MigrationRequiredError, ObjectNotFoundError, UnicityError } from '../errors.js';
import { describeStorage, randomScope } from '../testing.js';
import type { Storage, StoredObject, Tombstone } from '../types.js';
import { createPgDriver } from './drivers/pg.js';
import { describeDriver } from './drivers/testing.js';
import { checkMigrations, loadMigrations, migrate } from './migrate.js';
import { createPostgresStorage, type SqlStorage } from './sql-storage.js';
import { dropSchema, newSchemaName, PG_URL as url, postgresUnavailable, runAsAdmin } from '../../../test/helpers/postgres.js';

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
    const storage = await createPostgresStorage({ url, schema, poolSize, autoMigrate: true });
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
      await expect(createPostgresStorage({ url: 'postgresql://postgres@127.0.0.1:1/none' })).rejects.toBeInstanceOf(BackendError);
    });
  });

  describe('postgresql shared read cache, across processes', () => {
    const bucket = { resourceName: 'bucket', parentId: '' };

    /** Polls `read` until it gives `expected` (the other process's notification arrived), at most 5 s. */
    async function eventually<T>(read: () => Promise<T>, expected: T): Promise<void> {
      const deadline = performance.now() + 5_000;
      for (;;) {
        const value = await read();
        if (performance.now() > deadline || JSON.stringify(value) === JSON.stringify(expected)) return expect(value).toEqual(expected);
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
        const rows = await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN "quire_cache"'`);
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
      await eventually(async () => (await b.read((session) => session.permissions.get([uri]))).get(uri), { write: ['bob'] });
      await eventually(() => b.read((session) => session.permissions.groupsOf(['carol'])), [`${uri}/groups/g`]);
      // Nothing is announced for a transaction that rolled back.
      await a.transaction(async (session) => {
        await session.objects.update(bucket, id, { v: 3 });
        throw new Error('rolled back');
      }).catch(() => {});
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
      await runAsAdmin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%FROM objects WHERE parent_id%' AND state = 'idle'`);
      // The first statement may meet the dead connection (a BackendError, never a crash).
      await store.read((session) => session.objects.get(scope, 'x')).catch((error: unknown) => expect(error).toBeInstanceOf(BackendError));
      expect(await store.read((session) => session.objects.get(scope, 'x'))).toMatchObject({ v: 1 });
    });
  });

  describe('postgresql concurrency', () => {
    it('retries a transaction that lost a deadlock', async () => {
      const store = await storage();
      const [a, b] = [randomScope(), randomScope()];
      let arrived = 0;
      let release!: () => void;
      const bothLocked = new Promise<void>((resolve) => (release = resolve));
      const meet = async () => {
        if (++arrived === 2) release();
        await bothLocked;
      };
      // Each transaction locks one scope, waits for the other, then writes the other's scope.
      const [first, second] = await Promise.all([
        store.transaction(async (session) => {
          await session.objects.update(a, 'x', {});
          await meet();
          return session.objects.update(b, 'x', {});
        }),
        store.transaction(async (session) => {
          await session.objects.update(b, 'y', {});
          await meet();
          return session.objects.update(a, 'y', {});
        }),
      ]);
      expect(first.id).toBe('x');
      expect(second.id).toBe('y');
      expect((await store.read((session) => session.objects.list(a))).map((object) => object.id).sort()).toEqual(['x', 'y']);
    });

    it('writers in several processes get unique timestamps that follow commit order', async () => {
      const processes = await Promise.all([open(2), open(2), open(2), open(2)]);
      const scope = randomScope();
      const writes = (
        await Promise.all(
          processes.map(async (process, p) => {
            const done: Array<{ ts: number; start: number; end: number }> = [];
            for (let i = 0; i < 40; i++) {
              const start = performance.now();
              const { last_modified } = await process.transaction((session) => session.objects.update(scope, `p${p}-${i % 5}`, { i }));
              done.push({ ts: last_modified, start, end: performance.now() });
            }
            return done;
          }),
        )
      ).flat();
      expect(new Set(writes.map((write) => write.ts)).size).toBe(writes.length);
      // A write that completed before another started has the smaller timestamp.
      const outOfOrder = writes.filter((later) => writes.some((earlier) => earlier.end < later.start && later.ts <= earlier.ts));
      expect(outOfOrder).toEqual([]);
      expect(await processes[0]!.read((session) => session.objects.timestamp(scope))).toBe(Math.max(...writes.map((write) => write.ts)));
    });

    it('a _since poller never misses a change made by concurrent writers', async () => {
      const writers = await Promise.all([open(3), open(3), open(3), open(3)]);
      const poller = await open(2);
      const scope = randomScope();
      const objectIds = Array.from({ length: 25 }, (_, i) => `o${i}`);

      interface Write {
        id: string;
        ts: number;
        start: number;
      }
      interface Poll {
        since: number;
        etag: number;
        end: number;
        changes: Array<StoredObject | Tombstone>;
      }
      const writes: Write[] = [];
      const polls: Poll[] = [];
      const deadline = performance.now() + 1_500;

      async function write(process: Storage): Promise<void> {
        while (performance.now() < deadline) {
          const id = objectIds[Math.floor(Math.random() * objectIds.length)]!;
          const start = performance.now();
          const roll = Math.random();
          try {
            // Half the updates and deletions stamped at commit, as a request's own write is.
            const stampAtCommit = Math.random() < 0.5;
            const written =
              roll < 0.5
                ? await process.transaction(async (session) => {
                    await session.objects.get(scope, id, { forUpdate: true });
                    return session.objects.update(scope, id, { roll }, { stampAtCommit });
                  })
                : roll < 0.75
                  ? await process.transaction((session) => session.objects.create(scope, id, { roll }))
                  : await process.transaction(async (session) => {
                      await session.objects.get(scope, id, { forUpdate: true });
                      return session.objects.delete(scope, id, { stampAtCommit });
                    });
            writes.push({ id, ts: written.last_modified, start });
          } catch (error) {
            // Racing writers: creating a live object or deleting a deleted one is refused.
            const refused = (error instanceof UnicityError && error.existing) || error instanceof ObjectNotFoundError;
            if (!refused) throw error;
          }
        }
      }

      async function poll(since: number): Promise<Poll> {
        const { etag, changes } = await poller.snapshot(async (session) => ({
          etag: await session.objects.timestamp(scope),
          changes: await session.objects.list(scope, {
            filters: [{ field: 'last_modified', operator: 'gt', value: since }],
            sorting: [{ field: 'last_modified', direction: 1 }],
            includeDeleted: true,
          }),
        }));
        const result = { since, etag, end: performance.now(), changes };
        polls.push(result);
        return result;
      }

      const mirror = new Map<string, number>();
      let since = await poller.read((session) => session.objects.timestamp(scope));
      let writersDone = false;
      const writing = Promise.all(writers.map(write)).finally(() => (writersDone = true));
      writing.catch(() => {}); // a writer's failure is reported by `await writing` below, not as unhandled
      for (;;) {
        // Only a poll that started after every writer finished may end the loop: an empty poll
        // that started earlier can precede the last commits.
        const quiet = writersDone;
        const { etag, changes } = await poll(since);
        for (const change of changes) mirror.set(change.id, change.last_modified);
        if (quiet && changes.length === 0) break;
        since = etag;
      }
      await writing;

      expect(writes.length).toBeGreaterThan(50);
      expect(polls.length).toBeGreaterThan(5);
      // Timestamps are unique.
      expect(new Set(writes.map((w) => w.ts)).size).toBe(writes.length);
      for (const { since: from, etag, changes } of polls) {
        for (const change of changes) {
          expect(change.last_modified).toBeGreaterThan(from);
          expect(change.last_modified).toBeLessThanOrEqual(etag);
        }
      }
      const violations: string[] = [];
      for (const w of writes) {
        // A write never undercuts the ETag of a poll that completed before it started…
        const undercut = polls.find((p) => p.end < w.start && w.ts <= p.etag);
        if (undercut) violations.push(`${w.id}@${w.ts} undercuts the ETag ${undercut.etag} of an earlier poll`);
        // …and the poll whose window (since, etag] holds its timestamp saw it (or a later
        // version of the same object).
        const window = polls.find((p) => p.since < w.ts && w.ts <= p.etag);
        const seen = window?.changes.find((change) => change.id === w.id);
        if (!seen || seen.last_modified < w.ts) {
          const history = writes.filter((other) => other.id === w.id).map((other) => other.ts).sort();
          violations.push(
            `${w.id}@${w.ts} was missed by the poller (window ${window?.since}..${window?.etag}, seen ${JSON.stringify(seen)}, writes of ${w.id}: ${history.join(',')})`,
          );
        }
      }
      expect(violations).toEqual([]);
      // The poller's mirror equals the final state, tombstones included.
      const final = await poller.read((session) => session.objects.list(scope, { includeDeleted: true }));
      expect(new Map(final.map((object) => [object.id, object.last_modified]))).toEqual(mirror);
    });
  });
}

