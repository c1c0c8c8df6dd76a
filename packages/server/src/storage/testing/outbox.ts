/**
 * The outbox facet: items stored with a transaction, moved into a scope after it.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { Storage, StoredObject } from '../types.js';
import { deleteBelow, type Suite } from './context.js';

export function describeOutbox(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  suite.beforeEach((current) => ({ storage } = current));

  section('outbox', () => {
    /** Where `moveToScope` stores the entries of `bucket` (a history-like scope). */
    const targetOf = (bucket: string) => ({
      scope: { parentId: bucket, resourceName: 'entries' },
      whileExists: { scope: { parentId: '', resourceName: 'bucket' }, id: bucket.split('/')[2]! },
    });
    const entry = (uri: string, n: number) => ({ uri, n });
    const newBucket = async () => {
      const id = randomUUID();
      await storage.transaction((session) => session.objects.create({ parentId: '', resourceName: 'bucket' }, id, {}));
      return `/buckets/${id}`;
    };

    test('moveToScope stores the objects of the items in order, at increasing timestamps', async () => {
      const topic = `t-${randomUUID()}`;
      const bucket = await newBucket();
      const target = targetOf(bucket);
      const before = await storage.transaction((session) => session.objects.create(target.scope, 'existing', {}));
      await storage.transaction(async (session) => {
        await session.outbox.enqueue(topic, [
          { key: bucket, payload: [entry('/r1', 1), entry('/c', 2)] },
          { key: `${bucket}x`, payload: [entry('/other', 0)] },
        ]);
      });
      await storage.transaction((session) =>
        session.outbox.enqueue(topic, [{ key: bucket, payload: [{ uri: '/g', n: 3, nested: { list: [1, 'two'] } }] }]),
      );

      expect(await storage.read((session) => session.outbox.keys(topic))).toEqual([bucket, `${bucket}x`].sort());
      expect(await storage.read((session) => session.outbox.keys(topic, bucket))).toEqual([bucket]);
      expect(await storage.read((session) => session.outbox.keys(topic, `${bucket}y`))).toEqual([]);
      expect(await storage.transaction((session) => session.outbox.moveToScope(topic, bucket, 10, target))).toBe(2);
      expect(await storage.read((session) => session.outbox.keys(topic))).toEqual([`${bucket}x`]);

      const stored = (
        await storage.read((session) =>
          session.objects.list(target.scope, { sorting: [{ field: 'last_modified', direction: 1 }] }),
        )
      ).filter((object) => object.id !== 'existing');
      expect(stored.map((object) => (object as StoredObject).n)).toEqual([1, 2, 3]);
      expect(stored[0]!.last_modified).toBeGreaterThan(before.last_modified);
      expect(new Set(stored.map((object) => object.last_modified)).size).toBe(3);
      expect(new Set(stored.map((object) => object.id)).size).toBe(3);
      expect(await storage.read((session) => session.objects.timestamp(target.scope))).toBe(stored[2]!.last_modified);
      expect(stored[2]).toMatchObject({ uri: '/g', n: 3, nested: { list: [1, 'two'] } });
      expect(await storage.transaction((session) => session.outbox.moveToScope(topic, bucket, 10, target))).toBe(0);
    });

    test('moveToScope takes at most limit items, oldest first, and gives them back on rollback', async () => {
      const topic = `t-${randomUUID()}`;
      const bucket = await newBucket();
      const target = targetOf(bucket);
      await storage.transaction((session) =>
        session.outbox.enqueue(
          topic,
          [1, 2, 3, 4, 5].map((n) => ({ key: bucket, payload: [entry(`/e${n}`, n)] })),
        ),
      );
      const storedNumbers = async () =>
        (
          await storage.read((session) =>
            session.objects.list(target.scope, { sorting: [{ field: 'last_modified', direction: 1 }] }),
          )
        ).map((object) => (object as StoredObject).n);
      await expect(
        storage.transaction(async (session) => {
          expect(await session.outbox.moveToScope(topic, bucket, 2, target)).toBe(2);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await storedNumbers()).toEqual([]);
      expect(await storage.transaction((session) => session.outbox.moveToScope(topic, bucket, 3, target))).toBe(3);
      expect(await storedNumbers()).toEqual([1, 2, 3]);
      expect(await storage.transaction((session) => session.outbox.moveToScope(topic, bucket, 3, target))).toBe(2);
      expect(await storedNumbers()).toEqual([1, 2, 3, 4, 5]);
      expect(await storage.read((session) => session.outbox.keys(topic))).toEqual([]);
    });

    test('moveToScope drops the items of an object that is gone', async () => {
      const topic = `t-${randomUUID()}`;
      const bucket = await newBucket();
      const target = targetOf(bucket);
      await storage.transaction((session) =>
        session.outbox.enqueue(topic, [{ key: bucket, payload: [entry('/e', 1)] }]),
      );
      await storage.transaction((session) => session.objects.delete(target.whileExists.scope, target.whileExists.id));
      expect(await storage.transaction((session) => session.outbox.moveToScope(topic, bucket, 10, target))).toBe(1);
      expect(await storage.read((session) => session.objects.list(target.scope))).toEqual([]);
      expect(await storage.read((session) => session.outbox.keys(topic))).toEqual([]);
    });

    test('an item is enqueued with its transaction only', async () => {
      const topic = `t-${randomUUID()}`;
      await expect(
        storage.transaction(async (session) => {
          await session.outbox.enqueue(topic, [{ key: 'k', payload: [] }]);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await storage.read((session) => session.outbox.keys(topic))).toEqual([]);
    });

    test('deleteTree drops the items keyed by the tree, flush drops every item', async () => {
      const topic = `t-${randomUUID()}`;
      const bucket = `/buckets/${randomUUID()}`;
      await storage.transaction((session) =>
        session.outbox.enqueue(topic, [
          { key: bucket, payload: 'bucket' },
          { key: `${bucket}/collections/c`, payload: 'child' },
          { key: `${bucket}x`, payload: 'sibling' },
        ]),
      );
      await deleteBelow(storage, bucket);
      expect(await storage.read((session) => session.outbox.keys(topic))).toEqual([`${bucket}x`]);
      await storage.flush();
      expect(await storage.read((session) => session.outbox.keys(topic))).toEqual([]);
    });
  });
}
