/**
 * Several tabs of one app (two clients over one IndexedDB): one sync at a time through the Web
 * Locks path (an injected lock manager) and the IndexedDB lease fallback, no duplicated uploads,
 * no lost writes, and changes visible in the other tab (BroadcastChannel and live queries).
 */
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, inject, it } from 'vitest';
import type { FetchLike, LockManagerLike } from '../src/index.js';
import { createCollection, makeClient, raw, uniqueName } from './support/server.js';

const url = inject('quireUrl');

type Item = { n: number };

/** A minimal Web Locks implementation (exclusive mode) standing in for `navigator.locks`. */
function memoryLockManager(): LockManagerLike & { maxHeld: number } {
  const queues = new Map<string, Promise<unknown>>();
  let held = 0;
  const manager = {
    maxHeld: 0,
    request<T>(name: string, _options: { mode: 'exclusive' }, fn: () => Promise<T>): Promise<T> {
      const previous = queues.get(name) ?? Promise.resolve();
      const run = previous.catch(() => {}).then(async () => {
        held++;
        manager.maxHeld = Math.max(manager.maxHeld, held);
        try {
          return await fn();
        } finally {
          held--;
        }
      });
      queues.set(name, run);
      return run;
    },
  };
  return manager;
}

/** Counts record sub-requests sent through /batch, and the syncs running at once. */
function countingFetch(counter: { subRequests: number; ids: string[] }): FetchLike {
  return async (input, init) => {
    if (new URL(input).pathname.endsWith('/batch')) {
      const body = JSON.parse(String(init.body)) as { requests: { path: string }[] };
      counter.subRequests += body.requests.length;
      counter.ids.push(...body.requests.map((request) => request.path.split('/').pop()!));
    }
    return fetch(input, init);
  };
}

for (const mode of ['web-locks', 'indexeddb-lease'] as const) {
  describe(`two tabs, ${mode}`, () => {
    it('concurrent syncs run one at a time and upload each change once', async () => {
      const bucket = uniqueName('t');
      await createCollection(url, bucket, 'items');
      const idb = new IDBFactory();
      const counter = { subRequests: 0, ids: [] as string[] };
      const manager = mode === 'web-locks' ? memoryLockManager() : null;
      let running = 0;
      let maxRunning = 0;
      const fetchFn: FetchLike = async (input, init) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        try {
          return await countingFetch(counter)(input, init);
        } finally {
          running--;
        }
      };
      const tabA = makeClient(url, { idb, fetch: fetchFn, lockManager: manager });
      const tabB = makeClient(url, { idb, fetch: fetchFn, lockManager: manager });
      const a = tabA.bucket(bucket).collection<Item>('items');
      const b = tabB.bucket(bucket).collection<Item>('items');
      for (let i = 0; i < 20; i++) await (i % 2 ? a : b).create({ id: `i${i}`, n: i });
      const results = await Promise.all([a.sync(), b.sync(), a.sync(), b.sync()]);
      expect(results.every((result) => result.ok)).toBe(true);
      expect(results.reduce((sum, result) => sum + result.pushed, 0)).toBe(20);
      expect(counter.subRequests).toBe(20);
      expect(new Set(counter.ids).size).toBe(20);
      if (manager) expect(manager.maxHeld).toBe(1);
      const head = await raw(url, 'HEAD', `/buckets/${bucket}/collections/items/records`);
      expect(head.headers.get('total-objects')).toBe('20');
      expect(await a.pending()).toBe(0);
      await Promise.all([tabA.close(), tabB.close()]);
    });
  });
}

describe('changes reach the other tab', () => {
  it('emits change events in the other tab and refreshes its live queries', async () => {
    const bucket = uniqueName('t');
    const idb = new IDBFactory();
    const tabA = makeClient(url, { idb });
    const tabB = makeClient(url, { idb });
    const a = tabA.bucket(bucket).collection<Item>('items', { indexes: ['n'] });
    const b = tabB.bucket(bucket).collection<Item>('items', { indexes: ['n'] });
    await b.count();
    // Changes close together may arrive in one event: count ids, not events.
    const received: string[] = [];
    b.on('change', (event) => received.push(...event.changes.map((c) => `${event.source}:${c.id}`)));
    const seen: number[][] = [];
    const subscription = b.watch({ index: 'n' }).subscribe({ next: (records) => seen.push(records.map((r) => r.n)) });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await a.create({ id: 'x', n: 1 });
    await a.create({ id: 'y', n: 2 });
    await expect.poll(() => received, { timeout: 10_000 }).toEqual(['tab:x', 'tab:y']);
    await expect.poll(() => seen.at(-1), { timeout: 10_000 }).toEqual([1, 2]);
    subscription.unsubscribe();
    await Promise.all([tabA.close(), tabB.close()]);
  });

  it('a lease left by a crashed tab expires and the next tab syncs', async () => {
    const bucket = uniqueName('t');
    await createCollection(url, bucket, 'items');
    const idb = new IDBFactory();
    const tab = makeClient(url, { idb, lockManager: null });
    const items = tab.bucket(bucket).collection<Item>('items');
    await items.create({ id: 'z', n: 0 });
    // A dead tab's lease that expires in 300 ms.
    const { default: Dexie } = await import('dexie');
    const { IDBKeyRange } = await import('fake-indexeddb');
    const raw = new Dexie(`quire:${bucket}/items`, { indexedDB: idb, IDBKeyRange });
    await raw.open();
    await raw.table('$locks').put({ name: `quire-sync:quire:${bucket}/items`, owner: 'dead-tab', expires: Date.now() + 300 });
    raw.close();
    const started = Date.now();
    expect((await items.sync()).pushed).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await tab.close();
  });
});
