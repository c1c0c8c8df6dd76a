/**
 * Interruptions and injected faults: connections cut mid-page and mid-batch, a tab closed during a
 * cold sync, 412 between pages (real and injected), 503 + Retry-After, Backoff, concurrent
 * writers. After every fault a later sync must converge with nothing lost and nothing duplicated.
 */
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, inject, it } from 'vitest';
import { BackoffError, type FetchLike, NetworkError, SyncAbortedError } from '../src/index.js';
import { IDBKeyRange } from 'fake-indexeddb';
import { openCollectionDb } from '../src/store/db.js';
import { LocalCollection } from '../src/store/local-collection.js';
import { importPage } from '../src/sync/import.js';
import { push } from '../src/sync/push.js';
import { HttpTransport } from '../src/transport/http.js';
import { cannedResponse, type Exchange, recordingFetch, startCuttingProxy } from './support/faults.js';
import { createCollection, makeClient, raw, seed, uniqueName } from './support/server.js';

const url = inject('quireUrl');

type Item = { n: number; title?: string };

async function setup(count: number) {
  const bucket = uniqueName('f');
  await createCollection(url, bucket, 'items');
  await seed(url, bucket, 'items', count, (i) => ({ id: `r${String(i).padStart(4, '0')}`, n: i }));
  return bucket;
}

async function serverState(bucket: string): Promise<Map<string, { n: number; last_modified: number; title?: string }>> {
  const map = new Map();
  let next: string | null = `/buckets/${bucket}/collections/items/records?_limit=500`;
  while (next) {
    const response = await raw(url, 'GET', next.replace(url, ''));
    for (const record of response.body.data) map.set(record.id, record);
    next = response.headers.get('next-page');
  }
  return map;
}

async function expectConverged(collection: { list(): Promise<unknown[]>; pending(): Promise<number> }, bucket: string) {
  const local = (await collection.list()) as { id: string }[];
  const remote = await serverState(bucket);
  expect(local.length).toBe(remote.size);
  for (const record of local) expect(record).toEqual(remote.get(record.id));
  expect(await collection.pending()).toBe(0);
}

