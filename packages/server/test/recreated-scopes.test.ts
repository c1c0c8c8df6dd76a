/**
 * A deleted and re-created bucket or collection never answers for its old self (issue 29,
 * defect 3): every list below it (records, collections, groups, history) gets a timestamp above
 * every one the old lists served. A cache holding an old ETag then gets 200, not 304, and a
 * client polling `_since=<old ETag>` sees the list's timestamp move past its own with nothing
 * returned — the "server was flushed" signal that Kinto's clients (and ours) act on.
 */
import type { FastifyInstance } from 'fastify';
import { expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';

const alice = { ...basicAuth('alice'), 'content-type': 'application/json' };

async function put(app: FastifyInstance, url: string, payload: unknown = {}): Promise<{ last_modified: number }> {
  const response = await app.inject({ method: 'PUT', url, headers: alice, payload: payload as object });
  expect(response.statusCode, `PUT ${url}: ${response.body}`).toBeLessThan(300);
  return response.json().data;
}

async function del(app: FastifyInstance, url: string): Promise<void> {
  const response = await app.inject({ method: 'DELETE', url, headers: alice });
  expect(response.statusCode, `DELETE ${url}: ${response.body}`).toBe(200);
}

/** The list's ETag as a number. */
async function etagOf(app: FastifyInstance, url: string): Promise<number> {
  const response = await app.inject({ url, headers: alice });
  expect(response.statusCode, `GET ${url}: ${response.body}`).toBe(200);
  return Number(JSON.parse(response.headers.etag as string));
}

/** What a client holding `old` learns from the re-created list: it must not be told "nothing changed". */
async function expectMovedPast(app: FastifyInstance, url: string, old: number): Promise<void> {
  const cached = await app.inject({ url, headers: { ...alice, 'if-none-match': `"${old}"` } });
  expect(cached.statusCode, `If-None-Match: "${old}" on ${url}`).toBe(200);
  expect(Number(JSON.parse(cached.headers.etag as string))).toBeGreaterThan(old);
  const polled = await app.inject({ url: `${url}?_since=${old}`, headers: alice });
  expect(polled.statusCode).toBe(200);
  expect(polled.json().data).toEqual([]);
  expect(Number(JSON.parse(polled.headers.etag as string)), `_since=${old} on ${url}`).toBeGreaterThan(old);
}

describeOnBackends('a deleted and re-created bucket or collection', { timeout: 30_000 }, ({ serverWith }) => {
  it('a re-created collection: its list answers 200 to the old ETag; _since=<old> shows it moved past', async () => {
    const app = await serverWith();
    await put(app, '/v1/buckets/b1');
    await put(app, '/v1/buckets/b1/collections/c');
    await put(app, '/v1/buckets/b1/collections/c/records/r1', { data: { n: 1 } });
    await put(app, '/v1/buckets/b1/collections/c/records/r2', { data: { n: 2 } });
    await del(app, '/v1/buckets/b1/collections/c/records/r2'); // a tombstone: the newest timestamp served
    const old = await etagOf(app, '/v1/buckets/b1/collections/c/records');
    const notModified = await app.inject({
      url: '/v1/buckets/b1/collections/c/records',
      headers: { ...alice, 'if-none-match': `"${old}"` },
    });
    expect(notModified.statusCode).toBe(304);

    await del(app, '/v1/buckets/b1/collections/c');
    await put(app, '/v1/buckets/b1/collections/c');
    await expectMovedPast(app, '/v1/buckets/b1/collections/c/records', old);

    // A record written afterwards is above the old list, and so is the list's next timestamp.
    const written = await put(app, '/v1/buckets/b1/collections/c/records/r3', { data: { n: 3 } });
    expect(written.last_modified).toBeGreaterThan(old);
    const since = await app.inject({ url: `/v1/buckets/b1/collections/c/records?_since=${old}`, headers: alice });
    expect(since.json().data.map((r: { id: string }) => r.id)).toEqual(['r3']);
    await app.close();
  });

  it('a collection deleted, re-created, written in one batch: its list moves past every old timestamp', async () => {
    const app = await serverWith();
    await put(app, '/v1/buckets/b2');
    await put(app, '/v1/buckets/b2/collections/c');
    await put(app, '/v1/buckets/b2/collections/c/records/r1', { data: { n: 1 } });
    const old = await etagOf(app, '/v1/buckets/b2/collections/c/records');
    const batch = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: {
        requests: [
          { method: 'GET', path: '/buckets/b2/collections/c/records' },
          { method: 'DELETE', path: '/buckets/b2/collections/c' },
          { method: 'PUT', path: '/buckets/b2/collections/c' },
          { method: 'GET', path: '/buckets/b2/collections/c/records' },
        ],
      },
    });
    const responses = batch.json().responses as Array<{ status: number; headers: Record<string, string> }>;
    expect(responses.map((r) => r.status)).toEqual([200, 200, 201, 200]);
    expect(Number(JSON.parse(responses[3]!.headers.ETag!))).toBeGreaterThan(old);
    await expectMovedPast(app, '/v1/buckets/b2/collections/c/records', old);
    await app.close();
  });

  it('a re-created bucket: its collections, groups and records lists move past the old ones', async () => {
    const app = await serverWith();
    await put(app, '/v1/buckets/b3');
    await put(app, '/v1/buckets/b3/groups/g', { data: { members: ['basicauth:someone'] } });
    await put(app, '/v1/buckets/b3/collections/c');
    await put(app, '/v1/buckets/b3/collections/c/records/r1', { data: { n: 1 } });
    const lists = ['/v1/buckets/b3/collections', '/v1/buckets/b3/groups', '/v1/buckets/b3/collections/c/records'];
    const old = new Map<string, number>();
    for (const list of lists) old.set(list, await etagOf(app, list));

    await del(app, '/v1/buckets/b3');
    await put(app, '/v1/buckets/b3');
    await expectMovedPast(app, '/v1/buckets/b3/groups', old.get('/v1/buckets/b3/groups')!);
    await expectMovedPast(app, '/v1/buckets/b3/collections', old.get('/v1/buckets/b3/collections')!);
    await put(app, '/v1/buckets/b3/collections/c');
    // The collections list now holds the new collection, above the old list's timestamp.
    const collections = await app.inject({
      url: `/v1/buckets/b3/collections?_since=${old.get('/v1/buckets/b3/collections')}`,
      headers: alice,
    });
    expect(collections.json().data.map((c: { id: string }) => c.id)).toEqual(['c']);
    await expectMovedPast(
      app,
      '/v1/buckets/b3/collections/c/records',
      old.get('/v1/buckets/b3/collections/c/records')!,
    );
    // A record of the same id, written again, gets a timestamp above the old record's.
    const again = await put(app, '/v1/buckets/b3/collections/c/records/r1', { data: { n: 1 } });
    expect(again.last_modified).toBeGreaterThan(old.get('/v1/buckets/b3/collections/c/records')!);
    await app.close();
  });

  it('a re-created bucket: its history list moves past the old one', async () => {
    const app = await serverWith({ history_enabled: true });
    await put(app, '/v1/buckets/b4');
    await put(app, '/v1/buckets/b4/collections/c');
    await put(app, '/v1/buckets/b4/collections/c/records/r1', { data: { n: 1 } });
    const old = await etagOf(app, '/v1/buckets/b4/history');
    const entries = await app.inject({ url: '/v1/buckets/b4/history', headers: alice });
    expect(entries.json().data.length).toBeGreaterThan(0);

    await del(app, '/v1/buckets/b4');
    await put(app, '/v1/buckets/b4');
    const cached = await app.inject({
      url: '/v1/buckets/b4/history',
      headers: { ...alice, 'if-none-match': `"${old}"` },
    });
    expect(cached.statusCode).toBe(200);
    const polled = await app.inject({ url: `/v1/buckets/b4/history?_since=${old}`, headers: alice });
    // The re-created bucket's own creation is its history now, above the old entries.
    for (const entry of polled.json().data as Array<{ last_modified: number; uri: string }>) {
      expect(entry.last_modified).toBeGreaterThan(old);
      expect(entry.uri).toBe('/buckets/b4');
    }
    expect(Number(JSON.parse(polled.headers.etag as string))).toBeGreaterThan(old);
    await app.close();
  });
});
