/** History scopes: append-only logs filled from the outbox, kept apart from the other objects (types.ts). */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { StorageError } from '../errors.js';
import { HISTORY_RESOURCE, type Filter, type Scope, type Sort, type Storage, type StoredObject } from '../types.js';
import { deleteBelow, type Listed, type Suite } from './context.js';

export function describeHistoryScopes(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  suite.beforeEach((current) => ({ storage } = current));

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
}
