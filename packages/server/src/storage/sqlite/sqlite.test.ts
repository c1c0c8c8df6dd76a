/**
 * The SQLite store: the shared suite in memory and on a file, then what only this backend
 * has: persistence, WAL snapshots beside a committing writer, the writer's turn-taking
 * (and its timeout), migrations; and the jsonb semantics the suite does not reach, with the
 * results PostgreSQL gives (checked against PGlite).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackendError, MigrationRequiredError } from '../errors.js';
import { describeStorage, randomScope } from '../testing.js';
import { createSqliteStorage, type SqliteStorage } from './sqlite-storage.js';
import { MIGRATIONS } from './migrations.js';
import type { ObjectStore } from '../types.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quire-sqlite-'));
});

// One store per mode for the suite: every test works in its own random scope.
let memory: Promise<SqliteStorage> | undefined;
let file: Promise<SqliteStorage> | undefined;
afterAll(async () => {
  await (await memory)?.close();
  await (await file)?.close();
  await rm(dir, { recursive: true, force: true });
});

describeStorage('sqlite (memory)', () => (memory ??= createSqliteStorage()));
describeStorage('sqlite (file)', () => (file ??= createSqliteStorage({ path: join(dir, 'suite.db') })));

/** A store on a new file of its own. */
const newFile = () => join(dir, `${randomUUID()}.db`);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('sqlite persistence', () => {
  it('keeps objects, tombstones, timestamps, permissions and outbox items across a restart', async () => {
    const path = newFile();
    const scope = randomScope();
    const uri = `${scope.parentId}/records/a`;
    const first = await createSqliteStorage({ path });
    const created = await first.transaction((session) =>
      session.objects.create(scope, 'a', { title: 'persisted', nested: { list: [1, 'two'] } }),
    );
    await first.transaction((session) => session.objects.create(scope, 'gone', {}));
    const tombstone = await first.transaction((session) => session.objects.delete(scope, 'gone'));
    await first.transaction((session) => session.permissions.set(uri, { write: ['alice'], read: ['bob', 'alice'] }));
    await first.transaction((session) => session.outbox.enqueue('topic', [{ key: '/buckets/b', payload: [{ n: 1 }] }]));
    const timestamp = await first.read((session) => session.objects.timestamp(scope));
    await first.close();

    const second = await createSqliteStorage({ path });
    try {
      expect(await second.read((session) => session.objects.get(scope, 'a'))).toEqual(created);
      expect(
        await second.read((session) =>
          session.objects.list(scope, { includeDeleted: true, sorting: [{ field: 'id', direction: 1 }] }),
        ),
      ).toEqual([created, tombstone]);
      expect(await second.read((session) => session.objects.timestamp(scope))).toBe(timestamp);
      expect((await second.read((session) => session.permissions.get([uri]))).get(uri)).toEqual({
        read: ['alice', 'bob'],
        write: ['alice'],
      });
      expect(await second.read((session) => session.outbox.keys('topic'))).toEqual(['/buckets/b']);
      expect(
        (await second.transaction((session) => session.objects.update(scope, 'a', {}))).last_modified,
      ).toBeGreaterThan(timestamp);
    } finally {
      await second.close();
    }
  });

  it('applies its migrations once, and refuses a schema newer than the code', async () => {
    const path = newFile();
    await (await createSqliteStorage({ path })).close();
    await (await createSqliteStorage({ path })).close();
    const db = new Database(path);
    expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual(
      MIGRATIONS.map(({ version, name }) => ({ version, name })),
    );
    db.prepare(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999-future', '')`).run();
    db.close();
    await expect(createSqliteStorage({ path })).rejects.toBeInstanceOf(MigrationRequiredError);
  });

  it('close is idempotent, and the store fails with BackendError afterwards', async () => {
    const storage = await createSqliteStorage({ path: newFile() });
    await Promise.all([storage.close(), storage.close()]);
    await storage.close();
    const scope = randomScope();
    await expect(storage.read((session) => session.objects.get(scope, 'a'))).rejects.toBeInstanceOf(BackendError);
    await expect(storage.transaction((session) => session.objects.create(scope, 'a', {}))).rejects.toBeInstanceOf(
      BackendError,
    );
    await expect(storage.snapshot((session) => session.objects.list(scope))).rejects.toBeInstanceOf(BackendError);
    expect(await storage.ping()).toBe(false);
  });
});

describe('sqlite read cache (read-cache.ts)', () => {
  const bucket = { resourceName: 'bucket', parentId: '' };
  /** What a request reads before a record: the caller's groups, the ACLs, the parent, the list's timestamp. */
  const readAll = (storage: SqliteStorage, id: string) =>
    storage.read(async (session) => ({
      groups: await session.permissions.groupsOf(['alice']),
      acl: (await session.permissions.get([`/buckets/${id}`])).get(`/buckets/${id}`),
      bucket: (await session.objects.get(bucket, id))?.v,
      timestamp: await session.objects.timestamp({ resourceName: 'collection', parentId: `/buckets/${id}` }),
    }));
  const write = (storage: SqliteStorage, id: string, v: number) =>
    storage.transaction(async (session) => {
      if (v === 1) await session.objects.create(bucket, id, { v });
      else await session.objects.update(bucket, id, { v });
      await session.permissions.set(`/buckets/${id}`, { read: [`reader${v}`] });
      await session.permissions.setGroupMembers(`/buckets/${id}/groups/g${v}`, ['alice']);
      await session.objects.create({ resourceName: 'collection', parentId: `/buckets/${id}` }, `c${v}`, {});
    });

  it('what this process commits is read at once, and so is what another process sharing the file commits', async () => {
    const path = newFile();
    const [here, there] = [await createSqliteStorage({ path }), await createSqliteStorage({ path })];
    try {
      const id = `cached-${randomUUID().slice(0, 8)}`;
      await write(here, id, 1);
      const first = await readAll(here, id);
      expect(first).toMatchObject({ acl: { read: ['reader1'] }, bucket: 1 });
      expect(first.groups).toContain(`/buckets/${id}/groups/g1`);
      expect(await readAll(here, id)).toEqual(first); // from the cache now
      // This process: its commit empties the cache in the same step.
      await write(here, id, 2);
      const second = await readAll(here, id);
      expect(second).toMatchObject({ acl: { read: ['reader2'] }, bucket: 2 });
      expect(second.groups).toContain(`/buckets/${id}/groups/g2`);
      expect(second.timestamp).toBeGreaterThan(first.timestamp);
      // Another process (its own writer on the file): seen through the data version, at once.
      await readAll(there, id);
      await write(there, id, 3);
      const third = await readAll(here, id);
      expect(third).toMatchObject({ acl: { read: ['reader3'] }, bucket: 3 });
      expect(third.groups).toContain(`/buckets/${id}/groups/g3`);
      expect(third.timestamp).toBeGreaterThan(second.timestamp);
      // And the other way round.
      await write(here, id, 4);
      expect(await readAll(there, id)).toMatchObject({ acl: { read: ['reader4'] }, bucket: 4 });
    } finally {
      await here.close();
      await there.close();
    }
  });

  it('what a caller does to an object or ACL it was given never reaches the cache', async () => {
    const storage = await createSqliteStorage({ path: newFile() });
    try {
      const id = `copied-${randomUUID().slice(0, 8)}`;
      await storage.transaction(async (session) => {
        await session.objects.create(bucket, id, { nested: { n: 1 } });
        await session.permissions.set(`/buckets/${id}`, { read: ['someone'] });
      });
      const taken = await storage.read(async (session) => ({
        object: await session.objects.get(bucket, id),
        acl: (await session.permissions.get([`/buckets/${id}`])).get(`/buckets/${id}`)!,
      }));
      (taken.object!.nested as { n: number }).n = 2;
      taken.acl.read!.push('intruder');
      const again = await storage.read(async (session) => ({
        object: await session.objects.get(bucket, id),
        acl: (await session.permissions.get([`/buckets/${id}`])).get(`/buckets/${id}`)!,
      }));
      expect(again.object).toMatchObject({ nested: { n: 1 } });
      expect(again.acl).toEqual({ read: ['someone'] });
      (again.object!.nested as { n: number }).n = 3;
      expect(await storage.read((session) => session.objects.get(bucket, id))).toMatchObject({ nested: { n: 1 } });
    } finally {
      await storage.close();
    }
  });
});

describe('sqlite concurrency', () => {
  it('a snapshot does not see a write committed after it started, while the writer commits', async () => {
    const storage = await createSqliteStorage({ path: newFile() });
    try {
      const scope = randomScope();
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      let committed: number | undefined;
      const seen = await storage.snapshot(async (session) => {
        const read = async () => ({
          timestamp: await session.objects.timestamp(scope),
          ids: (await session.objects.list(scope)).map((o) => o.id),
        });
        const before = await read();
        // On a file, the writer does not wait for the snapshot: this commits now.
        committed = (await storage.transaction((session) => session.objects.create(scope, 'b', {}))).last_modified;
        expect((await storage.read((session) => session.objects.get(scope, 'b')))?.last_modified).toBe(committed);
        return [before, await read()];
      });
      expect(seen[1]).toEqual(seen[0]);
      expect(seen[0]!.ids).toEqual(['a']);
      expect(committed).toBeGreaterThan(seen[0]!.timestamp);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(committed);
    } finally {
      await storage.close();
    }
  });

  it('concurrent snapshots each hold a reader, and wait in turn beyond the pool', async () => {
    const storage = await createSqliteStorage({ path: newFile(), snapshotConnections: 2 });
    try {
      const scope = randomScope();
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      const results = await Promise.all(
        Array.from({ length: 5 }, () =>
          storage.snapshot(async (session) => {
            await sleep(10);
            return session.objects.count(scope);
          }),
        ),
      );
      expect(results).toEqual([1, 1, 1, 1, 1]);
    } finally {
      await storage.close();
    }
  });

  for (const mode of ['memory', 'file'] as const) {
    it(`a transaction opened inside a transaction fails after lockTimeoutMs instead of hanging (${mode})`, async () => {
      const storage = await createSqliteStorage({
        lockTimeoutMs: 100,
        ...(mode === 'file' ? { path: newFile() } : {}),
      });
      try {
        const scope = randomScope();
        const started = Date.now();
        const error = await storage
          .transaction(async (session) => {
            await session.objects.create(scope, 'outer', {});
            return storage.transaction((inner) => inner.objects.create(scope, 'inner', {}));
          })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(BackendError);
        expect((error as Error).message).toMatch(/busy/);
        expect(Date.now() - started).toBeLessThan(5_000);
        // Rolled back, and the writer is free again.
        expect(await storage.read((session) => session.objects.list(scope))).toEqual([]);
        expect(await storage.transaction((session) => session.objects.create(scope, 'after', {}))).toMatchObject({
          id: 'after',
        });
      } finally {
        await storage.close();
      }
    });
  }

  it('a throwing transaction rolls back on the file and leaves the writer usable', async () => {
    const path = newFile();
    const storage = await createSqliteStorage({ path });
    const scope = randomScope();
    const kept = await storage.transaction((session) => session.objects.create(scope, 'kept', { v: 1 }));
    const failure = new Error('boom');
    const error = await storage
      .transaction(async (session) => {
        await session.objects.update(scope, 'kept', { v: 2 });
        await session.objects.create(scope, 'new', {});
        await session.outbox.enqueue('topic', [{ key: 'k', payload: [] }]);
        throw failure;
      })
      .catch((e: unknown) => e);
    expect(error).toBe(failure);
    // A session kept past its transaction cannot write outside of one.
    let leaked: Parameters<Parameters<SqliteStorage['transaction']>[0]>[0] | undefined;
    await storage.transaction(async (session) => {
      leaked = session;
    });
    await expect(leaked!.objects.create(scope, 'late', {})).rejects.toThrow(/ended/);
    await storage.close();

    const reopened = await createSqliteStorage({ path });
    try {
      expect(await reopened.read((session) => session.objects.list(scope, { includeDeleted: true }))).toEqual([kept]);
      expect(await reopened.read((session) => session.objects.timestamp(scope))).toBe(kept.last_modified);
      expect(await reopened.read((session) => session.outbox.keys('topic'))).toEqual([]);
    } finally {
      await reopened.close();
    }
  });
});

describe('sqlite semantics, as PostgreSQL jsonb', () => {
  let storage: SqliteStorage;
  beforeAll(async () => {
    storage = await createSqliteStorage();
  });
  afterAll(async () => {
    await storage.close();
  });
  const ids = async (scope: ReturnType<typeof randomScope>, options: Parameters<ObjectStore['list']>[1]) =>
    (await storage.read((session) => session.objects.list(scope, options))).map((object) => object.id).join(' ');
  const byId = [{ field: 'id', direction: 1 as const }];

  it('orders and compares arrays element by element, objects key by key whatever their key order', async () => {
    const scope = randomScope();
    const values: Record<string, unknown> = {
      empty: [],
      nul: [null],
      str: ['a'],
      num: [1],
      big: [10],
      nine: [9],
      bool: [true],
      nested: [[]],
      obj: [{}],
      pair: [1, 2],
      o0: {},
      ob: { b: 1 },
      oa: { a: 2 },
      oaa: { aa: 1 },
      oab: { a: 1, b: 1 },
      oba: { b: 1, a: 0 },
    };
    for (const [id, v] of Object.entries(values))
      await storage.transaction((session) => session.objects.create(scope, id, { v }));
    expect(await ids(scope, { sorting: [{ field: 'v', direction: 1 }] })).toBe(
      'empty nul str num nine big bool nested obj pair o0 oa oaa ob oba oab',
    );
    expect(await ids(scope, { filters: [{ field: 'v', operator: 'eq', value: { a: 0, b: 1 } }], sorting: byId })).toBe(
      'oba',
    );
    expect(await ids(scope, { filters: [{ field: 'v', operator: 'lt', value: [9] }], sorting: byId })).toBe(
      'empty nul num str',
    );
  });

  it('reads a number segment of a path as an array index, and contains nested containers partially', async () => {
    const scope = randomScope();
    await storage.transaction((session) => session.objects.create(scope, 'list', { v: [1, 2], o: { '0': 'key' } }));
    await storage.transaction((session) => session.objects.create(scope, 'deep', { v: [[1, 2], { a: 1, b: [3] }] }));
    expect(await ids(scope, { filters: [{ field: 'v.0', operator: 'eq', value: 1 }], sorting: byId })).toBe('list');
    expect(await ids(scope, { filters: [{ field: 'v.-1', operator: 'eq', value: 2 }], sorting: byId })).toBe('list');
    expect(await ids(scope, { filters: [{ field: 'o.0', operator: 'eq', value: 'key' }], sorting: byId })).toBe('list');
    expect(
      await ids(scope, { filters: [{ field: 'v', operator: 'contains', value: [[2], { b: [3] }] }], sorting: byId }),
    ).toBe('deep');
    expect(
      await ids(scope, { filters: [{ field: 'v', operator: 'contains_any', value: [[2], 'zz'] }], sorting: byId }),
    ).toBe('deep');
  });

  it('permissions.entries: records and accounts, URIs of any characters, implied permissions', async () => {
    const bucket = `b'"\\é*-${randomUUID()}`;
    const user = `u-${randomUUID()}`;
    await storage.transaction((session) =>
      session.permissions.set(`/buckets/${bucket}/collections/c%_/records/r*1`, { write: [user] }),
    );
    await storage.transaction((session) => session.permissions.set(`/accounts/${user}`, { write: [user] }));
    await storage.transaction((session) =>
      session.permissions.set(`/buckets/${bucket}/collections/c%_/records/r2/beyond`, { read: [user] }),
    );
    await storage.transaction((session) => session.permissions.set(`/buckets/${bucket}/history/h`, { read: [user] }));
    await storage.transaction((session) =>
      session.permissions.set(`/buckets/${bucket}`, { read: [user, 'group'], write: ['group'] }),
    );
    const entries = await storage.read((session) =>
      session.permissions.entries({
        principals: [user, 'group'],
        globalGrants: [],
        implied: { record: { write: ['read'] }, bucket: { write: ['read', 'collection:create'] } },
        extraEntries: [],
        filters: [{ field: 'uri', operator: 'like', value: `*${user}*` }],
        sorting: [{ field: 'uri', direction: 1 }],
      }),
    );
    const more = await storage.read((session) =>
      session.permissions.entries({
        principals: [user, 'group'],
        globalGrants: [],
        implied: { record: { write: ['read'] }, bucket: { write: ['read', 'collection:create'] } },
        extraEntries: [],
        filters: [{ field: 'bucket_id', operator: 'eq', value: bucket }],
        sorting: [{ field: 'uri', direction: 1 }],
      }),
    );
    expect([...entries, ...more]).toEqual([
      { uri: `/accounts/${user}`, resource_name: 'account', id: user, account_id: user, permissions: ['write'] },
      {
        uri: `/buckets/${bucket}`,
        resource_name: 'bucket',
        id: bucket,
        bucket_id: bucket,
        permissions: ['collection:create', 'read', 'write'],
      },
      {
        uri: `/buckets/${bucket}/collections/c%_/records/r*1`,
        resource_name: 'record',
        id: 'r*1',
        bucket_id: bucket,
        collection_id: 'c%_',
        record_id: 'r*1',
        permissions: ['read', 'write'],
      },
    ]);
  });

  it('read() gives autocommit reads that store the timestamp of a new scope, and no writes', async () => {
    const file = await createSqliteStorage({ path: newFile() });
    try {
      for (const store of [storage, file]) {
        const scope = randomScope();
        const timestamp = await store.read((session) => session.objects.timestamp(scope));
        expect(await store.read((session) => session.objects.timestamp(scope))).toBe(timestamp);
        await expect(store.read((session) => session.objects.create(scope, 'a', {}))).rejects.toThrow(/read only/);
      }
    } finally {
      await file.close();
    }
  });
});
