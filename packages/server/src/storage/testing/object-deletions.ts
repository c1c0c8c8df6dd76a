/**
 * The objects facet's deletions of many objects: `deleteAll`, `purgeDeleted`, `trim`, and a
 * bucket's or collection's cascade (`deleteTree`), tested as the resource engine makes it: one
 * call per facet, in one transaction.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { StorageError } from '../errors.js';
import type { Scope, Sort, Storage } from '../types.js';
import { deleteBelow, ids, randomScope, seedObjects, type Suite } from './context.js';

export function describeObjectDeletions(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  let scope: Scope;
  suite.beforeEach((current) => ({ storage, scope } = current));
  /** Creates objects `{ id: data }` in order (so increasing timestamps). */
  const seed = (objects: Record<string, Record<string, unknown>>, target = scope) =>
    seedObjects(storage, target, objects);

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

    const movesPast =
      'moves every scope timestamp below the tree past what it was, even one set in the future (issue 29)';
    test(movesPast, async () => {
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

    const reCreated =
      'in one transaction, writes after a deleteTree are stamped above the bumped scope (a batch that re-creates)';
    test(reCreated, async () => {
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
}
