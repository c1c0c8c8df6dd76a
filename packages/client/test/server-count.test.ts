/**
 * The count the readability check compares with the server's `Total-Objects` is kept by the
 * transactions that change it (no-change polls never count the replica). Through local writes,
 * pulls, pushes, replays, conflicts under each strategy and settled manual conflicts, the kept
 * count must equal a recount, and the server's count once in sync.
 */
import Dexie from 'dexie';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import { describe, expect, inject, it } from 'vitest';
import type { Collection } from '../src/index.js';
import { createCollection, makeClient, raw, seed, uniqueName } from './support/server.js';

const url = inject('quireUrl');
type Item = { n: number };

/** The kept count and a recount, read from the replica's database as another program would. */
async function counts(idb: IDBFactory, dbName: string): Promise<{ kept: number | null; actual: number }> {
  const db = new Dexie(dbName, { indexedDB: idb, IDBKeyRange });
  await db.open();
  try {
    const kept = ((await db.table('$meta').get('server-count')) as { value?: number } | undefined)?.value ?? null;
    const outbox = (await db.table('$outbox').toArray()) as { op: string }[];
    const actual =
      (await db.table('records').count()) -
      outbox.filter((e) => e.op === 'create').length +
      outbox.filter((e) => e.op === 'delete').length;
    return { kept, actual };
  } finally {
    db.close();
  }
}

async function serverCount(bucket: string): Promise<number> {
  return Number((await raw(url, 'HEAD', `/buckets/${bucket}/collections/items/records`)).headers.get('total-objects'));
}

describe('the kept server count', () => {
  it('matches a recount and the server through every kind of sync write', async () => {
    const bucket = uniqueName('count');
    await createCollection(url, bucket, 'items');
    await seed(url, bucket, 'items', 30, (i) => ({ id: `s${i}`, n: i }));
    const idb = new IDBFactory();
    const client = makeClient(url, { idb });
    const dbName = `quire:${bucket}/items`;
    const check = async (items: Collection<Item>, synced: boolean) => {
      const { kept, actual } = await counts(idb, dbName);
      if (synced) expect(kept).not.toBeNull();
      if (kept !== null) expect(kept).toBe(actual);
      if (synced) expect(await items.count()).toBe(await serverCount(bucket));
    };
    const items = client.bucket(bucket).collection<Item>('items', { strategy: 'client-wins' });
    await items.sync(); // cold: unknown, then counted by the check
    await check(items, true);
    expect((await counts(idb, dbName)).kept).toBe(30);

    // Local writes change nothing; their push does.
    await items.create({ id: 'l1', n: 100 });
    await items.create({ id: 'l2', n: 101 });
    await items.update('s1', { n: -1 });
    await items.delete('s2');
    await items.delete('l2');
    await check(items, false);
    await items.sync();
    await check(items, true);

    // Remote creations, updates and deletions pulled; a conflict won by the client; a deletion
    // on both sides.
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/r1`, { data: { n: 200 } });
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/s3`, { data: { n: 300 } });
    await raw(url, 'DELETE', `/buckets/${bucket}/collections/items/records/s4`);
    await raw(url, 'DELETE', `/buckets/${bucket}/collections/items/records/s5`);
    await items.update('s3', { n: 301 });
    await items.delete('s5');
    await items.delete('s6');
    await check(items, false);
    const result = await items.sync();
    expect(result.conflicts.length).toBeGreaterThan(0);
    await check(items, true);

    // Manual conflicts, settled both ways.
    const manual = client.bucket(bucket).collection<Item>('items');
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/s7`, { data: { n: 700 } });
    await raw(url, 'DELETE', `/buckets/${bucket}/collections/items/records/s8`);
    await manual.update('s7', { n: 701 });
    await manual.update('s8', { n: 801 });
    const deferred = await manual.sync({ strategy: 'manual' });
    expect(deferred.conflicts.map((conflict) => conflict.resolution)).toEqual(['manual', 'manual']);
    await check(manual, false);
    await manual.resolve('s7', 'remote');
    await manual.resolve('s8', 'local');
    await check(manual, false);
    await manual.sync();
    await check(manual, true);
    await client.close();
  });
});
