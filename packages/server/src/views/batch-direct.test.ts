/**
 * A sub-request answered by the engine's endpoint directly (batch-direct.ts) gets the entry the
 * router would give. The router's is reached with a header the direct path leaves to it
 * (`Accept`, here the default), so both answer the same state side by side.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../app.js';
import { loadSettings } from '../config.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import type { Storage } from '../storage/types.js';

const auth = { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}`, origin: 'https://app.example' };
const bob = { Authorization: `Basic ${Buffer.from('bob:pw').toString('base64')}` };
const VIA_ROUTER = { Accept: 'application/json' };
const RECORDS = '/buckets/b/collections/c/records';

interface Entry {
  status: number;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

describe('POST /batch: sub-requests answered by the endpoints directly', () => {
  let storage: Storage;
  let app: Awaited<ReturnType<typeof buildServer>>;

  beforeAll(async () => {
    storage = await createSqliteStorage();
    const settings = loadSettings({
      env: {},
      configFile: null,
      overrides: { userid_hmac_secret: 's', log_level: 'silent', cors_origins: ['*'], backoff: 30 },
    });
    app = await buildServer({ settings, storage, logger: false });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b', headers: auth });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c', headers: auth });
  });
  afterAll(async () => {
    await app.close();
    await storage.close();
  });

  async function batch(requests: unknown[]): Promise<Entry[]> {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: auth,
      payload: { requests } as never,
    });
    expect(response.statusCode).toBe(200);
    return response.json().responses;
  }

  /** The entry without what differs between any two answers (request id, date). */
  function comparable(entry: Entry) {
    const { 'X-Request-Id': _id, Date: _date, ...headers } = entry.headers;
    return { ...entry, headers };
  }

  /** `request` answered directly, then through the router, on the same state: the same entry. */
  async function expectSameEntry(request: {
    method: string;
    path: string;
    headers?: Record<string, string>;
    body?: unknown;
  }) {
    const [direct, routed] = await batch([request, { ...request, headers: { ...request.headers, ...VIA_ROUTER } }]);
    expect(comparable(direct as Entry)).toEqual(comparable(routed as Entry));
    return direct as Entry;
  }

  it('answers reads, 304s, 404s and refusals as the router does', async () => {
    await batch([{ method: 'PUT', path: `${RECORDS}/r`, body: { data: { n: 1 } } }]);
    const read = await expectSameEntry({ method: 'GET', path: `${RECORDS}/r` });
    expect(read.status).toBe(200);
    expect(Object.keys(read.headers)).toEqual(
      expect.arrayContaining([
        'ETag',
        'Last-Modified',
        'Cache-Control',
        'Content-Length',
        'Backoff',
        'Access-Control-Allow-Origin',
      ]),
    );
    expect(
      (
        await expectSameEntry({
          method: 'GET',
          path: `${RECORDS}/r`,
          headers: { 'If-None-Match': read.headers.ETag as string },
        })
      ).status,
    ).toBe(304);
    expect((await expectSameEntry({ method: 'GET', path: `${RECORDS}/missing` })).status).toBe(404);
    expect(
      (await expectSameEntry({ method: 'PUT', path: '/buckets/other/collections/c/records/r', body: { data: {} } }))
        .status,
    ).toBe(403);
    expect(
      (
        await expectSameEntry({
          method: 'PUT',
          path: `${RECORDS}/r`,
          headers: { 'If-Match': '"1"' },
          body: { data: {} },
        })
      ).status,
    ).toBe(412);
    expect(
      (
        await expectSameEntry({
          method: 'PATCH',
          path: `${RECORDS}/r`,
          headers: { 'Response-Behavior': 'nope' },
          body: { data: {} },
        })
      ).status,
    ).toBe(400);
    expect((await expectSameEntry({ method: 'POST', path: `${RECORDS}/r`, body: { data: {} } })).status).toBe(405);
  });

  it('answers writes as the router does (each write twice: the second finds the first)', async () => {
    const [created, existing] = await batch([
      { method: 'POST', path: RECORDS, body: { data: { id: 'p', n: 1 } } },
      { method: 'POST', path: RECORDS, headers: VIA_ROUTER, body: { data: { id: 'p', n: 1 } } },
    ]);
    expect([created?.status, existing?.status]).toEqual([201, 200]);
    expect(Object.keys(created?.headers ?? {})).toEqual(Object.keys(existing?.headers ?? {}));
    const [patched, patchedAgain] = await batch([
      { method: 'PATCH', path: `${RECORDS}/p`, headers: { 'Response-Behavior': 'light' }, body: { data: { n: 2 } } },
      {
        method: 'PATCH',
        path: `${RECORDS}/p`,
        headers: { 'Response-Behavior': 'light', ...VIA_ROUTER },
        body: { data: { n: 2 } },
      },
    ]);
    expect([patched?.body, patchedAgain?.body]).toEqual([
      { data: { n: 2 }, permissions: expect.any(Object) },
      { data: {}, permissions: expect.any(Object) },
    ]);
    const [deleted, deletedAgain] = await batch([
      { method: 'DELETE', path: `${RECORDS}/p` },
      { method: 'DELETE', path: `${RECORDS}/p`, headers: VIA_ROUTER },
    ]);
    expect([deleted?.status, deletedAgain?.status]).toEqual([200, 404]);
  });

  it('leaves to the router what it cannot answer the same way: other credentials, query strings, other routes', async () => {
    const entries = await batch([
      { method: 'PUT', path: `${RECORDS}/theirs`, headers: bob, body: { data: {} } },
      { method: 'GET', path: `${RECORDS}?_limit=1` },
      { method: 'GET', path: '/buckets/b/collections/c/records/theirs/' },
      { method: 'GET', path: '/' },
    ]);
    // The trailing slash: redirected by the router, followed once by the batch, to a record bob could not write.
    expect(entries.map((entry) => entry.status)).toEqual([403, 200, 404, 200]);
  });
});
