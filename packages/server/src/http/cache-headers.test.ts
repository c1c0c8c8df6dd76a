/**
 * Cache headers of reads (protocol-reference §12.5) as the settings shape them, which the
 * deployment-agnostic conformance suite cannot change (it checks a collection's
 * `cache_expires`): `<resource>_cache_expires_seconds`, the per-parent record lifetimes, and
 * `root_cache_expires_seconds` in readonly mode.
 */
import { expect, it } from 'vitest';
import { describeOnBackends } from '../../test/helpers/backends.js';
import { basicAuth, testSettings } from '../../test/helpers/embedded-server.js';
import type { Settings } from '../config.js';

const alice = basicAuth('alice');

describeOnBackends('cache headers (§12.5)', {}, ({ serverWith }) => {
  /** A server with a public bucket `pub`, its public collection `<collection>` and one record `r`. */
  async function publicData(
    overrides: Partial<Settings>,
    collection = 'c',
    collectionData: Record<string, unknown> = {},
  ) {
    const app = await serverWith(overrides);
    const everyone = { read: ['system.Everyone'] };
    await app.inject({ method: 'PUT', url: '/v1/buckets/pub', headers: alice, payload: { permissions: everyone } });
    await app.inject({
      method: 'PUT',
      url: `/v1/buckets/pub/collections/${collection}`,
      headers: alice,
      payload: { data: collectionData },
    });
    await app.inject({
      method: 'PUT',
      url: `/v1/buckets/pub/collections/${collection}/records/r`,
      headers: alice,
      payload: { data: {} },
    });
    return app;
  }

  const cacheControl = (response: { headers: Record<string, unknown> }) => response.headers['cache-control'];

  it('anonymous reads are not cacheable by default, like authenticated ones', async () => {
    const app = await publicData({});
    for (const url of [
      '/v1/buckets/pub',
      '/v1/buckets/pub/collections',
      '/v1/buckets/pub/collections/c/records',
      '/v1/buckets/pub/collections/c/records/r',
    ]) {
      expect(cacheControl(await app.inject({ url })), url).toBe('no-cache, no-store');
      expect(cacheControl(await app.inject({ url, headers: alice })), url).toBe('no-cache, no-store');
    }
    await app.close();
  });

  it('`<resource>_cache_expires_seconds` lets anonymous readers cache objects and lists, 304s included', async () => {
    const app = await publicData({
      bucket_cache_expires_seconds: 60,
      collection_cache_expires_seconds: 120,
      record_cache_expires_seconds: 300,
    });
    const before = Date.now();
    const record = await app.inject({ url: '/v1/buckets/pub/collections/c/records/r' });
    expect(cacheControl(record)).toBe('max-age=300');
    const expires = Date.parse(String(record.headers.expires));
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 300_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 300_000);
    expect(cacheControl(await app.inject({ url: '/v1/buckets/pub/collections/c/records' }))).toBe('max-age=300');
    expect(cacheControl(await app.inject({ url: '/v1/buckets/pub/collections/c' }))).toBe('max-age=120');
    expect(cacheControl(await app.inject({ url: '/v1/buckets/pub' }))).toBe('max-age=60');
    const notModified = await app.inject({
      url: '/v1/buckets/pub/collections/c/records/r',
      headers: { 'if-none-match': String(record.headers.etag) },
    });
    expect(notModified.statusCode).toBe(304);
    expect(cacheControl(notModified)).toBe('max-age=300');
    // Authenticated callers see what they may change: never cached.
    expect(cacheControl(await app.inject({ url: '/v1/buckets/pub/collections/c/records/r', headers: alice }))).toBe(
      'no-cache, no-store',
    );
    // 0 means no caching at all.
    const off = await publicData({ record_cache_expires_seconds: 0 });
    expect(cacheControl(await off.inject({ url: '/v1/buckets/pub/collections/c/records' }))).toBe('no-cache, no-store');
    await Promise.all([app.close(), off.close()]);
  });

  it(
    "records: the collection's `cache_expires`, then its collection's, then its bucket's setting, then the " +
      'global one',
    async () => {
      const byParent = { '/buckets/pub': 30, '/buckets/pub/collections/special': 3600 };
      const settings = { record_cache_expires_seconds: 5, record_cache_expires_seconds_by_parent: byParent };
      const app = await publicData(settings, 'special');
      await app.inject({ method: 'PUT', url: '/v1/buckets/pub/collections/plain', headers: alice });
      await app.inject({
        method: 'PUT',
        url: '/v1/buckets/pub/collections/own',
        headers: alice,
        payload: { data: { cache_expires: 7 } },
      });
      expect(cacheControl(await app.inject({ url: '/v1/buckets/pub/collections/special/records' }))).toBe(
        'max-age=3600',
      );
      expect(cacheControl(await app.inject({ url: '/v1/buckets/pub/collections/plain/records' }))).toBe('max-age=30');
      expect(cacheControl(await app.inject({ url: '/v1/buckets/pub/collections/own/records' }))).toBe('max-age=7');
      // Elsewhere, the global setting.
      await app.inject({
        method: 'PUT',
        url: '/v1/buckets/other',
        headers: alice,
        payload: { permissions: { read: ['system.Everyone'] } },
      });
      await app.inject({ method: 'PUT', url: '/v1/buckets/other/collections/c', headers: alice });
      expect(cacheControl(await app.inject({ url: '/v1/buckets/other/collections/c/records' }))).toBe('max-age=5');
      await app.close();
    },
  );

  it('a listing asked with `_expected` it holds is kept for the maximum; one older than asked, never', async () => {
    const monitor = '/buckets/monitor/collections/changes';
    const app = await publicData({
      changes_resources: ['/buckets/pub'],
      record_cache_expires_seconds: 60,
      record_cache_maximum_expires_seconds_by_parent: { '/buckets/pub': 3600, [monitor]: 600 },
    });
    const records = '/v1/buckets/pub/collections/c/records';
    const etag = Number(String((await app.inject({ url: records })).headers.etag).replaceAll('"', ''));
    const cases: Array<[string, string | undefined]> = [
      [records, 'max-age=60'],
      [`${records}?_since=${etag - 1}`, 'max-age=60'],
      [`${records}?_expected=${etag}`, 'max-age=3600'],
      [`${records}?_expected=%22${etag - 5}%22&_since=0`, 'max-age=3600'],
      // The caller knows of a newer change than this answer holds (a lagging reader): a CDN
      // must not keep it under the newer URL.
      [`${records}?_expected=${etag + 1}`, 'no-cache, no-store'],
      // Not a timestamp: reserved and ignored, as before.
      [`${records}?_expected=soon`, 'max-age=60'],
      [`/v1${monitor}/records?_expected=${etag}`, 'max-age=600'],
      [`/v1${monitor}/records?_expected=${etag + 1}`, 'no-cache, no-store'],
    ];
    for (const [url, expected] of cases) {
      const response = await app.inject({ url });
      expect(response.statusCode, url).toBe(200);
      expect(cacheControl(response), url).toBe(expected);
      expect(response.headers['last-modified'], url).toBe(new Date(etag).toUTCString());
    }
    const notModified = await app.inject({
      url: `${records}?_expected=${etag}`,
      headers: { 'if-none-match': `"${etag}"` },
    });
    expect([notModified.statusCode, cacheControl(notModified)]).toEqual([304, 'max-age=3600']);
    // Authenticated callers: never cached, cache-buster or not.
    expect(cacheControl(await app.inject({ url: `${records}?_expected=${etag}`, headers: alice }))).toBe(
      'no-cache, no-store',
    );
    await app.close();
  });

  it('a readonly server lets `GET /` be cached for root_cache_expires_seconds', async () => {
    const writable = await serverWith({});
    expect(cacheControl(await writable.inject({ url: '/v1/' }))).toBeUndefined();
    const readonly = await serverWith({ readonly: true, root_cache_expires_seconds: 600 });
    expect(cacheControl(await readonly.inject({ url: '/v1/' }))).toBe('max-age=600');
    await Promise.all([writable.close(), readonly.close()]);
  });

  it('refuses a per-parent lifetime map that is not URIs to whole seconds, at boot', () => {
    const bad = [
      { buckets: 3 },
      { '/buckets/b': -1 },
      { '/buckets/b/groups/g': 3 },
      { '/buckets/b': '3' },
      ['/buckets/b'],
    ];
    for (const value of bad) {
      expect(
        () => testSettings({ record_cache_expires_seconds_by_parent: value as never }),
        JSON.stringify(value),
      ).toThrow(/record_cache_expires_seconds_by_parent/);
    }
    expect(
      testSettings({ record_cache_expires_seconds_by_parent: { '/buckets/b/collections/c': 3 } })
        .record_cache_expires_seconds_by_parent,
    ).toEqual({ '/buckets/b/collections/c': 3 });
  });

  it('refuses a collection `cache_expires` that is not a whole number of seconds', async () => {
    const app = await serverWith({});
    await app.inject({ method: 'PUT', url: '/v1/buckets/v', headers: alice });
    for (const value of ['soon', -1, 1.5, null]) {
      const response = await app.inject({
        method: 'PUT',
        url: '/v1/buckets/v/collections/c',
        headers: alice,
        payload: { data: { cache_expires: value } },
      });
      expect(response.statusCode, JSON.stringify(value)).toBe(400);
      expect(response.json()).toMatchObject({
        errno: 107,
        details: [{ location: 'body', name: 'data.cache_expires' }],
      });
    }
    expect((await app.inject({ url: '/v1/buckets/v/collections/c', headers: alice })).statusCode).toBe(404);
    await app.close();
  });
});