describe('interrupted pulls resume without re-downloading or missing anything', () => {
  it('a connection cut in the middle of a page (real TCP cut) resumes from the checkpoint', async () => {
    const bucket = await setup(120);
    const proxy = await startCuttingProxy(url);
    const exchanges: Exchange[] = [];
    const client = makeClient(proxy.url, { fetch: recordingFetch(exchanges) });
    const items = client.bucket(bucket).collection<Item>('items', { pageSize: 20 });
    // Let three pages through, cut the fourth halfway. Pages are prefetched one ahead: once the
    // second page is written, the next page request to leave is the fourth.
    let pages = 0;
    items.on('progress', () => {
      if (++pages === 2) proxy.cutResponse(/GET .*\/records\?.*_token=/, 900);
    });
    await expect(items.sync()).rejects.toBeInstanceOf(NetworkError);
    expect(proxy.cuts).toBe(1);
    expect(await items.count()).toBe(60);
    // Meanwhile the server changes: a record already held, one not yet fetched, a deletion, a creation.
    await raw(url, 'PATCH', `/buckets/${bucket}/collections/items/records/r0119`, { data: { title: 'held, changed' } });
    await raw(url, 'PATCH', `/buckets/${bucket}/collections/items/records/r0010`, {
      data: { title: 'not yet fetched, changed' },
    });
    await raw(url, 'DELETE', `/buckets/${bucket}/collections/items/records/r0005`);
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/new`, { data: { n: -1 } });

    exchanges.length = 0;
    const result = await items.sync();
    expect(result.ok).toBe(true);
    await expectConverged(items, bucket);
    // Only the 60 missing records (minus the deleted one) plus the 4 changes travel again.
    const downloaded = exchanges.reduce((sum, exchange) => sum + exchange.records, 0);
    expect(downloaded).toBeLessThanOrEqual(60 + 4);
    expect((await items.get('r0010'))?.title).toBe('not yet fetched, changed');
    expect(await items.get('r0005')).toBeUndefined();
    await client.close();
    await proxy.close();
  });

  it('a tab closed during a cold sync resumes in a new tab from the persisted checkpoint', async () => {
    const bucket = await setup(100);
    const idb = new IDBFactory();
    let calls = 0;
    const dying: FetchLike = async (input, init) => {
      if (/_token=/.test(input) && ++calls === 3) throw new TypeError('tab closed');
      return fetch(input, init);
    };
    const first = makeClient(url, { idb, fetch: dying });
    await expect(first.bucket(bucket).collection<Item>('items', { pageSize: 25 }).sync()).rejects.toBeInstanceOf(
      NetworkError,
    );
    await first.close();

    const exchanges: Exchange[] = [];
    const second = makeClient(url, { idb, fetch: recordingFetch(exchanges) });
    const items = second.bucket(bucket).collection<Item>('items', { pageSize: 25 });
    expect(await items.count()).toBe(75);
    const result = await items.sync();
    expect(result.ok).toBe(true);
    expect(exchanges.reduce((sum, exchange) => sum + exchange.records, 0)).toBe(25);
    await expectConverged(items, bucket);
    await second.close();
  });

  it('a real 412 between pages (concurrent writer) is recovered with _since/_before and a catch-up', async () => {
    const bucket = await setup(90);
    let pages = 0;
    const exchanges: Exchange[] = [];
    const writer: FetchLike = async (input, init) => {
      if (/_token=/.test(input) && ++pages === 2) {
        // Touch records on pages already received and not yet received, delete one, create one.
        await raw(url, 'PATCH', `/buckets/${bucket}/collections/items/records/r0089`, { data: { title: 'top' } });
        await raw(url, 'PATCH', `/buckets/${bucket}/collections/items/records/r0003`, { data: { title: 'bottom' } });
        await raw(url, 'DELETE', `/buckets/${bucket}/collections/items/records/r0004`);
        await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/added`, { data: { n: 1000 } });
      }
      return fetch(input, init);
    };
    const client = makeClient(url, { fetch: recordingFetch(exchanges, writer) });
    const items = client.bucket(bucket).collection<Item>('items', { pageSize: 20 });
    const result = await items.sync();
    expect(result.ok).toBe(true);
    expect(exchanges.some((exchange) => exchange.status === 412)).toBe(true);
    const resumed = exchanges.find((exchange) => exchange.url.searchParams.has('_before'));
    expect(resumed?.url.searchParams.get('_before')).toMatch(/^\d+$/);
    await expectConverged(items, bucket);
    expect((await items.get('r0003'))?.title).toBe('bottom');
    expect(await items.get('r0004')).toBeUndefined();
    // Nothing fetched twice apart from the catch-up of the four concurrent changes.
    expect(exchanges.reduce((sum, exchange) => sum + exchange.records, 0)).toBeLessThanOrEqual(90 + 4);
  });

  it('an injected 412 on a Next-Page request restarts below the last received page', async () => {
    const bucket = await setup(50);
    let injected = false;
    const exchanges: Exchange[] = [];
    const inject412: FetchLike = async (input, init) => {
      if (!injected && /_token=/.test(input)) {
        injected = true;
        return cannedResponse(
          412,
          { ETag: '"1"' },
          { code: 412, errno: 114, error: 'Precondition Failed', message: 'Resource was modified meanwhile' },
        );
      }
      return fetch(input, init);
    };
    const client = makeClient(url, { fetch: recordingFetch(exchanges, inject412) });
    const items = client.bucket(bucket).collection<Item>('items', { pageSize: 20 });
    expect((await items.sync()).ok).toBe(true);
    await expectConverged(items, bucket);
    expect(exchanges.reduce((sum, exchange) => sum + exchange.records, 0)).toBe(50);
  });
});

