/**
 * A sub-request to an endpoint of the engine, answered in-process (batch-direct.ts), gets the
 * answer the same request gets from the network: each one is sent both ways on the same state
 * and the two answers compared (status, headers, body), for every endpoint the engine serves —
 * plural GET/HEAD/DELETE with query strings, `_fields`, `_since`, accounts, history — with
 * metrics and debug logging on, as production runs it.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../app.js';
import { loadSettings } from '../config.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import type { Storage } from '../storage/types.js';

const basic = (user: string) => `Basic ${Buffer.from(`${user}:pw`).toString('base64')}`;
const auth = { authorization: basic('alice'), origin: 'https://app.example' };
const RECORDS = '/buckets/b/collections/c/records';
/** What differs between any two answers: request id, date, connection. */
const VOLATILE = new Set(['x-request-id', 'date', 'connection', 'keep-alive']);

interface Sent {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

describe('POST /batch: sub-requests answered by the engine in-process', () => {
  let storage: Storage;
  let app: Awaited<ReturnType<typeof buildServer>>;
  const logLines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    storage = await createSqliteStorage();
    const settings = loadSettings({
      env: {},
      configFile: null,
      overrides: {
        userid_hmac_secret: 's',
        cors_origins: ['*'],
        backoff: 30,
        metrics_enabled: true,
        history_enabled: true,
        multiauth_policies: ['account', 'basicauth'],
        account_create_principals: ['system.Everyone'],
      },
    });
    const stream = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line));
        done();
      },
    });
    app = await buildServer({ settings, storage, logger: { level: 'debug', stream } });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b', headers: auth });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c', headers: auth });
    for (const n of [1, 2, 3])
      await app.inject({ method: 'PUT', url: `/v1${RECORDS}/r${n}`, headers: auth, payload: { data: { n } } });
  });
  afterAll(async () => {
    await app.close();
    await storage.close();
  });

  async function batch(requests: Sent[], headers: Record<string, string> = auth) {
    const response = await app.inject({ method: 'POST', url: '/v1/batch', headers, payload: { requests } as never });
    expect(response.statusCode, response.body).toBe(200);
    return response.json().responses as Array<{
      status: number;
      path: string;
      headers: Record<string, string>;
      body: unknown;
    }>;
  }

  /** `sent` in a batch, then from the network, on the same state (a read): the same answer. */
  async function expectSameAnswer(sent: Sent, headers: Record<string, string> = auth) {
    const [entry] = await batch([sent], headers);
    const direct = await app.inject({
      method: sent.method as never,
      url: `/v1${sent.path}`,
      headers: { ...headers, ...sent.headers, ...(sent.body ? { 'content-type': 'application/json' } : {}) },
      ...(sent.body ? { payload: sent.body as never } : {}),
    });
    const lower = (record: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(record)
          // A page token's nonce is new each time.
          .map(([name, value]) => [name.toLowerCase(), String(value).replace(/_token=[^&]*/, '_token=…')])
          .filter(([name]) => !VOLATILE.has(name as string)),
      );
    expect(entry?.status, `${sent.method} ${sent.path}`).toBe(direct.statusCode);
    expect(lower(entry?.headers ?? {}), `${sent.method} ${sent.path}`).toEqual(lower(direct.headers));
    expect(entry?.body, `${sent.method} ${sent.path}`).toEqual(direct.body === '' ? '' : direct.json());
    return entry!;
  }

  it('answers object reads, 304s, 404s, 405s, 406s and refusals as the network does', async () => {
    const read = await expectSameAnswer({ method: 'GET', path: `${RECORDS}/r1` });
    expect(read.status).toBe(200);
    await expectSameAnswer({ method: 'GET', path: `${RECORDS}/r1`, headers: { 'If-None-Match': read.headers.ETag! } });
    await expectSameAnswer({ method: 'GET', path: `${RECORDS}/r1?_fields=n` });
    await expectSameAnswer({ method: 'GET', path: `${RECORDS}/missing` });
    await expectSameAnswer({ method: 'HEAD', path: `${RECORDS}/r1` });
    await expectSameAnswer({ method: 'GET', path: `${RECORDS}/r1`, headers: { Accept: 'text/html' } });
    await expectSameAnswer({ method: 'GET', path: `${RECORDS}/r1`, headers: { 'If-Match': 'nope' } });
    await expectSameAnswer({ method: 'PUT', path: '/buckets/other/collections/c/records/r', body: { data: {} } });
    await expectSameAnswer({ method: 'GET', path: `${RECORDS}/r1`, headers: { Authorization: basic('bob') } });
  });

  it('answers listings with their query strings: filters, _sort, _fields, _since, _limit, Next-Page', async () => {
    for (const query of ['', '?_sort=n', '?_fields=n&_sort=-n', '?min_n=2', '?_since=0', '?_limit=1', '?in_id=r1,r3']) {
      await expectSameAnswer({ method: 'GET', path: `${RECORDS}${query}` });
      await expectSameAnswer({ method: 'HEAD', path: `${RECORDS}${query}` });
    }
    const page = await expectSameAnswer({ method: 'GET', path: `${RECORDS}?_limit=1` });
    expect(page.headers['Next-Page']).toMatch(/_token=/);
    await expectSameAnswer({ method: 'GET', path: `${RECORDS}?_limit=nope` });
    await expectSameAnswer({ method: 'GET', path: '/buckets/b/collections' });
    await expectSameAnswer({ method: 'GET', path: '/buckets' });
  });

  it('answers the history and accounts, whose access policies are their own', async () => {
    // A batch reads the history as the drains after commit left it (history/resource.ts), a
    // request from the network drains first: drain now, so that both read the same history.
    expect((await app.inject({ url: '/v1/buckets/b/history', headers: auth })).statusCode).toBe(200);
    await expectSameAnswer({ method: 'GET', path: '/buckets/b/history?resource_name=record&_limit=2' });
    await expectSameAnswer({ method: 'HEAD', path: '/buckets/b/history' });
    const [created] = await batch(
      [{ method: 'PUT', path: '/accounts/carol', body: { data: { password: 'secret' } } }],
      {},
    );
    expect(created?.status).toBe(201);
    const carol = { authorization: `Basic ${Buffer.from('carol:secret').toString('base64')}` };
    await expectSameAnswer({ method: 'GET', path: '/accounts/carol' }, carol);
    await expectSameAnswer({ method: 'GET', path: '/accounts' }, carol);
    await expectSameAnswer({ method: 'GET', path: '/accounts' }, {});
  });

  it('answers writes and plural DELETE as the network does (each write twice)', async () => {
    const [created, existing] = await batch([
      { method: 'POST', path: RECORDS, body: { data: { id: 'p', n: 1 } } },
      { method: 'POST', path: RECORDS, body: { data: { id: 'p', n: 1 } } },
    ]);
    expect([created?.status, existing?.status]).toEqual([201, 200]);
    const [patched, merged] = await batch([
      { method: 'PATCH', path: `${RECORDS}/p`, headers: { 'Response-Behavior': 'light' }, body: { data: { n: 2 } } },
      {
        method: 'PATCH',
        path: `${RECORDS}/p`,
        headers: { 'Response-Behavior': 'diff' },
        body: { data: { n: 5 } },
      },
    ]);
    // `diff`: what the server changed of what was sent (nothing here).
    expect([patched?.body, merged?.body]).toEqual([
      { data: { n: 2 }, permissions: expect.any(Object) },
      { data: {}, permissions: expect.any(Object) },
    ]);
    const [deleted, listed] = await batch([
      { method: 'DELETE', path: `${RECORDS}?n=5` },
      { method: 'GET', path: `${RECORDS}?_since=0&_fields=deleted` },
    ]);
    expect(deleted?.status).toBe(200);
    expect((deleted!.body as { data: Array<{ id: string }> }).data.map((item) => item.id)).toEqual(['p']);
    expect((listed!.body as { data: Array<{ id: string; deleted?: boolean }> }).data[0]).toMatchObject({
      id: 'p',
      deleted: true,
    });
    await expectSameAnswer({ method: 'POST', path: `${RECORDS}/r1`, body: { data: {} } });
  });

  it('logs and counts each sub-request answered in-process, under the batch request id', async () => {
    logLines.length = 0;
    await batch([{ method: 'GET', path: `${RECORDS}?_limit=1` }]);
    const batchLine = logLines.find((line) => line.route === '/v1/batch');
    const subLine = logLines.find((line) => line.route === '/v1/buckets/:bucket_id/collections/:collection_id/records');
    expect(subLine).toMatchObject({ level: 20, method: 'GET', status: 200 });
    // Written by the batch's request: in-process, not through the router.
    expect(subLine?.reqId).toBe(batchLine?.reqId);
    const metrics = await app.inject({ url: '/__metrics__' });
    expect(metrics.body).toMatch(
      new RegExp(
        'quire_http_requests_total\\{method="GET",' +
          'route="/v1/buckets/:bucket_id/collections/:collection_id/records",status="200"\\} \\d+',
      ),
    );
  });
});
