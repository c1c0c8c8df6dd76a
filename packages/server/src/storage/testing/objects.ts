/**
 * The objects facet: CRUD, tombstones, counts, hostile input. Its timestamps, deletions and
 * history scopes have files of their own (object-timestamps.ts, object-deletions.ts,
 * history-scopes.ts), its listings too (object-filters.ts, objects-listing.ts).
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { ObjectNotFoundError, UnicityError } from '../errors.js';
import type { Scope, Sort, Storage } from '../types.js';
import { ids, randomScope, seedObjects, type Suite } from './context.js';

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
