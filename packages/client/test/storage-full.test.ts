/**
 * A full storage (QuotaExceededError) while syncing and while writing locally: a typed
 * `StoreError` (QUIRE_ERR_STORE_QUOTA), a `quota` event, and nothing lost — the pages already
 * stored and their checkpoint, the outbox, the rolled-back write — so the next sync resumes.
 * IndexedDB is fake-indexeddb here, made to refuse writes the way a full origin does (the
 * Chromium test does it with a real quota: browser.test.ts).
 */
import { IDBObjectStore } from 'fake-indexeddb';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { StoreError, type StorageFullEvent } from '../src/index.js';
import { createCollection, makeClient, seed, uniqueName } from './support/server.js';

const url = inject('quireUrl');

/** From the `after`-th write of a record on, every write of a record fails as a full disk does. */
function fillStorage(after: number): () => void {
  const put = IDBObjectStore.prototype.put;
  const add = IDBObjectStore.prototype.add;
  let writes = 0;
  const refuse = function (this: IDBObjectStore, original: typeof put) {
    return function (this: IDBObjectStore, ...args: Parameters<typeof put>) {
      if (this.name === 'records' && ++writes > after)
        throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
      return original.apply(this, args);
    };
  };
  IDBObjectStore.prototype.put = refuse.call(null as never, put) as typeof put;
  IDBObjectStore.prototype.add = refuse.call(null as never, add) as typeof add;
  return () => {
    IDBObjectStore.prototype.put = put;
    IDBObjectStore.prototype.add = add;
  };
}

let restore: (() => void) | null = null;
afterEach(() => {
  restore?.();
  restore = null;
});

describe('storage full', () => {
  it('sync rejects with QUIRE_ERR_STORE_QUOTA, keeps what it stored and the outbox, resumes with room', async () => {
    const bucket = uniqueName('full');
    await createCollection(url, bucket, 'items');
    await seed(url, bucket, 'items', 300, (i) => ({ id: `r${i}`, n: i }));
    const client = makeClient(url);
    const items = client.bucket(bucket).collection('items', { pageSize: 100 });
    await items.create({ id: 'draft', n: -1 });
    const events: StorageFullEvent[] = [];
    items.on('quota', (event) => events.push(event));

    restore = fillStorage(150); // room for the first page only
    const failure = await items.sync().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).toMatchObject({ code: 'QUIRE_ERR_STORE_QUOTA' });
    await expect.poll(() => events.length).toBe(1);
    expect(events[0]!.error.code).toBe('QUIRE_ERR_STORE_QUOTA');
    expect(items.status.error).toMatchObject({ code: 'QUIRE_ERR_STORE_QUOTA' });
    expect(await items.count()).toBe(101); // the first page and the draft: the failed page rolled back whole
    expect(await items.pending()).toBe(1);

    // A local write while full: refused, typed, nothing half-written.
    const refused = await items.create({ id: 'late', n: -2 }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'QUIRE_ERR_STORE_QUOTA' });
    expect(await items.get('late')).toBeUndefined();
    expect(await items.pending()).toBe(1);

    restore();
    restore = null;
    const result = await items.sync();
    expect(result).toMatchObject({ ok: true, pushed: 1 });
    expect(await items.count()).toBe(301);
    expect(await items.pending()).toBe(0);
    expect(items.status.error).toBeNull();
    await client.close();
  });
});