describe('aborting', () => {
  it('an aborted sync rejects with SyncAbortedError and the next one resumes where it stopped', async () => {
    const bucket = await setup(60);
    const client = makeClient(url);
    const items = client.bucket(bucket).collection<Item>('items', { pageSize: 20 });
    const controller = new AbortController();
    const error = await items
      .sync({ signal: controller.signal, onProgress: (p) => p.done === 20 && controller.abort() })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyncAbortedError);
    expect(await items.count()).toBe(20);
    expect((await items.sync()).ok).toBe(true);
    await expectConverged(items, bucket);
  });
});

describe('interrupted pushes resume without duplicates or losses', () => {
  it('a batch whose response is cut (the server committed it) is replayed as published, not as conflicts', async () => {
    const bucket = await setup(0);
    const proxy = await startCuttingProxy(url);
    const client = makeClient(proxy.url);
    const items = client.bucket(bucket).collection<Item>('items');
    for (let i = 0; i < 30; i++) await items.create({ id: `c${i}`, n: i });
    await items.sync();
    for (let i = 0; i < 10; i++) await items.update(`c${i}`, { n: i * 10 });
    for (let i = 10; i < 15; i++) await items.delete(`c${i}`);
    for (let i = 0; i < 10; i++) await items.create({ id: `d${i}`, n: i });
    proxy.cutResponse(/POST .*\/batch/, 200);
    await expect(items.sync()).rejects.toBeInstanceOf(NetworkError);
    expect(proxy.cuts).toBe(1);
    expect(await items.pending()).toBe(25);

    const result = await items.sync();
    expect(result).toMatchObject({ ok: true, conflicts: [], errors: [] });
    // The pull that starts the next sync recognises the committed writes as ours: nothing is sent twice.
    expect(result.pushed).toBe(0);
    expect(result.pulled).toBe(25);
    await expectConverged(items, bucket);
    expect((await serverState(bucket)).size).toBe(35);
    await client.close();
    await proxy.close();
  });

  it('a push replaying writes the server already committed counts them as published, not as conflicts', async () => {
    // The engine's pull normally recognises such writes first; the push must be safe on its own.
    const bucket = await setup(0);
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/created`, { data: { n: 1 } });
    const updated = await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/updated`, { data: { n: 1 } });
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/updated`, { data: { n: 2 } }, 'alice', {
      'If-Match': `"${updated.body.data.last_modified}"`,
    });
    const db = await openCollectionDb(`replay-${bucket}`, [], { indexedDB: new IDBFactory(), IDBKeyRange });
    const local = new LocalCollection(db, () => crypto.randomUUID());
    await local.create({ id: 'created', n: 1 });
    // 'updated' as a pull left it: its first version, synced.
    await importPage(local, [{ id: 'updated', n: 1, last_modified: updated.body.data.last_modified }], null);
    await local.update('updated', { n: 2 });
    const http = new HttpTransport({ remote: url, auth: { type: 'basic', username: 'alice', password: 'secret' } });
    const outcomes: { published: unknown[]; conflicts: unknown[]; errors: unknown[] }[] = [];
    await push({
      http,
      local,
      bucket,
      collection: 'items',
      batchSize: 25,
      onChunk: async (outcome) => void outcomes.push(outcome),
    });
    expect(outcomes).toMatchObject([{ published: [{ id: 'created' }, { id: 'updated' }], conflicts: [], errors: [] }]);
    expect(await local.pendingCount()).toBe(0);
    const server = await serverState(bucket);
    expect(await local.get('updated')).toEqual(server.get('updated'));
    db.close();
    await http.close();
  });

  it('a local write made while its previous version is being pushed stays pending (no lost write)', async () => {
    const bucket = await setup(0);
    let hook: (() => Promise<void>) | null = null;
    const client = makeClient(url, {
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        if (hook && new URL(input).pathname.endsWith('/batch')) {
          const run = hook;
          hook = null;
          await run();
        }
        return response;
      },
    });
    const items = client.bucket(bucket).collection<Item>('items');
    await items.create({ id: 'x', n: 1 });
    await items.create({ id: 'y', n: 1 });
    hook = async () => {
      await items.update('x', { n: 2 });
      await items.delete('y');
    };
    const first = await items.sync();
    expect(first.pushed).toBe(2);
    expect(await items.pending()).toBe(2);
    expect((await items.get('x'))?.n).toBe(2);
    const second = await items.sync();
    expect(second).toMatchObject({ ok: true, pushed: 2, conflicts: [] });
    await expectConverged(items, bucket);
    expect((await serverState(bucket)).get('x')?.n).toBe(2);
    expect((await serverState(bucket)).has('y')).toBe(false);
  });

  it('a concurrent writer during the push is picked up by the same sync', async () => {
    const bucket = await setup(3);
    let writer: (() => Promise<unknown>) | null = () =>
      raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/other`, { data: { n: 99 } });
    const client = makeClient(url, {
      fetch: async (input, init) => {
        if (writer && new URL(input).pathname.endsWith('/batch')) {
          const run = writer;
          writer = null;
          await run();
        }
        return fetch(input, init);
      },
    });
    const items = client.bucket(bucket).collection<Item>('items');
    await items.sync();
    await items.create({ id: 'mine', n: 1 });
    const result = await items.sync();
    expect(result).toMatchObject({ ok: true, pushed: 1 });
    expect((await items.get('other'))?.n).toBe(99);
    await expectConverged(items, bucket);
  });
});

