/**
 * Live changes: auto-sync learns of remote changes from the change monitor — pushed (server-sent
 * events) when the server offers it, polled otherwise — and pulls only the collection named.
 */
import { describe, expect, inject, it } from 'vitest';
import { type FetchLike, type LockManagerLike, createManualOnlineSource } from '../src/index.js';
import { createCollection, makeClient, raw, startServer, uniqueName } from './support/server.js';

const url = inject('quireUrl');
type Item = { n: number };

/** A fetch that counts the requests whose URL matches. */
function countingFetch(pattern: RegExp): { fetch: FetchLike; count: () => number; urls: string[] } {
  const urls: string[] = [];
  return {
    urls,
    count: () => urls.length,
    fetch: (input, init) => {
      if (pattern.test(input)) urls.push(input);
      return fetch(input, init);
    },
  };
}

describe('live changes', () => {
  it('a change written elsewhere is in the replica well under a second, without the interval', async () => {
    const bucket = uniqueName('live');
    await createCollection(url, bucket, 'items');
    await createCollection(url, bucket, 'other');
    const pulls = countingFetch(/\/collections\/(items|other)\/records/);
    const client = makeClient(url, { fetch: pulls.fetch });
    const items = client.bucket(bucket).collection<Item>('items');
    const other = client.bucket(bucket).collection<Item>('other');
    const online = createManualOnlineSource(true);
    const syncs: string[] = [];
    items.on('sync', () => syncs.push('items'));
    other.on('sync', () => syncs.push('other'));
    const remote: number[] = [];
    items.on('remote', (event) => remote.push(event.lastModified));
    expect(await items.startAutoSync({ intervalMs: 0, online })).toBe('stream');
    expect(await other.startAutoSync({ intervalMs: 0, online })).toBe('stream');
    await expect.poll(() => client.live.status.connected, { timeout: 10_000 }).toBe(true);
    await expect.poll(() => syncs.filter((name) => name === 'items').length).toBeGreaterThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, 200)); // settle the initial syncs
    syncs.length = 0;

    const started = Date.now();
    const written = await raw(
      url,
      'PUT',
      `/buckets/${bucket}/collections/items/records/r1`,
      { data: { n: 1 } },
      'alice',
    );
    expect(written.status).toBe(201);
    await expect.poll(async () => (await items.get('r1'))?.n, { timeout: 2000, interval: 10 }).toBe(1);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(remote.at(-1)).toBe((written.body as { data: { last_modified: number } }).data.last_modified);
    // Only the collection that changed was pulled.
    expect(syncs).not.toContain('other');
    expect(client.live.status).toMatchObject({ mode: 'stream', connected: true });
    await client.close();
  });

  it('a burst of writes is pulled a handful of times, and the replica converges', async () => {
    const bucket = uniqueName('burst');
    await createCollection(url, bucket, 'items');
    const pulls = countingFetch(/\/collections\/items\/records/);
    const client = makeClient(url, { fetch: pulls.fetch });
    const items = client.bucket(bucket).collection<Item>('items');
    await items.startAutoSync({ intervalMs: 0, online: createManualOnlineSource(true) });
    await expect.poll(() => client.live.status.connected, { timeout: 10_000 }).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = pulls.count();
    // 200 writes, in batches of 25, as fast as they go.
    for (let start = 0; start < 200; start += 25) {
      const requests = Array.from({ length: 25 }, (_, i) => ({
        method: 'PUT',
        path: `/buckets/${bucket}/collections/items/records/r${start + i}`,
        body: { data: { n: start + i } },
      }));
      await raw(url, 'POST', '/batch', { requests }, 'alice');
    }
    await expect.poll(() => items.count({}), { timeout: 5000 }).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(pulls.count() - before).toBeLessThanOrEqual(10);
    await client.close();
  });

  it('reconnects after the server goes away and resumes from the last event id', { timeout: 60_000 }, async () => {
    const server = await startServer({ changes_stream_heartbeat_seconds: 0.2 });
    const port = new URL(server.url).port;
    const bucket = uniqueName('re');
    await createCollection(server.url, bucket, 'items');
    const client = makeClient(server.url, { live: { backoffMs: 50, maxBackoffMs: 200 } });
    const items = client.bucket(bucket).collection<Item>('items');
    await items.startAutoSync({ intervalMs: 0, online: createManualOnlineSource(true) });
    await expect.poll(() => client.live.status.connected, { timeout: 10_000 }).toBe(true);
    await raw(server.url, 'PUT', `/buckets/${bucket}/collections/items/records/a`, { data: { n: 1 } });
    await expect.poll(async () => (await items.get('a'))?.n, { timeout: 10_000 }).toBe(1);
    // Streams are cut (as by a restart or a proxy); the client reconnects with Last-Event-ID.
    const seen: boolean[] = [];
    client.live.onStatus((status) => seen.push(status.connected));
    await server.dropStreams();
    await expect.poll(() => seen.includes(false), { timeout: 10_000 }).toBe(true);
    await expect.poll(() => client.live.status.connected, { timeout: 10_000 }).toBe(true);
    await raw(server.url, 'PUT', `/buckets/${bucket}/collections/items/records/b`, { data: { n: 2 } });
    await expect.poll(async () => (await items.get('b'))?.n, { timeout: 10_000 }).toBe(2);
    expect(port).toBeTruthy();
    await client.close();
    await server.close();
  });

  it('started offline (server unreachable), it finds the stream once the server answers', async () => {
    const bucket = uniqueName('late');
    await createCollection(url, bucket, 'items');
    let reachable = false;
    const unreachableAtFirst: FetchLike = async (input, init) => {
      if (!reachable) throw new TypeError('network down');
      return fetch(input, init);
    };
    const client = makeClient(url, { fetch: unreachableAtFirst, live: { backoffMs: 50, maxBackoffMs: 200 } });
    const items = client.bucket(bucket).collection<Item>('items');
    expect(
      await items.startAutoSync({
        intervalMs: 0,
        backoffMs: 50,
        maxBackoffMs: 200,
        online: createManualOnlineSource(true),
      }),
    ).toBe('none');
    reachable = true;
    await expect.poll(() => client.live.status.connected, { timeout: 10_000 }).toBe(true);
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/x`, { data: { n: 3 } });
    await expect.poll(async () => (await items.get('x'))?.n, { timeout: 3000 }).toBe(3);
    await client.close();
  });

  it('one tab holds the stream for all tabs; another takes over when it closes', async () => {
    const bucket = uniqueName('tabs');
    await createCollection(url, bucket, 'items');
    // navigator.locks stand-in (exclusive, with abort while waiting).
    const queues = new Map<string, Promise<unknown>>();
    const locks: LockManagerLike = {
      request<T>(name: string, options: { mode: 'exclusive'; signal?: AbortSignal }, fn: () => Promise<T>): Promise<T> {
        const previous = queues.get(name) ?? Promise.resolve();
        const run = previous
          .catch(() => {})
          .then(() => {
            if (options.signal?.aborted) throw new Error('aborted');
            return fn();
          });
        queues.set(
          name,
          run.catch(() => {}),
        );
        return run;
      },
    };
    const streams = countingFetch(/monitor\/collections\/changes\/records/);
    const tabA = makeClient(url, { fetch: streams.fetch, lockManager: locks, dbPrefix: 'tab-a' });
    const tabB = makeClient(url, { fetch: streams.fetch, lockManager: locks, dbPrefix: 'tab-b' });
    const online = createManualOnlineSource(true);
    const a = tabA.bucket(bucket).collection<Item>('items');
    const b = tabB.bucket(bucket).collection<Item>('items');
    expect(await a.startAutoSync({ intervalMs: 0, online })).toBe('stream');
    expect(await b.startAutoSync({ intervalMs: 0, online })).toBe('stream');
    await expect.poll(() => tabA.live.status.connected, { timeout: 10_000 }).toBe(true);
    expect(tabB.live.status).toMatchObject({ follower: true, connected: false });
    expect(streams.count()).toBe(1);

    const remoteB: number[] = [];
    b.on('remote', (event) => remoteB.push(event.lastModified));
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/x`, { data: { n: 1 } });
    // Tab B learns it through tab A's stream (BroadcastChannel) and pulls.
    await expect.poll(async () => (await b.get('x'))?.n, { timeout: 5000 }).toBe(1);
    expect(remoteB.length).toBeGreaterThan(0);
    expect(streams.count()).toBe(1);

    // Tab A closes: B takes the lock and opens its own stream.
    await tabA.close();
    await expect.poll(() => tabB.live.status.connected, { timeout: 10_000 }).toBe(true);
    expect(streams.count()).toBe(2);
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/y`, { data: { n: 2 } });
    await expect.poll(async () => (await b.get('y'))?.n, { timeout: 5000 }).toBe(2);
    await tabB.close();
  });

  it('without the stream, polls the monitor: one request for every collection', async () => {
    // A server whose capability has no stream (e.g. the original kinto-changes plugin).
    const bucket = uniqueName('poll');
    await createCollection(url, bucket, 'items');
    await createCollection(url, bucket, 'other');
    const monitor = countingFetch(/monitor\/collections\/changes\/records/);
    const noStream: FetchLike = async (input, init) => {
      const response = await monitor.fetch(input, init);
      if (!/\/v1\/?$/.test(new URL(input).pathname)) return response;
      const body = (await response.json()) as { capabilities: Record<string, Record<string, unknown>> };
      delete body.capabilities.changes!.stream;
      return new Response(JSON.stringify(body), { status: response.status, headers: response.headers });
    };
    const client = makeClient(url, { fetch: noStream, live: { pollMs: 100 } });
    const items = client.bucket(bucket).collection<Item>('items');
    const other = client.bucket(bucket).collection<Item>('other');
    const online = createManualOnlineSource(true);
    expect(await items.startAutoSync({ intervalMs: 0, online })).toBe('poll');
    expect(await other.startAutoSync({ intervalMs: 0, online })).toBe('poll');
    await raw(url, 'PUT', `/buckets/${bucket}/collections/other/records/x`, { data: { n: 7 } }, 'alice');
    await expect.poll(async () => (await other.get('x'))?.n, { timeout: 3000 }).toBe(7);
    const polls = monitor.count();
    await new Promise((resolve) => setTimeout(resolve, 450));
    // About one poll per period for both collections together, not one per collection.
    expect(monitor.count() - polls).toBeLessThanOrEqual(7);
    expect(monitor.urls.every((u) => !/text\/event-stream/.test(u))).toBe(true);
    await client.close();
  });

  it('without the monitor, each collection keeps its interval (mode none)', async () => {
    const server = await startServer({ changes_enabled: false });
    const bucket = uniqueName('none');
    await createCollection(server.url, bucket, 'items');
    const client = makeClient(server.url);
    const items = client.bucket(bucket).collection<Item>('items');
    expect(await items.startAutoSync({ intervalMs: 100, online: createManualOnlineSource(true) })).toBe('none');
    await raw(server.url, 'PUT', `/buckets/${bucket}/collections/items/records/x`, { data: { n: 1 } });
    await expect.poll(async () => (await items.get('x'))?.n, { timeout: 3000 }).toBe(1);
    await client.close();
    await server.close();
  });
});
