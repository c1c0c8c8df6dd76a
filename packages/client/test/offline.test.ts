/**
 * Offline (the browser says so: `navigator.onLine` false, here a manual online source): nothing
 * is tried in the background — no sync, no `GET /`, no stream, no retry — and everything starts
 * at once when the network comes back. The Chromium test does it with the browser's own
 * offline mode (browser.test.ts).
 */
import { describe, expect, inject, it } from 'vitest';
import { createManualOnlineSource, type FetchLike, NetworkError } from '../src/index.js';
import { createCollection, makeClient, raw, uniqueName } from './support/server.js';

const url = inject('quireUrl');

function counting(): { fetch: FetchLike; urls: string[] } {
  const urls: string[] = [];
  const counted: FetchLike = (input, init) => {
    urls.push(`${init.method ?? 'GET'} ${new URL(input).pathname}`);
    return fetch(input, init);
  };
  return { urls, fetch: counted };
}

describe('offline', () => {
  it('started offline: no request at all until the network is back, then sync and live changes at once', async () => {
    const bucket = uniqueName('off');
    await createCollection(url, bucket, 'items');
    const online = createManualOnlineSource(false);
    const requests = counting();
    const client = makeClient(url, { fetch: requests.fetch, online });
    const items = client.bucket(bucket).collection('items');
    await items.create({ id: 'offline-write', n: 1 });
    expect(await items.startAutoSync({ intervalMs: 1000, debounceMs: 10 })).toBe('none');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(requests.urls).toEqual([]);
    expect(client.live.status.state).toBe('offline');

    online.set(true);
    await expect
      .poll(async () => (await raw(url, 'GET', `/buckets/${bucket}/collections/items/records/offline-write`)).status, {
        timeout: 10_000,
      })
      .toBe(200);
    await expect.poll(() => client.live.status.connected, { timeout: 10_000 }).toBe(true);
    await expect.poll(() => items.status.lastResult?.pushed, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => items.status.syncing).toBe(false);

    // Offline again: the stream is dropped at once and nothing is retried meanwhile.
    online.set(false);
    await expect.poll(() => client.live.status.state).toBe('offline');
    const before = requests.urls.length;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(requests.urls.slice(before), JSON.stringify(requests.urls)).toEqual([]);

    online.set(true);
    await expect.poll(() => client.live.status.connected, { timeout: 10_000 }).toBe(true);
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/after`, { data: { n: 2 } });
    await expect.poll(async () => (await items.get('after'))?.n, { timeout: 10_000 }).toBe(2);
    await client.close();
  });

  it('a network error is not retried while offline (it is while online)', async () => {
    const attempts: string[] = [];
    const down: FetchLike = async (input) => {
      attempts.push(input);
      throw new TypeError('Failed to fetch');
    };
    const online = createManualOnlineSource(false);
    const client = makeClient(url, { fetch: down, online, retries: 2 });
    await expect(client.remote.serverInfo()).rejects.toBeInstanceOf(NetworkError);
    expect(attempts).toHaveLength(1);
    online.set(true);
    await expect(client.remote.serverInfo(true)).rejects.toBeInstanceOf(NetworkError);
    expect(attempts).toHaveLength(4);
    await client.close();
  });
});