describe('server-requested pauses', () => {
  it('waits for Retry-After on a 503 and then succeeds', async () => {
    const bucket = await setup(5);
    const stamps: number[] = [];
    let failures = 1;
    const client = makeClient(url, {
      retries: 2,
      fetch: async (input, init) => {
        stamps.push(Date.now());
        if (failures > 0 && /\/records/.test(input)) {
          failures--;
          return cannedResponse(503, { 'Retry-After': '1' });
        }
        return fetch(input, init);
      },
    });
    const items = client.bucket(bucket).collection<Item>('items');
    const result = await items.sync();
    expect(result.pulled).toBe(5);
    expect(stamps[1]! - stamps[0]!).toBeGreaterThanOrEqual(950);
  });

  it('aborting a sync ends its wait for Retry-After, and nothing is sent after it', async () => {
    const bucket = await setup(1);
    let requests = 0;
    const client = makeClient(url, {
      retries: 2,
      fetch: async (input, init) => {
        if (!/\/records/.test(input)) return fetch(input, init);
        requests++;
        return cannedResponse(503, { 'Retry-After': '5' });
      },
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const error = await client
      .bucket(bucket)
      .collection<Item>('items')
      .sync({ signal: controller.signal })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyncAbortedError);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(requests).toBe(1);
  });

  it('a Retry-After longer than allowed surfaces as a BackoffError instead of hammering', async () => {
    const bucket = await setup(1);
    let requests = 0;
    const client = makeClient(url, {
      retries: 5,
      fetch: async () => {
        requests++;
        return cannedResponse(503, { 'Retry-After': '120' });
      },
    });
    const error = await client
      .bucket(bucket)
      .collection<Item>('items')
      .sync()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackoffError);
    expect((error as BackoffError).retryAfter).toBe(120_000);
    expect(requests).toBe(1);
  });

  it('a Backoff header makes the next sync refuse to run until it expires', async () => {
    const bucket = await setup(1);
    let requests = 0;
    const client = makeClient(url, {
      fetch: async (input, init) => {
        requests++;
        const response = await fetch(input, init);
        const headers = new Headers(response.headers);
        headers.set('Backoff', '60');
        return new Response(response.status === 304 ? null : await response.arrayBuffer(), {
          status: response.status,
          headers,
        });
      },
    });
    const items = client.bucket(bucket).collection<Item>('items');
    await items.sync();
    const before = requests;
    const error = await items.sync().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackoffError);
    expect((error as BackoffError).retryAfter).toBeGreaterThan(55_000);
    expect(requests).toBe(before);
    expect((await items.sync({ ignoreBackoff: true })).ok).toBe(true);
  });
});
