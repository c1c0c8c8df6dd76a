/**
 * The objects facet: CRUD, timestamps (protocol-reference §5), tombstones, deletions, history
 * scopes, hostile input. A bucket's or collection's cascade (`deleteTree`) is tested here as the
 * resource engine makes it: one call per facet, in one transaction.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { ObjectNotFoundError, StorageError, UnicityError } from '../errors.js';
import { HISTORY_RESOURCE, type Filter, type Scope, type Sort, type Storage, type StoredObject } from '../types.js';
import { deleteBelow, ids, randomScope, seedObjects, sleep, type Listed, type Suite } from './context.js';

export function describeObjects(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  let scope: Scope;
  suite.beforeEach((current) => ({ storage, scope } = current));
  /** Creates objects `{ id: data }` in order (so increasing timestamps). */
  const seed = (objects: Record<string, Record<string, unknown>>, target = scope) =>
    seedObjects(storage, target, objects);

  section('crud', () => {
    test('create returns the object with its id and a timestamp, and get reads it back', async () => {
      const created = await storage.transaction((session) =>
        session.objects.create(scope, 'a', { title: 'hello', n: 1 }),
      );
      expect(created).toEqual({ id: 'a', last_modified: expect.any(Number), title: 'hello', n: 1 });
      expect(await storage.read((session) => session.objects.get(scope, 'a'))).toEqual(created);
    });

    test('create and update ignore id and last_modified inside data', async () => {
      const created = await storage.transaction((session) =>
        session.objects.create(scope, 'a', { id: 'other', last_modified: 42, x: 1 }),
      );
      expect(created.id).toBe('a');
      expect(created.last_modified).not.toBe(42);
      const updated = await storage.transaction((session) =>
        session.objects.update(scope, 'a', { id: 'zzz', last_modified: 1, x: 2 }),
      );
      expect(updated).toEqual({ id: 'a', last_modified: expect.any(Number), x: 2 });
    });

    test('create throws UnicityError with the existing object when it is live', async () => {
      const created = await storage.transaction((session) => session.objects.create(scope, 'a', { v: 1 }));
      const error = await storage
        .transaction((session) => session.objects.create(scope, 'a', { v: 2 }))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnicityError);
      expect((error as UnicityError).existing).toEqual(created);
      expect(await storage.read((session) => session.objects.get(scope, 'a'))).toEqual(created);
    });

    test('get returns null for unknown and deleted objects', async () => {
      expect(await storage.read((session) => session.objects.get(scope, 'nope'))).toBeNull();
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      await storage.transaction((session) => session.objects.delete(scope, 'a'));
      expect(await storage.read((session) => session.objects.get(scope, 'a'))).toBeNull();
    });

    test('update replaces the data entirely and bumps the timestamp', async () => {
      const created = await storage.transaction((session) => session.objects.create(scope, 'a', { a: 1, b: 2 }));
      const updated = await storage.transaction((session) => session.objects.update(scope, 'a', { c: 3 }));
      expect(updated).toEqual({ id: 'a', last_modified: expect.any(Number), c: 3 });
      expect(updated.last_modified).toBeGreaterThan(created.last_modified);
      expect(await storage.read((session) => session.objects.get(scope, 'a'))).toEqual(updated);
    });

    test('insertMany stores objects with consecutive timestamps above the scope, in order', async () => {
      const before = await storage.transaction((session) => session.objects.create(scope, 'old', { v: 0 }));
      const inserted = await storage.transaction((session) =>
        session.objects.insertMany(scope, [
          { id: 'x', data: { v: 1, id: 'ignored', last_modified: 1 } },
          { id: 'y', data: { v: 2, nested: { a: [1, 'b'] } } },
          { id: 'z', data: {} },
        ]),
      );
      expect(inserted.map((object) => object.id)).toEqual(['x', 'y', 'z']);
      expect(inserted[0]).toEqual({ id: 'x', last_modified: expect.any(Number), v: 1 });
      const stamps = inserted.map((object) => object.last_modified);
      expect(stamps[0]).toBeGreaterThan(before.last_modified);
      expect(stamps).toEqual([stamps[0], stamps[0]! + 1, stamps[0]! + 2]);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(stamps[2]);
      expect(await storage.read((session) => session.objects.get(scope, 'y'))).toEqual(inserted[1]);
      expect(await storage.transaction((session) => session.objects.insertMany(scope, []))).toEqual([]);
      const next = await storage.transaction((session) => session.objects.update(scope, 'w', {}));
      expect(next.last_modified).toBeGreaterThan(stamps[2]!);
    });

    test('import stores objects and tombstones as given and raises the scope timestamp', async () => {
      const target = randomScope();
      await storage.transaction((session) =>
        session.objects.import(target, [
          { id: 'a', last_modified: 1000, v: 1, nested: { x: [1, 'y'] } },
          { id: 'b', last_modified: 1002, deleted: true },
          { id: 'c', last_modified: 1001 },
        ]),
      );
      expect(
        await storage.read((session) =>
          session.objects.list(target, { includeDeleted: true, sorting: [{ field: 'last_modified', direction: 1 }] }),
        ),
      ).toEqual([
        { id: 'a', last_modified: 1000, v: 1, nested: { x: [1, 'y'] } },
        { id: 'c', last_modified: 1001 },
        { id: 'b', last_modified: 1002, deleted: true },
      ]);
      expect(await storage.read((session) => session.objects.timestamp(target))).toBe(1002);
      // A given scope timestamp wins; it never goes down; the same id is replaced.
      await storage.transaction((session) =>
        session.objects.import(target, [{ id: 'a', last_modified: 1003, v: 2 }], 5000),
      );
      expect(await storage.read((session) => session.objects.timestamp(target))).toBe(5000);
      await storage.transaction((session) => session.objects.import(target, [], 4000));
      expect(await storage.read((session) => session.objects.timestamp(target))).toBe(5000);
      expect(await storage.read((session) => session.objects.get(target, 'a'))).toEqual({
        id: 'a',
        last_modified: 1003,
        v: 2,
      });
      // Later writes go above it.
      expect(
        (await storage.transaction((session) => session.objects.update(target, 'd', {}))).last_modified,
      ).toBeGreaterThan(5000);
      // An empty scope gets the timestamp alone.
      const empty = randomScope();
      await storage.transaction((session) => session.objects.import(empty, [], 1234));
      expect(await storage.read((session) => session.objects.timestamp(empty))).toBe(1234);
    });

    test('update creates missing and deleted objects', async () => {
      expect(await storage.transaction((session) => session.objects.update(scope, 'new', { v: 1 }))).toMatchObject({
        id: 'new',
        v: 1,
      });
      await storage.transaction((session) => session.objects.create(scope, 'gone', { v: 1 }));
      await storage.transaction((session) => session.objects.delete(scope, 'gone'));
      expect(await storage.transaction((session) => session.objects.update(scope, 'gone', { v: 2 }))).toMatchObject({
        id: 'gone',
        v: 2,
      });
      expect(await storage.read((session) => session.objects.get(scope, 'gone'))).toMatchObject({ v: 2 });
    });

    test('delete returns a tombstone and throws ObjectNotFoundError when not live', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'a', { v: 1 }));
      const tombstone = await storage.transaction((session) => session.objects.delete(scope, 'a'));
      expect(tombstone).toEqual({ id: 'a', last_modified: expect.any(Number), deleted: true });
      await expect(storage.transaction((session) => session.objects.delete(scope, 'a'))).rejects.toBeInstanceOf(
        ObjectNotFoundError,
      );
      await expect(storage.transaction((session) => session.objects.delete(scope, 'never'))).rejects.toBeInstanceOf(
        ObjectNotFoundError,
      );
    });

    test('scopes with the same id are independent', async () => {
      const groups: Scope = { resourceName: 'group', parentId: scope.parentId };
      const other = randomScope();
      await storage.transaction((session) => session.objects.create(scope, 'same', { where: 'records' }));
      await storage.transaction((session) => session.objects.create(groups, 'same', { where: 'groups' }));
      await storage.transaction((session) => session.objects.create(other, 'same', { where: 'other' }));
      expect(await storage.read((session) => session.objects.get(scope, 'same'))).toMatchObject({ where: 'records' });
      expect(await storage.read((session) => session.objects.get(groups, 'same'))).toMatchObject({ where: 'groups' });
      await storage.transaction((session) => session.objects.delete(other, 'same'));
      expect(await storage.read((session) => session.objects.get(scope, 'same'))).toMatchObject({ where: 'records' });
      expect(ids(await storage.read((session) => session.objects.list(groups)))).toEqual(['same']);
    });

    test('stores any JSON faithfully', async () => {
      const data = {
        text: 'héllo ✓ 🎉 "quoted" \\ back',
        int: -12,
        float: 1.5,
        big: 2 ** 53 - 1,
        yes: true,
        nothing: null,
        list: [1, 'two', [3], { four: 4 }, null],
        nested: { deep: { deeper: ['x'] }, empty: {} },
      };
      await storage.transaction((session) => session.objects.create(scope, 'json', data));
      expect(await storage.read((session) => session.objects.get(scope, 'json'))).toEqual({
        ...data,
        id: 'json',
        last_modified: expect.any(Number),
      });
    });
  });

  section('timestamps', () => {
    test('every write gets a strictly greater timestamp, which becomes the scope timestamp', async () => {
      const stamps: number[] = [];
      stamps.push((await storage.transaction((session) => session.objects.create(scope, 'a', {}))).last_modified);
      stamps.push((await storage.transaction((session) => session.objects.create(scope, 'b', {}))).last_modified);
      stamps.push((await storage.transaction((session) => session.objects.update(scope, 'a', { v: 1 }))).last_modified);
      stamps.push((await storage.transaction((session) => session.objects.update(scope, 'a', { v: 1 }))).last_modified); // identical data still bumps
      stamps.push((await storage.transaction((session) => session.objects.delete(scope, 'b'))).last_modified);
      for (let i = 1; i < stamps.length; i++) expect(stamps[i]).toBeGreaterThan(stamps[i - 1]!);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(stamps.at(-1));
    });

    test('timestamps are close to the current time in milliseconds', async () => {
      const before = Date.now();
      const { last_modified } = await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      // The database clock may differ slightly from the process clock.
      expect(Math.abs(last_modified - before)).toBeLessThan(60_000);
      expect(Number.isInteger(last_modified)).toBe(true);
    });

    test('many writes in the same millisecond get unique increasing timestamps', async () => {
      const created = await storage.transaction(async (session) => {
        const objects: StoredObject[] = [];
        for (let i = 0; i < 50; i++) objects.push(await session.objects.create(scope, `o${i}`, { i }));
        return objects;
      });
      const stamps = created.map((object) => object.last_modified);
      expect(new Set(stamps).size).toBe(50);
      expect([...stamps].sort((a, b) => a - b)).toEqual(stamps);
      const parallel = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          storage.transaction((session) => session.objects.create(scope, `p${i}`, {})),
        ),
      );
      const all = [...stamps, ...parallel.map((object) => object.last_modified)];
      expect(new Set(all).size).toBe(70);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(Math.max(...all));
    });

    test('scopes have independent timestamps', async () => {
      const other = randomScope();
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      const before = await storage.read((session) => session.objects.timestamp(other));
      await storage.transaction((session) => session.objects.create(scope, 'b', {}));
      await storage.transaction((session) => session.objects.update(scope, 'a', {}));
      expect(await storage.read((session) => session.objects.timestamp(other))).toBe(before);
    });

    test('an empty scope gets a timestamp on first read that stays stable until a write', async () => {
      const first = await storage.read((session) => session.objects.timestamp(scope));
      expect(Number.isInteger(first)).toBe(true);
      await sleep(5);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(first);
      expect(await storage.snapshot((session) => session.objects.timestamp(scope))).toBe(first);
      const { last_modified } = await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      expect(last_modified).toBeGreaterThan(first);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(last_modified);
    });

    test('the scope timestamp never decreases when objects are deleted or purged', async () => {
      await seed({ a: {}, b: {} });
      await storage.transaction((session) => session.objects.delete(scope, 'a'));
      await storage.transaction((session) => session.objects.delete(scope, 'b'));
      const afterDeletes = await storage.read((session) => session.objects.timestamp(scope));
      await storage.transaction((session) => session.objects.purgeDeleted(scope));
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(afterDeletes);
      expect(
        (await storage.transaction((session) => session.objects.create(scope, 'c', {}))).last_modified,
      ).toBeGreaterThan(afterDeletes);
    });

    test('1.18: a requested timestamp above the scope timestamp is used and becomes it', async () => {
      const { last_modified: current } = await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      const future = current + 100_000;
      expect(
        (await storage.transaction((session) => session.objects.create(scope, 'b', {}, { lastModified: future })))
          .last_modified,
      ).toBe(future);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(future);
      expect(
        (await storage.transaction((session) => session.objects.create(scope, 'c', {}))).last_modified,
      ).toBeGreaterThan(future);
      const tombstone = await storage.transaction((session) =>
        session.objects.delete(scope, 'a', { lastModified: future + 10 }),
      );
      expect(tombstone.last_modified).toBe(future + 10);
    });

    test('1.18: a requested timestamp equal to the scope timestamp is replaced by a fresh one', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      const current = await storage.read((session) => session.objects.timestamp(scope));
      const { last_modified } = await storage.transaction((session) =>
        session.objects.update(scope, 'b', {}, { lastModified: current }),
      );
      expect(last_modified).toBeGreaterThan(current);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(last_modified);
    });

    test('1.18: a requested timestamp below the scope timestamp is kept without bumping the scope', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      await sleep(3);
      await storage.transaction((session) => session.objects.create(scope, 'b', {}));
      const current = await storage.read((session) => session.objects.timestamp(scope));
      const past = current - 1_000_000;
      expect(
        (await storage.transaction((session) => session.objects.create(scope, 'old', { v: 1 }, { lastModified: past })))
          .last_modified,
      ).toBe(past);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(current);
      expect(await storage.read((session) => session.objects.get(scope, 'old'))).toMatchObject({
        last_modified: past,
        v: 1,
      });
    });

    test('1.18: a requested past timestamp already used in the scope gets a fresh one', async () => {
      const a = await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      await storage.transaction((session) => session.objects.create(scope, 'b', {}));
      const current = await storage.read((session) => session.objects.timestamp(scope));
      const clash = await storage.transaction((session) =>
        session.objects.create(scope, 'c', {}, { lastModified: a.last_modified }),
      );
      expect(clash.last_modified).toBeGreaterThan(current);
      // An object keeps its own past timestamp when rewritten with it.
      const again = await storage.transaction((session) =>
        session.objects.update(scope, 'a', { v: 2 }, { lastModified: a.last_modified }),
      );
      expect(again.last_modified).toBe(a.last_modified);
      const stamps = (await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).map(
        (object) => object.last_modified,
      );
      expect(new Set(stamps).size).toBe(stamps.length);
    });
  });

  section('tombstones', () => {
    test('tombstones are listed only with includeDeleted, with exactly id, last_modified and deleted', async () => {
      await seed({ a: { title: 'x' }, b: { title: 'y' } });
      const tombstone = await storage.transaction((session) => session.objects.delete(scope, 'a'));
      expect(ids(await storage.read((session) => session.objects.list(scope)))).toEqual(['b']);
      const all = await storage.read((session) =>
        session.objects.list(scope, { includeDeleted: true, sorting: [{ field: 'last_modified', direction: 1 }] }),
      );
      expect(all).toEqual([expect.objectContaining({ id: 'b', title: 'y' }), tombstone]);
      expect(Object.keys(all[1]!).sort()).toEqual(['deleted', 'id', 'last_modified']);
    });

    test('re-creating a deleted id replaces its tombstone', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'a', { v: 1 }));
      const tombstone = await storage.transaction((session) => session.objects.delete(scope, 'a'));
      const recreated = await storage.transaction((session) => session.objects.create(scope, 'a', { v: 2 }));
      expect(recreated.last_modified).toBeGreaterThan(tombstone.last_modified);
      expect(await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).toEqual([
        recreated,
      ]);
    });

    test('a _since poll returns the changes, tombstones included', async () => {
      await seed({ a: {}, b: {} });
      const since = await storage.read((session) => session.objects.timestamp(scope));
      await storage.transaction((session) => session.objects.update(scope, 'a', { v: 1 }));
      await storage.transaction((session) => session.objects.delete(scope, 'b'));
      const changes = await storage.read((session) =>
        session.objects.list(scope, {
          filters: [{ field: 'last_modified', operator: 'gt', value: since }],
          sorting: [{ field: 'last_modified', direction: 1 }],
          includeDeleted: true,
        }),
      );
      expect(changes).toEqual([
        expect.objectContaining({ id: 'a', v: 1 }),
        expect.objectContaining({ id: 'b', deleted: true }),
      ]);
    });
  });

  section('count', () => {
    test('counts live objects matching the filters', async () => {
      expect(await storage.read((session) => session.objects.count(scope))).toBe(0);
      await seed({ a: { n: 1 }, b: { n: 2 }, c: { n: 3 }, d: {} });
      await storage.transaction((session) => session.objects.delete(scope, 'c'));
      expect(await storage.read((session) => session.objects.count(scope))).toBe(3);
      expect(
        await storage.read((session) => session.objects.count(scope, [{ field: 'n', operator: 'gt', value: 1 }])),
      ).toBe(2);
      expect(await storage.read((session) => session.objects.count(randomScope()))).toBe(0);
    });

    test('an unfiltered count follows every kind of write, in and out of transactions', async () => {
      // What the backend may keep as a counter must always equal what a filter walks to.
      const walked = async (target: Scope) =>
        storage.read((session) =>
          session.objects.count(target, [{ field: 'last_modified', operator: 'gt', value: 0 }]),
        );
      const expectCount = async (expected: number, target = scope) => {
        expect(await storage.read((session) => session.objects.count(target))).toBe(expected);
        expect(await walked(target)).toBe(expected);
      };
      await expectCount(0);
      await seed({ a: {}, b: {}, c: {} });
      await expectCount(3);
      await storage.transaction(async (session) => {
        await session.objects.update(scope, 'a', { v: 2 }); // a live object replaced: no change
        await session.objects.update(scope, 'd', {}); // created by an update
        await session.objects.delete(scope, 'b', { stampAtCommit: true });
        // Inside the transaction, the count includes what it wrote.
        expect(await session.objects.count(scope)).toBe(3);
      });
      await expectCount(3);
      await storage.transaction((session) => session.objects.create(scope, 'b', {})); // revives the tombstone
      await expectCount(4);
      await storage.transaction((session) =>
        session.objects.insertMany(scope, [
          { id: 'e', data: {} },
          { id: 'f', data: {} },
        ]),
      );
      await expectCount(6);
      await storage.transaction((session) =>
        session.objects.deleteAll(scope, { filters: [{ field: 'id', operator: 'in', value: ['e', 'f', 'x'] }] }),
      );
      await expectCount(4);
      await storage.transaction((session) => session.objects.purgeDeleted(scope)); // tombstones only
      await expectCount(4);
      // A rolled-back transaction changes nothing.
      await storage
        .transaction(async (session) => {
          await session.objects.create(scope, 'g', {});
          throw new Error('rolled back');
        })
        .catch(() => {});
      await expectCount(4);
      // Imported as given, tombstones included, into a scope of its own.
      const imported = randomScope();
      await storage.transaction((session) =>
        session.objects.import(imported, [
          { id: 'i1', last_modified: 10 },
          { id: 'i2', last_modified: 11, deleted: true },
          { id: 'i3', last_modified: 12 },
        ]),
      );
      await expectCount(2, imported);
      await storage.transaction((session) => session.objects.trim(imported, 1));
      await expectCount(1, imported);
      // A cascade takes the counts of every scope below it.
      const child: Scope = { resourceName: 'record', parentId: `${scope.parentId}/records/a/children/x` };
      await seed({ y: {} }, child);
      await expectCount(1, child);
      await storage.transaction((session) => session.objects.deleteTree(scope.parentId));
      await expectCount(0);
      await expectCount(0, child);
      await storage.transaction((session) => session.objects.create(scope, 'again', {}));
      await expectCount(1);
    });
  });

  section('deleteAll', () => {
    test('deletes the matching objects, each tombstone with its own increasing timestamp', async () => {
      await seed({ a: { k: 1 }, b: { k: 2 }, c: { k: 1 }, d: { k: 1 } });
      const before = await storage.read((session) => session.objects.timestamp(scope));
      const tombstones = await storage.transaction((session) =>
        session.objects.deleteAll(scope, {
          filters: [{ field: 'k', operator: 'eq', value: 1 }],
          sorting: [{ field: 'id', direction: -1 }],
        }),
      );
      expect(ids(tombstones)).toEqual(['d', 'c', 'a']);
      expect(tombstones.every((tombstone) => tombstone.deleted)).toBe(true);
      const stamps = tombstones.map((tombstone) => tombstone.last_modified);
      expect(stamps[0]).toBeGreaterThan(before);
      for (let i = 1; i < stamps.length; i++) expect(stamps[i]).toBeGreaterThan(stamps[i - 1]!);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(stamps.at(-1));
      expect(ids(await storage.read((session) => session.objects.list(scope)))).toEqual(['b']);
      const listed = await storage.read((session) =>
        session.objects.list(scope, { includeDeleted: true, sorting: [{ field: 'id', direction: 1 }] }),
      );
      expect(listed.filter((object) => 'deleted' in object)).toEqual([...tombstones].reverse());
    });

    test('honours sorting, limit and continuation', async () => {
      await seed({ a: { n: 4 }, b: { n: 1 }, c: { n: 3 }, d: { n: 2 } });
      const sorting: Sort[] = [
        { field: 'n', direction: 1 },
        { field: 'last_modified', direction: 1 },
      ];
      expect(
        ids(await storage.transaction((session) => session.objects.deleteAll(scope, { sorting, limit: 2 }))),
      ).toEqual(['b', 'd']);
      expect(
        ids(
          await storage.transaction((session) =>
            session.objects.deleteAll(scope, { sorting, after: { n: 3, last_modified: Number.MAX_SAFE_INTEGER } }),
          ),
        ),
      ).toEqual(['a']);
      expect(ids(await storage.read((session) => session.objects.list(scope)))).toEqual(['c']);
    });

    test('does nothing on an empty scope', async () => {
      const before = await storage.read((session) => session.objects.timestamp(scope));
      expect(await storage.transaction((session) => session.objects.deleteAll(scope))).toEqual([]);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(before);
    });
  });

  section('deleteTree', () => {
    test('hard-deletes the objects under a URI and their permissions, without tombstones', async () => {
      const bucket = `/buckets/${randomUUID()}`;
      const collections: Scope = { resourceName: 'collection', parentId: bucket };
      const records: Scope = { resourceName: 'record', parentId: `${bucket}/collections/c` };
      const sibling: Scope = { resourceName: 'record', parentId: `${bucket}x/collections/c` };
      await storage.transaction((session) => session.objects.create(collections, 'c', {}));
      await storage.transaction((session) => session.objects.create(records, 'r', {}));
      await storage.transaction((session) => session.objects.create(records, 'gone', {}));
      await storage.transaction((session) => session.objects.delete(records, 'gone'));
      await storage.transaction((session) => session.objects.create(sibling, 'r', {}));
      await storage.transaction((session) => session.permissions.set(bucket, { write: ['alice'] }));
      await storage.transaction((session) => session.permissions.set(`${bucket}/collections/c`, { read: ['bob'] }));
      await storage.transaction((session) =>
        session.permissions.set(`${bucket}/collections/c/records/r`, { write: ['carol'] }),
      );
      await storage.transaction((session) => session.permissions.set(`${bucket}x/collections/c`, { read: ['dave'] }));

      await deleteBelow(storage, bucket);

      expect(await storage.read((session) => session.objects.list(collections, { includeDeleted: true }))).toEqual([]);
      expect(await storage.read((session) => session.objects.list(records, { includeDeleted: true }))).toEqual([]);
      expect(ids(await storage.read((session) => session.objects.list(sibling)))).toEqual(['r']);
      const permissions = await storage.read((session) =>
        session.permissions.get([
          bucket,
          `${bucket}/collections/c`,
          `${bucket}/collections/c/records/r`,
          `${bucket}x/collections/c`,
        ]),
      );
      expect([...permissions.values()]).toEqual([{ write: ['alice'] }, {}, {}, { read: ['dave'] }]);
    });

    test('treats _ and % in ids literally', async () => {
      const base = `/buckets/${randomUUID()}`;
      const target: Scope = { resourceName: 'record', parentId: `${base}/collections/a_b` };
      const lookalike: Scope = { resourceName: 'record', parentId: `${base}/collections/axb` };
      const percent: Scope = { resourceName: 'record', parentId: `${base}/collections/a%` };
      const percentLookalike: Scope = { resourceName: 'record', parentId: `${base}/collections/ab` };
      for (const each of [target, lookalike, percent, percentLookalike])
        await storage.transaction((session) => session.objects.create(each, 'r', {}));
      await storage.transaction((session) =>
        session.permissions.set(`${base}/collections/axb/records/r`, { read: ['x'] }),
      );
      await deleteBelow(storage, `${base}/collections/a_b`);
      await deleteBelow(storage, `${base}/collections/a%`);
      expect(await storage.read((session) => session.objects.list(target))).toEqual([]);
      expect(await storage.read((session) => session.objects.list(percent))).toEqual([]);
      expect(ids(await storage.read((session) => session.objects.list(lookalike)))).toEqual(['r']);
      expect(ids(await storage.read((session) => session.objects.list(percentLookalike)))).toEqual(['r']);
      expect(
        (await storage.read((session) => session.permissions.get([`${base}/collections/axb/records/r`]))).get(
          `${base}/collections/axb/records/r`,
        ),
      ).toEqual({
        read: ['x'],
      });
    });

    test('keeps timestamps increasing when a deleted tree is re-created', async () => {
      const { last_modified } = await storage.transaction((session) => session.objects.create(scope, 'a', {}));
      await deleteBelow(storage, scope.parentId);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBeGreaterThan(last_modified);
      expect(
        (await storage.transaction((session) => session.objects.create(scope, 'a', {}))).last_modified,
      ).toBeGreaterThan(last_modified);
    });

    test('moves every scope timestamp below the tree past what it was, even one set in the future (issue 29)', async () => {
      const bucket = `/buckets/${randomUUID()}`;
      const records: Scope = { resourceName: 'record', parentId: `${bucket}/collections/c` };
      const groups: Scope = { resourceName: 'group', parentId: bucket };
      const sibling: Scope = { resourceName: 'record', parentId: `${bucket}x/collections/c` };
      const future = Date.now() + 3_600_000; // a client-supplied last_modified (§5.2)
      await storage.transaction((session) =>
        session.objects.create(records, 'r', { last_modified: future }, { lastModified: future }),
      );
      await storage.transaction(async (session) => {
        await session.objects.create(groups, 'g', {});
        await session.objects.delete(groups, 'g'); // a tombstone is the newest timestamp served
      });
      await storage.transaction((session) => session.objects.create(sibling, 'r', {}));
      const before = await storage.read(async (session) => [
        await session.objects.timestamp(records),
        await session.objects.timestamp(groups),
        await session.objects.timestamp(sibling),
      ]);
      expect(before[0]).toBe(future);

      await deleteBelow(storage, bucket);
      const after = await storage.read(async (session) => [
        await session.objects.timestamp(records),
        await session.objects.timestamp(groups),
        await session.objects.timestamp(sibling),
      ]);
      expect(after[0]).toBeGreaterThan(before[0]!);
      expect(after[1]).toBeGreaterThan(before[1]!);
      expect(after[2]).toBe(before[2]); // outside the tree: untouched
      // Stable until the next write, as any scope timestamp.
      expect(await storage.read((session) => session.objects.timestamp(records))).toBe(after[0]);
      expect(await storage.snapshot((session) => session.objects.timestamp(records))).toBe(after[0]);
    });

    test('in one transaction, writes after a deleteTree are stamped above the bumped scope (a batch that re-creates)', async () => {
      const bucket = `/buckets/${randomUUID()}`;
      const records: Scope = { resourceName: 'record', parentId: `${bucket}/collections/c` };
      await storage.transaction(async (session) => {
        await session.objects.create(records, 'a', {});
        await session.objects.create(records, 'b', {});
      });
      const old = await storage.read((session) => session.objects.timestamp(records));
      const [bumped, written, final] = await storage.transaction(async (session) => {
        await session.objects.create(records, 'c', {}); // the scope is now held by this transaction
        const held = await session.objects.timestamp(records);
        await session.outbox.deleteTree(bucket);
        await session.objects.deleteTree(bucket);
        await session.permissions.deleteTree(bucket, { itself: false });
        const bumped = await session.objects.timestamp(records);
        expect(bumped).toBeGreaterThan(held);
        const written = await session.objects.create(records, 'a', {});
        return [bumped, written.last_modified, await session.objects.timestamp(records)];
      });
      expect(bumped).toBeGreaterThan(old);
      expect(written).toBeGreaterThan(bumped);
      expect(await storage.read((session) => session.objects.timestamp(records))).toBe(final);
      expect(ids(await storage.read((session) => session.objects.list(records, { includeDeleted: true })))).toEqual([
        'a',
      ]);
    });
  });

  section('history scopes', () => {
    const topic = 'history';
    const newBucket = async (id: string = randomUUID()) => {
      await storage.transaction((session) => session.objects.create({ parentId: '', resourceName: 'bucket' }, id, {}));
      return `/buckets/${id}`;
    };
    const historyOf = (bucket: string): Scope => ({ parentId: bucket, resourceName: HISTORY_RESOURCE });
    /** Moves entries `{ n, action }` into the bucket's history, in order. */
    async function append(bucket: string, entries: Array<{ n: number; action: string }>): Promise<void> {
      await storage.transaction((session) =>
        session.outbox.enqueue(
          topic,
          entries.map((entry) => ({ key: bucket, payload: [entry] })),
        ),
      );
      const target = {
        scope: historyOf(bucket),
        whileExists: { scope: { parentId: '', resourceName: 'bucket' }, id: bucket.split('/')[2]! },
      };
      while ((await storage.transaction((session) => session.outbox.moveToScope(topic, bucket, 100, target))) > 0);
    }
    const numbers = (objects: Listed[]) => objects.map((object) => (object as StoredObject).n);
    const oldestFirst: Sort[] = [{ field: 'last_modified', direction: 1 }];

    test('entries are listed, filtered, paged, counted and read like objects', async () => {
      const bucket = await newBucket();
      const scope = historyOf(bucket);
      await append(
        bucket,
        [1, 2, 3, 4, 5].map((n) => ({ n, action: n % 2 ? 'create' : 'update' })),
      );

      const all = await storage.read((session) => session.objects.list(scope, { sorting: oldestFirst }));
      expect(numbers(all)).toEqual([1, 2, 3, 4, 5]);
      expect(new Set(all.map((entry) => entry.id)).size).toBe(5);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(all[4]!.last_modified);
      expect(numbers(await storage.read((session) => session.objects.list(scope, { limit: 2 })))).toEqual([5, 4]);
      const updates: Filter[] = [{ field: 'action', operator: 'eq', value: 'update' }];
      expect(
        numbers(
          await storage.read((session) => session.objects.list(scope, { filters: updates, sorting: oldestFirst })),
        ),
      ).toEqual([2, 4]);
      expect(await storage.read((session) => session.objects.count(scope, updates))).toBe(2);
      expect(await storage.read((session) => session.objects.get(scope, all[2]!.id))).toEqual(all[2]);
    });

    test('deleteAll leaves tombstones at new timestamps, purgeDeleted removes them', async () => {
      const bucket = await newBucket();
      const scope = historyOf(bucket);
      await append(
        bucket,
        [1, 2, 3].map((n) => ({ n, action: n === 2 ? 'update' : 'create' })),
      );
      const before = await storage.read((session) => session.objects.timestamp(scope));

      const tombstones = await storage.transaction((session) =>
        session.objects.deleteAll(scope, { filters: [{ field: 'action', operator: 'eq', value: 'create' }] }),
      );
      expect(tombstones).toHaveLength(2);
      expect(tombstones[0]!.last_modified).toBeGreaterThan(before);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(tombstones[1]!.last_modified);
      expect(numbers(await storage.read((session) => session.objects.list(scope)))).toEqual([2]);
      expect(
        (await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).filter(
          (entry) => entry.deleted,
        ),
      ).toHaveLength(2);
      expect(await storage.transaction((session) => session.objects.purgeDeleted(scope))).toBe(2);
      expect(await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).toHaveLength(1);
    });

    test('deleteTree of a bucket takes its history, not that of a bucket whose id extends its own', async () => {
      const id = randomUUID();
      const [bucket, sibling] = [await newBucket(id), await newBucket(`${id}x`)];
      await append(bucket, [{ n: 1, action: 'create' }]);
      await append(sibling, [{ n: 2, action: 'create' }]);
      await deleteBelow(storage, bucket);
      expect(await storage.read((session) => session.objects.list(historyOf(bucket)))).toEqual([]);
      expect(numbers(await storage.read((session) => session.objects.list(historyOf(sibling))))).toEqual([2]);
    });

    test('create, update and insertMany refuse them: entries come from the outbox only', async () => {
      const scope = historyOf(await newBucket());
      await expect(storage.transaction((session) => session.objects.create(scope, 'e', { n: 1 }))).rejects.toThrow(
        StorageError,
      );
      await expect(storage.transaction((session) => session.objects.update(scope, 'e', { n: 1 }))).rejects.toThrow(
        StorageError,
      );
      await expect(
        storage.transaction((session) => session.objects.insertMany(scope, [{ id: 'e', data: { n: 1 } }])),
      ).rejects.toThrow(StorageError);
      expect(await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).toEqual([]);
    });

    test('import restores entries with their ids and timestamps', async () => {
      const scope = historyOf(await newBucket());
      await storage.transaction((session) =>
        session.objects.import(scope, [
          { id: 'e1', last_modified: 10, n: 1 },
          { id: 'e2', last_modified: 11, n: 2 },
        ]),
      );
      expect(
        await storage.read((session) =>
          session.objects.list(scope, { sorting: [{ field: 'last_modified', direction: 1 }] }),
        ),
      ).toEqual([
        { id: 'e1', last_modified: 10, n: 1 },
        { id: 'e2', last_modified: 11, n: 2 },
      ]);
      expect(await storage.read((session) => session.objects.timestamp(scope))).toBe(11);
    });
  });

  section('purgeDeleted', () => {
    test('removes the tombstones of the scope and counts them', async () => {
      await seed({ a: {}, b: {}, c: {} });
      const other = randomScope();
      await storage.transaction((session) => session.objects.create(other, 'x', {}));
      await storage.transaction((session) => session.objects.delete(other, 'x'));
      await storage.transaction((session) => session.objects.delete(scope, 'a'));
      await storage.transaction((session) => session.objects.delete(scope, 'b'));
      expect(await storage.transaction((session) => session.objects.purgeDeleted(scope))).toBe(2);
      expect(ids(await storage.read((session) => session.objects.list(scope, { includeDeleted: true })))).toEqual([
        'c',
      ]);
      expect(await storage.read((session) => session.objects.list(other, { includeDeleted: true }))).toHaveLength(1);
    });

    test('keeps tombstones not older than `before`', async () => {
      await seed({ a: {}, b: {} });
      const first = await storage.transaction((session) => session.objects.delete(scope, 'a'));
      const second = await storage.transaction((session) => session.objects.delete(scope, 'b'));
      expect(await storage.transaction((session) => session.objects.purgeDeleted(scope, second.last_modified))).toBe(1);
      expect(await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).toEqual([second]);
      expect(first.last_modified).toBeLessThan(second.last_modified);
    });
  });

  section('trim', () => {
    test('hard-deletes the matching objects but the newest `keep`, and counts them', async () => {
      // Created in this order, so a1 is the oldest.
      for (const [id, kind] of [
        ['a1', 'a'],
        ['b1', 'b'],
        ['a2', 'a'],
        ['a3', 'a'],
        ['b2', 'b'],
        ['a4', 'a'],
      ])
        await storage.transaction((session) => session.objects.create(scope, id!, { kind }));
      const other = randomScope();
      await storage.transaction((session) => session.objects.create(other, 'a0', { kind: 'a' }));
      expect(
        await storage.transaction((session) =>
          session.objects.trim(scope, 2, [{ field: 'kind', operator: 'eq', value: 'a' }]),
        ),
      ).toBe(2);
      // The two newest of kind a, every b; no tombstone left behind; other scopes untouched.
      expect(
        ids(await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).sort(),
      ).toEqual(['a3', 'a4', 'b1', 'b2']);
      expect(ids(await storage.read((session) => session.objects.list(other)))).toEqual(['a0']);
      // Nothing more to trim; fewer than `keep` matches is nothing to trim either.
      expect(
        await storage.transaction((session) =>
          session.objects.trim(scope, 2, [{ field: 'kind', operator: 'eq', value: 'a' }]),
        ),
      ).toBe(0);
      expect(await storage.transaction((session) => session.objects.trim(scope, 5))).toBe(0);
      expect(await storage.transaction((session) => session.objects.trim(scope, 1))).toBe(3);
      expect(ids(await storage.read((session) => session.objects.list(scope, { includeDeleted: true })))).toEqual([
        'a4',
      ]);
    });

    test('leaves tombstones alone and refuses to keep nothing', async () => {
      await seed({ a: {}, b: {}, c: {} });
      const tombstone = await storage.transaction((session) => session.objects.delete(scope, 'a'));
      expect(await storage.transaction((session) => session.objects.trim(scope, 1))).toBe(1);
      // Newest first: the tombstone of a is newer than c.
      expect(await storage.read((session) => session.objects.list(scope, { includeDeleted: true }))).toEqual([
        tombstone,
        expect.objectContaining({ id: 'c' }),
      ]);
      await expect(storage.transaction((session) => session.objects.trim(scope, 0))).rejects.toThrow(StorageError);
    });
  });

  section('security', () => {
    const hostile = `a'); DROP TABLE x; --`;

    test('hostile field names in filters and sorts are plain paths', async () => {
      await storage.transaction((session) => session.objects.create(scope, 'a', { [hostile]: 1, 'b"c': 2, 'd\\e': 3 }));
      await storage.transaction((session) => session.objects.create(scope, 'b', {}));
      const sorting: Sort[] = [
        { field: hostile, direction: 1 },
        { field: 'b"c', direction: -1 },
        { field: 'last_modified', direction: 1 },
      ];
      for (const operator of ['eq', 'not', 'gt', 'in', 'like', 'has', 'contains', 'contains_any'] as const) {
        const value =
          operator === 'in' || operator.startsWith('contains')
            ? [1]
            : operator === 'like'
              ? `'`
              : operator === 'has'
                ? true
                : 1;
        await storage.read((session) =>
          session.objects.list(scope, {
            filters: [{ field: hostile, operator, value }],
            sorting,
            after: { [hostile]: 1 },
          }),
        );
      }
      expect(
        ids(
          await storage.read((session) =>
            session.objects.list(scope, { filters: [{ field: hostile, operator: 'eq', value: 1 }] }),
          ),
        ),
      ).toEqual(['a']);
      expect(
        ids(
          await storage.read((session) =>
            session.objects.list(scope, { filters: [{ field: 'd\\e', operator: 'eq', value: 3 }] }),
          ),
        ),
      ).toEqual(['a']);
      expect(ids(await storage.read((session) => session.objects.list(scope, { sorting })))).toEqual(['a', 'b']);
      expect(
        await storage.read((session) => session.objects.count(scope, [{ field: 'b"c', operator: 'min', value: 2 }])),
      ).toBe(2);
    });

    test('hostile ids, values and URIs are stored verbatim', async () => {
      const odd: Scope = { resourceName: `r'; --`, parentId: `/buckets/${randomUUID()}'"\\` };
      await storage.transaction((session) => session.objects.create(odd, hostile, { v: hostile }));
      expect(await storage.read((session) => session.objects.get(odd, hostile))).toMatchObject({
        id: hostile,
        v: hostile,
      });
      expect(
        ids(
          await storage.read((session) =>
            session.objects.list(odd, { filters: [{ field: 'v', operator: 'like', value: `'); drop` }] }),
          ),
        ),
      ).toEqual([hostile]);
      await storage.transaction((session) =>
        session.permissions.set(`${odd.parentId}/${hostile}`, { [hostile]: [hostile] }),
      );
      expect(
        (await storage.read((session) => session.permissions.get([`${odd.parentId}/${hostile}`]))).get(
          `${odd.parentId}/${hostile}`,
        ),
      ).toEqual({
        [hostile]: [hostile],
      });
    });
  });
}
