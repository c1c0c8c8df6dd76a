/** Automatic sync: after local writes (debounced), on reconnect, and exponential backoff on failure. */
import { describe, expect, inject, it } from 'vitest';
import { createManualOnlineSource, type FetchLike } from '../src/index.js';
import { createCollection, makeClient, raw, uniqueName } from './support/server.js';

const url = inject('quireUrl');

type Item = { n: number };

describe('auto-sync', () => {
  it('syncs shortly after local writes, debounced into one sync', async () => {
    const bucket = uniqueName('a');
    await createCollection(url, bucket, 'items');
    const client = makeClient(url);
    const items = client.bucket(bucket).collection<Item>('items');
    const online = createManualOnlineSource(true);
    const syncs: number[] = [];
    items.on('sync', (result) => syncs.push(result.pushed));
    items.startAutoSync({ intervalMs: 0, debounceMs: 100, online });
    await expect.poll(() => syncs.length, { timeout: 5000 }).toBe(1); // the initial sync
    for (let i = 0; i < 5; i++) await items.create({ n: i });
    await expect.poll(() => syncs.length, { timeout: 3000 }).toBe(2);
    expect(syncs[1]).toBe(5);
    await client.close();
  });

  it('waits while offline and syncs when the connection comes back', async () => {
    const bucket = uniqueName('a');
    await createCollection(url, bucket, 'items');
    const client = makeClient(url);
    const items = client.bucket(bucket).collection<Item>('items');
    const online = createManualOnlineSource(false);
    let syncs = 0;
    items.on('sync', () => syncs++);
    items.startAutoSync({ intervalMs: 0, debounceMs: 20, online });
    await items.create({ n: 1 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(syncs).toBe(0);
    online.set(true);
    await expect.poll(() => syncs, { timeout: 3000 }).toBe(1);
    expect(await items.pending()).toBe(0);
    const head = await raw(url, 'HEAD', `/buckets/${bucket}/collections/items/records`);
    expect(head.headers.get('total-objects')).toBe('1');
    await client.close();
  });

  it('retries failures with exponentially growing delays, then recovers', async () => {
    const bucket = uniqueName('a');
    await createCollection(url, bucket, 'items');
    const attempts: number[] = [];
    let failing = true;
    const flaky: FetchLike = async (input, init) => {
      if (/\/records/.test(input) && init.method !== 'HEAD') attempts.push(Date.now());
      if (failing) throw new TypeError('connection refused');
      return fetch(input, init);
    };
    const client = makeClient(url, { fetch: flaky });
    const items = client.bucket(bucket).collection<Item>('items');
    let synced = 0;
    items.on('sync', () => synced++);
    items.startAutoSync({
      intervalMs: 0,
      debounceMs: null,
      backoffMs: 40,
      maxBackoffMs: 10_000,
      online: createManualOnlineSource(true),
    });
    await expect.poll(() => attempts.length, { timeout: 5000 }).toBeGreaterThanOrEqual(5);
    failing = false;
    const gaps = attempts.slice(1, 5).map((t, i) => t - attempts[i]!);
    // Full-jitter exponential: each ceiling doubles (40, 80, 160, 320 ms), each wait is at least half of it.
    expect(gaps[0]).toBeGreaterThanOrEqual(18);
    expect(gaps[3]).toBeGreaterThanOrEqual(155);
    expect(gaps[3]!).toBeGreaterThan(gaps[0]!);
    await expect.poll(() => synced, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
    await client.close();
  });

  it('never retries sooner than the Retry-After of the failure', async () => {
    const bucket = uniqueName('a');
    await createCollection(url, bucket, 'items');
    const attempts: number[] = [];
    const unavailable: FetchLike = async (input, init) => {
      if (!/\/records/.test(input) || init.method === 'HEAD') return fetch(input, init);
      attempts.push(Date.now());
      return new Response(JSON.stringify({ code: 503, errno: 201, error: 'Service Unavailable' }), {
        status: 503,
        headers: { 'Retry-After': '1' },
      });
    };
    const client = makeClient(url, { fetch: unavailable });
    const items = client.bucket(bucket).collection<Item>('items');
    items.startAutoSync({
      intervalMs: 0,
      debounceMs: null,
      backoffMs: 40,
      maxBackoffMs: 10_000,
      online: createManualOnlineSource(true),
      live: false,
    });
    await expect.poll(() => attempts.length, { timeout: 5000 }).toBeGreaterThanOrEqual(2);
    expect(attempts[1]! - attempts[0]!).toBeGreaterThanOrEqual(950);
    await client.close();
  });
});
