/**
 * Issue 29, defect 4: open streams keep old rights, and deleted collections are never announced.
 * On both stores: a deleted collection (or bucket) gets an entry `deleted: true` above every
 * timestamp it served, on the polled monitor (with `_since`) and on the streams of those who could
 * read it, and nobody else's; a deleted account's streams end; a reader whose group vanished with
 * its bucket gets nothing of a bucket re-created under the same name.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';
import { openEventStream, type EventStreamReader } from './helpers/sse.js';

const MONITOR = '/v1/buckets/monitor/collections/changes/records';
const alice = basicAuth('alice');
const bob = basicAuth('bob');
const carol = basicAuth('carol');
let unique = 0;
const name = (prefix: string) => `${prefix}${Date.now().toString(36)}${unique++}`;

async function put(app: FastifyInstance, url: string, headers: Record<string, string>, payload: unknown = {}) {
  const response = await app.inject({ method: 'PUT', url, headers, payload: payload as never });
  if (response.statusCode >= 300) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
  return response.json();
}

async function userId(app: FastifyInstance, headers: Record<string, string>): Promise<string> {
  return (await app.inject({ url: '/v1/', headers })).json().user.id as string;
}

type Entry = { bucket: string; collection: string; last_modified: number; deleted?: boolean; id: string };

describeOnBackends(
  'rights and deletions on the change monitor (issue 29, defect 4)',
  { timeout: 60_000 },
  ({ serverWith }) => {
    const open: Array<EventStreamReader | FastifyInstance> = [];
    afterEach(async () => {
      for (const item of open.splice(0).reverse()) await item.close();
    });

    it('announces a deleted collection to its readers above all it served, with _since and on streams', async () => {
      const app = await serverWith({ changes_stream_coalesce_ms: 0 });
      open.push(app);
      const b = name('b');
      await put(app, `/v1/buckets/${b}`, alice);
      await put(app, `/v1/buckets/${b}/collections/c`, alice, { permissions: { read: [await userId(app, bob)] } });
      await put(app, `/v1/buckets/${b}/collections/kept`, alice);
      const record = await put(app, `/v1/buckets/${b}/collections/c/records/r`, alice, { data: {} });
      const before = await app.inject({ url: `${MONITOR}?bucket=${b}`, headers: bob });
      const etag = before.headers.etag as string;
      const [live] = before.json().data as Entry[];
      expect(live).toMatchObject({ collection: 'c', last_modified: record.data.last_modified });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const bobs = await openEventStream(`${base}${MONITOR}?bucket=${b}`, bob);
      open.push(bobs);
      await bobs.next();

      expect(
        (await app.inject({ method: 'DELETE', url: `/v1/buckets/${b}/collections/c`, headers: alice })).statusCode,
      ).toBe(200);

      // The poll with _since: the entry, deleted, newer than anything the collection served.
      const since = await app.inject({
        url: `${MONITOR}?bucket=${b}&_since=${etag.replaceAll('"', '')}`,
        headers: bob,
      });
      const [deleted] = since.json().data as Entry[];
      expect(deleted).toEqual({ ...live, deleted: true, last_modified: expect.any(Number) });
      expect(deleted!.last_modified).toBeGreaterThan(live!.last_modified);
      expect(since.headers.etag).toBe(`"${deleted!.last_modified}"`);
      // The list's ETag moved: a cache holding the old one is not told 304.
      expect((await app.inject({ url: MONITOR, headers: { ...bob, 'If-None-Match': etag } })).statusCode).toBe(200);
      // Without _since, as tombstones: not listed.
      expect((await app.inject({ url: `${MONITOR}?bucket=${b}`, headers: bob })).json().data).toEqual([]);
      // The stream says so too.
      const event = await bobs.next();
      expect(JSON.parse(event.data)).toEqual(deleted);
      expect(event.id).toBe(String(deleted!.last_modified));
      // Nobody else learns the name.
      expect((await app.inject({ url: `${MONITOR}?bucket=${b}&_since=0`, headers: carol })).json().data).toEqual([]);
      // A new stream resuming before the deletion gets it.
      const resumed = await openEventStream(`${base}${MONITOR}?bucket=${b}`, {
        ...bob,
        'Last-Event-ID': String(live!.last_modified),
      });
      open.push(resumed);
      expect(JSON.parse((await resumed.next()).data)).toEqual(deleted);

      // Re-created: the deletion entry goes, and the first write shows it live again, newer.
      await put(app, `/v1/buckets/${b}/collections/c`, alice, { permissions: { read: [await userId(app, bob)] } });
      const rewritten = await put(app, `/v1/buckets/${b}/collections/c/records/r2`, alice, { data: {} });
      expect(rewritten.data.last_modified).toBeGreaterThan(deleted!.last_modified);
      const again = (
        await app.inject({ url: `${MONITOR}?bucket=${b}&_since=${etag.replaceAll('"', '')}`, headers: bob })
      ).json().data as Entry[];
      expect(again).toEqual([{ ...live, last_modified: rewritten.data.last_modified }]);
      expect(JSON.parse((await bobs.until((e) => !JSON.parse(e.data).deleted)).at(-1)!.data)).toMatchObject({
        collection: 'c',
        last_modified: rewritten.data.last_modified,
      });
    });

    it('announces the collections of a deleted bucket; its re-created namesake gives old groups nothing', async () => {
      const app = await serverWith({ changes_stream_coalesce_ms: 0 });
      open.push(app);
      const b = name('b');
      const bobId = await userId(app, bob);
      await put(app, `/v1/buckets/${b}`, alice);
      await put(app, `/v1/buckets/${b}/groups/readers`, alice, { data: { members: [bobId] } });
      await put(app, `/v1/buckets/${b}/collections/c`, alice, {
        permissions: { read: [`/buckets/${b}/groups/readers`] },
      });
      const first = await put(app, `/v1/buckets/${b}/collections/c/records/r`, alice, { data: {} });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const bobs = await openEventStream(`${base}${MONITOR}?bucket=${b}`, bob);
      open.push(bobs);
      expect(Number((await bobs.next()).id)).toBe(first.data.last_modified);

      expect((await app.inject({ method: 'DELETE', url: `/v1/buckets/${b}`, headers: alice })).statusCode).toBe(200);
      const gone = JSON.parse((await bobs.next()).data) as Entry;
      expect(gone).toMatchObject({ bucket: b, collection: 'c', deleted: true });
      expect(gone.last_modified).toBeGreaterThan(first.data.last_modified);
      // Bob was a reader through a group that went with the bucket: he still learns of it.
      const polled = (
        await app.inject({ url: `${MONITOR}?bucket=${b}&_since=${first.data.last_modified}`, headers: bob })
      ).json().data as Entry[];
      expect(polled).toEqual([gone]);

      // The same names again, but no group `readers` this time: bob is nobody here.
      await put(app, `/v1/buckets/${b}`, alice);
      await put(app, `/v1/buckets/${b}/collections/c`, alice, {
        permissions: { read: [`/buckets/${b}/groups/readers`] },
      });
      await put(app, `/v1/buckets/${b}/collections/c/records/secret`, alice, { data: {} });
      await expect(bobs.next(500)).rejects.toThrow(/no event/);
      expect((await app.inject({ url: `${MONITOR}?bucket=${b}`, headers: bob })).json().data).toEqual([]);
    });

    it('ends the streams of a deleted account within a second', async () => {
      const app = await serverWith({
        multiauth_policies: ['account'],
        account_create_principals: ['system.Everyone'],
        changes_stream_coalesce_ms: 0,
      });
      open.push(app);
      const account = name('acc');
      const auth = basicAuth(account, 'secret');
      expect(
        (await app.inject({ method: 'PUT', url: `/v1/accounts/${account}`, payload: { data: { password: 'secret' } } }))
          .statusCode,
      ).toBe(201);
      const b = name('b');
      await put(app, `/v1/buckets/${b}`, auth);
      await put(app, `/v1/buckets/${b}/collections/c`, auth);
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const stream = await openEventStream(`${base}${MONITOR}`, auth);
      open.push(stream);
      await stream.next();
      const deleted = Date.now();
      expect((await app.inject({ method: 'DELETE', url: `/v1/accounts/${account}`, headers: auth })).statusCode).toBe(
        200,
      );
      await expect(stream.next(2_000)).rejects.toThrow(/stream ended/);
      expect(Date.now() - deleted).toBeLessThan(1_000);
    });
  },
);
