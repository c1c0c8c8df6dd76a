/**
 * Several tabs of one app (two clients over one IndexedDB): one sync at a time through the Web
 * Locks path (an injected lock manager) and the IndexedDB lease fallback, no duplicated uploads,
 * no lost writes, and changes visible in the other tab (BroadcastChannel and live queries).
 * With auto-sync, only one tab (the leader) pulls and pushes; the others follow.
 */
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, inject, it } from 'vitest';
import { createManualOnlineSource, type FetchLike } from '../src/index.js';
import { memoryLockManager } from './support/locks.js';
import { createCollection, makeClient, raw, uniqueName } from './support/server.js';

const url = inject('quireUrl');

type Item = { n: number };

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
    await raw
      .table('$locks')
      .put({ name: `quire-sync:quire:${bucket}/items`, owner: 'dead-tab', expires: Date.now() + 300 });
    raw.close();
    const started = Date.now();
    expect((await items.sync()).pushed).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await tab.close();
  });
});

/** Requests to a collection's records (pulls, HEADs, batches naming it), per tab. */
function recordRequests(pattern: RegExp): { fetch: FetchLike; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    fetch: (input, init) => {
      const path = new URL(input).pathname;
      if (pattern.test(path) || (path.endsWith('/batch') && pattern.test(String(init.body))))
        calls.push(`${init.method ?? 'GET'} ${path}`);
      return fetch(input, init);
    },
  };
}

for (const mode of ['web-locks', 'indexeddb-lease'] as const) {
  describe(`auto-sync in three tabs, ${mode}`, () => {
    it('only the leading tab pulls and pushes; the others follow, and one takes over when it closes', async () => {
      const bucket = uniqueName('lead');
      await createCollection(url, bucket, 'items');
      const idb = new IDBFactory();
      const manager = mode === 'web-locks' ? memoryLockManager() : null;
      const online = createManualOnlineSource(true);
      const tabs = [0, 1, 2].map(() => {
        const requests = recordRequests(/\/collections\/items\/records/);
        const client = makeClient(url, { idb, fetch: requests.fetch, lockManager: manager, online });
        return { client, requests, items: client.bucket(bucket).collection<Item>('items') };
      });
      const [first, second, third] = tabs as [(typeof tabs)[0], (typeof tabs)[0], (typeof tabs)[0]];
      for (const tab of tabs) await tab.items.startAutoSync({ intervalMs: 0, debounceMs: 50, online });
      const leaders = () => tabs.filter((tab) => tab.items.status.autoSync === 'leader');
      await expect.poll(() => leaders().length, { timeout: 10_000 }).toBe(1);
      expect(tabs.filter((tab) => tab.items.status.autoSync === 'follower')).toHaveLength(2);
      const leader = leaders()[0]!;
      // Every tab knows how the leader's first sync went.
      await expect
        .poll(() => tabs.every((tab) => tab.items.status.lastResult?.ok === true), { timeout: 10_000 })
        .toBe(true);
      for (const tab of tabs) if (tab !== leader) expect(tab.requests.calls).toEqual([]);

      // A remote change (announced by the change stream): pulled by the leader alone, seen by every tab.
      await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/remote`, { data: { n: 1 } });
      for (const tab of tabs)
        await expect.poll(async () => (await tab.items.get('remote'))?.n, { timeout: 5000 }).toBe(1);

      // A follower writes: the leader pushes it, once.
      const follower = tabs.find((tab) => tab !== leader)!;
      await follower.items.create({ id: 'from-follower', n: 2 });
      await expect
        .poll(
          async () => (await raw(url, 'GET', `/buckets/${bucket}/collections/items/records/from-follower`)).status,
          { timeout: 5000 },
        )
        .toBe(200);
      await expect.poll(() => follower.items.pending(), { timeout: 5000 }).toBe(0);
      for (const tab of tabs) if (tab !== leader) expect(tab.requests.calls).toEqual([]);

      // The leader closes: one of the others takes over (and syncs at start).
      await leader.client.close();
      const rest = tabs.filter((tab) => tab !== leader);
      await expect
        .poll(() => rest.filter((tab) => tab.items.status.autoSync === 'leader').length, { timeout: 15_000 })
        .toBe(1);
      const next = rest.find((tab) => tab.items.status.autoSync === 'leader')!;
      await expect.poll(() => next.requests.calls.length, { timeout: 10_000 }).toBeGreaterThan(0);
      expect(rest.find((tab) => tab !== next)!.requests.calls).toEqual([]);
      expect([first, second, third]).toContain(next);
      await Promise.all(rest.map((tab) => tab.client.close()));
    });
  });
}
