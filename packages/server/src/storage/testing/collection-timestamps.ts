/**
 * The change monitor's reads (`objects.collectionTimestamps`, `permissions.containersOf`): live
 * collections with their records timestamps, in order, by bucket or by timestamp; the buckets and
 * collections a set of principals may read, records' ACEs left out.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { CollectionTimestamp, Storage } from '../types.js';
import { sleep, type Suite } from './context.js';

export function describeCollectionTimestamps(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  suite.beforeEach((current) => ({ storage } = current));

  /** Two buckets of random ids: `a` with collections c1 (records), c2 (none), c3 (deleted), `b` with c1. */
  async function seed() {
    const a = `a${randomUUID()}`;
    const b = `b${randomUUID()}`;
    const stamps: Record<string, number> = {};
    for (const [bucket, collection] of [
      [a, 'c1'],
      [a, 'c2'],
      [a, 'c3'],
      [b, 'c1'],
    ] as const) {
      await storage.transaction((session) =>
        session.objects.create({ resourceName: 'collection', parentId: `/buckets/${bucket}` }, collection, {}),
      );
    }
    // Timestamps of different scopes may be equal: a few milliseconds apart, they are not.
    stamps.a1 = (
      await storage.transaction((session) =>
        session.objects.create({ resourceName: 'record', parentId: `/buckets/${a}/collections/c1` }, 'r', {}),
      )
    ).last_modified;
    await sleep(3);
    stamps.b1 = (
      await storage.transaction((session) =>
        session.objects.create({ resourceName: 'record', parentId: `/buckets/${b}/collections/c1` }, 'r', {}),
      )
    ).last_modified;
    await sleep(3);
    stamps.a3 = (
      await storage.transaction((session) =>
        session.objects.create({ resourceName: 'record', parentId: `/buckets/${a}/collections/c3` }, 'r', {}),
      )
    ).last_modified;
    await storage.transaction((session) =>
      session.objects.delete({ resourceName: 'collection', parentId: `/buckets/${a}` }, 'c3'),
    );
    return { a, b, stamps };
  }

  const keys = (rows: CollectionTimestamp[]) => rows.map((row) => `${row.bucket.slice(0, 1)}/${row.collection}`);

  section('collection timestamps', () => {
    test('lists the live collections of buckets and single collections, with their records timestamps', async () => {
      const { a, b, stamps } = await seed();
      const rows = await storage.read((session) =>
        session.objects.collectionTimestamps({
          within: {
            buckets: [a],
            collections: [
              [b, 'c1'],
              [a, 'c1'],
              [b, 'nope'],
            ],
          },
        }),
      );
      // A collection without records has no timestamp yet: null, first in ascending order.
      expect(rows).toEqual([
        { bucket: a, collection: 'c2', lastModified: null },
        { bucket: a, collection: 'c1', lastModified: stamps.a1 },
        { bucket: b, collection: 'c1', lastModified: stamps.b1 },
      ]);
      const desc = await storage.read((session) =>
        session.objects.collectionTimestamps({ within: { buckets: [a, b], collections: [] }, order: 'desc', limit: 2 }),
      );
      expect(keys(desc)).toEqual(['b/c1', 'a/c1']);
      // Keyset pages, in both orders.
      const next = await storage.read((session) =>
        session.objects.collectionTimestamps({
          within: { buckets: [a, b], collections: [] },
          order: 'desc',
          after: desc[1],
          limit: 2,
        }),
      );
      expect(keys(next)).toEqual(['a/c2']);
      const ascending = await storage.read((session) =>
        session.objects.collectionTimestamps({
          within: { buckets: [a, b], collections: [] },
          after: { bucket: a, collection: 'c2', lastModified: null },
        }),
      );
      expect(keys(ascending)).toEqual(['a/c1', 'b/c1']);
      expect(
        await storage.read((session) =>
          session.objects.collectionTimestamps({ within: { buckets: [], collections: [] } }),
        ),
      ).toEqual([]);
    });

    test('with since, reads by timestamp what changed after it, within the buckets or collections named', async () => {
      const { a, b, stamps } = await seed();
      const within = { buckets: [a, b], collections: [] };
      const since = await storage.read((session) =>
        session.objects.collectionTimestamps({ within, since: stamps.a1! }),
      );
      expect(since).toEqual([{ bucket: b, collection: 'c1', lastModified: stamps.b1 }]);
      const upTo = await storage.read((session) =>
        session.objects.collectionTimestamps({ within, since: 0, atMost: stamps.a1! }),
      );
      expect(keys(upTo)).toEqual(['a/c1']);
      const named = await storage.read((session) =>
        session.objects.collectionTimestamps({ within: { buckets: [], collections: [[b, 'c1']] }, since: 0 }),
      );
      expect(keys(named)).toEqual(['b/c1']);
      // Everyone's, newest first, a page at a time (what the monitor walks down from `_since`).
      const newest = await storage.read((session) =>
        session.objects.collectionTimestamps({ within: null, atMost: stamps.b1!, order: 'desc', limit: 1 }),
      );
      expect(newest).toEqual([{ bucket: b, collection: 'c1', lastModified: stamps.b1 }]);
      await sleep(3);
      const written = await storage.transaction((session) =>
        session.objects.create({ resourceName: 'record', parentId: `/buckets/${a}/collections/c2` }, 'r', {}),
      );
      const after = await storage.read((session) =>
        session.objects.collectionTimestamps({ within, since: stamps.b1! }),
      );
      expect(after).toEqual([{ bucket: a, collection: 'c2', lastModified: written.last_modified }]);
    });

    test('heldBy reads the collections of the buckets and the single collections principals hold', async () => {
      const { a, b, stamps } = await seed();
      const other = `o${randomUUID()}`;
      await storage.transaction((session) =>
        session.objects.create({ resourceName: 'collection', parentId: `/buckets/${other}` }, 'x', {}),
      );
      const principal = `p-${randomUUID()}`;
      const heldBy = { principals: [principal, 'nobody'], permissions: ['read', 'write'] };
      const read = (order?: 'asc' | 'desc') =>
        storage.read((session) => session.objects.collectionTimestamps({ within: null, heldBy, order }));
      expect(await read()).toEqual([]);
      await storage.transaction(async (session) => {
        await session.permissions.set(`/buckets/${a}`, { write: [principal] });
        // Held again inside a held bucket (listed once), and outside it, by two permissions.
        await session.permissions.set(`/buckets/${a}/collections/c1`, { read: [principal] });
        await session.permissions.set(`/buckets/${b}/collections/c1`, { read: [principal], write: [principal] });
        // Not readable that way: another permission, a group, a record, a collection gone.
        await session.permissions.set(`/buckets/${other}/collections/x`, { 'record:create': [principal] });
        await session.permissions.set(`/buckets/${other}/groups/collections`, { write: [principal] });
        await session.permissions.set(`/buckets/${other}/collections/x/records/r`, { write: [principal] });
        await session.permissions.set(`/buckets/${other}/collections/gone`, { write: [principal] });
      });
      expect(await read()).toEqual([
        { bucket: a, collection: 'c2', lastModified: null },
        { bucket: a, collection: 'c1', lastModified: stamps.a1 },
        { bucket: b, collection: 'c1', lastModified: stamps.b1 },
      ]);
      expect(keys(await read('desc'))).toEqual(['b/c1', 'a/c1', 'a/c2']);
    });

    test(
      'containersOf gives the buckets and collections where principals hold a permission, not records or ' + 'groups',
      async () => {
        const bucket = `/buckets/${randomUUID()}`;
        const principal = `p-${randomUUID()}`;
        await storage.transaction(async (session) => {
          await session.permissions.set(bucket, { write: [principal] });
          await session.permissions.set(`${bucket}/collections/c`, { read: [principal, 'other'] });
          await session.permissions.set(`${bucket}/collections/d`, { 'record:create': [principal] });
          await session.permissions.set(`${bucket}/groups/g`, { write: [principal] });
          await session.permissions.set(`${bucket}/collections/c/records/r`, { write: [principal] });
        });
        const uris = await storage.read((session) =>
          session.permissions.containersOf([principal, 'nobody'], ['read', 'write']),
        );
        expect(uris.sort()).toEqual([bucket, `${bucket}/collections/c`]);
        expect(
          await storage.read((session) => session.permissions.containersOf(['nobody'], ['read', 'write'])),
        ).toEqual([]);
      },
    );
  });
}
