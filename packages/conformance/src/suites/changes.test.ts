/**
 * The change monitor (capability `changes`, the original's kinto-changes plugin):
 * `GET /buckets/monitor/collections/changes/records` lists one entry per collection
 * `{id, last_modified, bucket, collection, host}` — `last_modified` being the collection's records
 * ETag, `id` the UUID of the MD5 of `host + collection URI` — polled like any records list
 * (`_since`, `_before`, filters, `_sort`, `_limit` / `Next-Page`, ETag / `If-None-Match`).
 *
 * Two kinds of deployment: one whose capability names the `collections` it lists to everyone
 * (kinto-changes' `changes.resources`): only what can be checked without writing there runs; one
 * that lists every collection the caller may read (no `collections`, as Quire by default): the
 * checks create their own buckets. Deleted collections (an entry `deleted: true` with `_since`)
 * and the server-sent event stream (`capabilities.changes.stream`) are checked where offered.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { KintoObject, ListBody } from '../harness/bodies.js';
import { applicable, serverInfo } from '../harness/capabilities.js';
import { createBucket, createCollection, createRecord, listAll } from '../harness/fixtures.js';
import { del, get, patch, url } from '../harness/http.js';
import { expectETag } from '../harness/matchers.js';
import { alice, bob, userId, type User } from '../harness/users.js';

const MONITOR = '/buckets/monitor/collections/changes/records';
const info = await serverInfo();
const capability = info.capabilities.changes as
  | { collections?: unknown; stream?: { url?: string; accept?: string } }
  | undefined;
const configured = Array.isArray(capability?.collections) && capability.collections.length > 0;
const applies = applicable(info.hasCapability('changes'), 'change monitor', 'capability changes not offered');
const perCaller =
  applies &&
  applicable(
    !configured,
    'change monitor: what each caller may read',
    'the monitor lists the collections its settings name (capability changes.collections), to everyone',
  );
const streams =
  perCaller &&
  applicable(capability?.stream !== undefined, 'change monitor: event stream', 'no capabilities.changes.stream');

interface Entry extends KintoObject {
  bucket: string;
  collection: string;
  host: string;
}

/** kinto-changes: `str(UUID(md5(http_host + collection_uri).hexdigest()))`. */
function entryId(host: string, bucket: string, collection: string): string {
  const hex = createHash('md5').update(`${host}/buckets/${bucket}/collections/${collection}`, 'utf8').digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const monitor = (query = '', user: User | null = alice, headers: Record<string, string> = {}) =>
  get<ListBody<Entry>>(`${MONITOR}${query}`, { auth: user, headers });

describe.runIf(applies)('change monitor (capability changes)', () => {
  it('§11.1 capability `changes` has a description and a url', () => {
    expect(info.capabilities.changes).toMatchObject({ description: expect.any(String), url: expect.any(String) });
  });

  it('lists entries shaped as kinto-changes does, newest first, the ETag no older than the newest', async () => {
    const res = await monitor();
    expect(res.status).toBe(200);
    const entries = res.json.data;
    for (const entry of entries) {
      expect(entry).toEqual({
        id: entryId(entry.host, entry.bucket, entry.collection),
        last_modified: expect.any(Number),
        bucket: expect.any(String),
        collection: expect.any(String),
        host: expect.any(String),
      });
    }
    const stamps = entries.map((entry) => entry.last_modified);
    expect(stamps).toEqual([...stamps].sort((a, b) => b - a));
    // The newest entry's timestamp, or a newer one: a deleted collection's entry, listed only
    // with _since, moves it too.
    if (entries.length > 0) expect(expectETag(res)).toBeGreaterThanOrEqual(entries[0]!.last_modified);
  });

  it('answers 304 to If-None-Match with the current ETag, and only newer entries to _since', async () => {
    const first = await monitor();
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"\d+"$/);
    const again = await monitor('', alice, { 'If-None-Match': etag! });
    // Another client may have written meanwhile (the list is shared): then a 200 with a newer ETag.
    if (again.status === 200) expect(expectETag(again)).toBeGreaterThan(Number(etag!.slice(1, -1)));
    else expect(again.status).toBe(304);
    const since = await monitor(`?_since=${etag!.slice(1, -1)}`);
    expect(since.status).toBe(200);
    for (const entry of since.json.data) expect(entry.last_modified).toBeGreaterThan(Number(etag!.slice(1, -1)));
  });

  it('pages with _limit and Next-Page, every entry once', async () => {
    const all = (await monitor()).json.data;
    const { items, pages } = await listAll<Entry>(`${MONITOR}?_limit=1`, alice);
    if (all.length > 1) expect(pages.length).toBeGreaterThan(1);
    expect(new Set(items.map((entry) => entry.id)).size).toBe(items.length);
    expect(items.length).toBeGreaterThanOrEqual(all.length);
  });
});

describe.runIf(perCaller)('change monitor: what each caller may read', () => {
  it('lists one entry per collection the caller may read, last_modified being its records ETag', async () => {
    const bucket = await createBucket(alice);
    const tasks = await createCollection(alice, bucket);
    const notes = await createCollection(alice, bucket);
    const record = await createRecord(alice, bucket, tasks, { n: 1 });
    const res = await monitor(`?bucket=${bucket}`);
    const entries = res.json.data;
    expect(entries.map((entry) => entry.collection).sort()).toEqual([tasks, notes].sort());
    const entry = entries.find((item) => item.collection === tasks)!;
    expect(entry.last_modified).toBe(record.last_modified);
    const records = await get(`/buckets/${bucket}/collections/${tasks}/records`, { auth: alice });
    expect(records.headers.get('etag')).toBe(`"${entry.last_modified}"`);
  });

  it(
    'follows the permissions: nothing of another user’s bucket, one collection once it is shared, ' +
      'none once revoked',
    async () => {
      const bucket = await createBucket(alice);
      const shared = await createCollection(alice, bucket);
      await createCollection(alice, bucket);
      expect((await monitor(`?bucket=${bucket}`, bob)).json.data).toEqual([]);
      await patch(`/buckets/${bucket}/collections/${shared}`, {
        auth: alice,
        body: { permissions: { read: [await userId(bob)] } },
      });
      expect((await monitor(`?bucket=${bucket}`, bob)).json.data.map((entry) => entry.collection)).toEqual([shared]);
      await patch(`/buckets/${bucket}/collections/${shared}`, { auth: alice, body: { permissions: { read: [] } } });
      expect((await monitor(`?bucket=${bucket}`, bob)).json.data).toEqual([]);
    },
  );

  it('filters (bucket, in_collection), _since / _before and _sort on the entries', async () => {
    const bucket = await createBucket(alice);
    const collections = [
      await createCollection(alice, bucket),
      await createCollection(alice, bucket),
      await createCollection(alice, bucket),
    ];
    const stamps: number[] = [];
    for (const collection of collections) stamps.push((await createRecord(alice, bucket, collection)).last_modified);
    const names = async (query: string) =>
      (await monitor(`?bucket=${bucket}${query}`)).json.data.map((entry) => entry.collection);
    expect(await names('')).toEqual([...collections].reverse());
    expect(await names(`&_since=${stamps[0]}`)).toEqual([collections[2], collections[1]]);
    expect(await names(`&_before=${stamps[2]}`)).toEqual([collections[1], collections[0]]);
    expect(await names(`&in_collection=${collections[0]},${collections[2]}`)).toEqual([collections[2], collections[0]]);
    expect(await names('&_sort=collection')).toEqual([...collections].sort());
  });

  it(
    'announces a deleted collection with _since: deleted, above every timestamp it served, to who could read it ' +
      '(Quire)',
    async () => {
      const bucket = await createBucket(alice);
      const collection = await createCollection(alice, bucket, { permissions: { read: [await userId(bob)] } });
      const record = await createRecord(alice, bucket, collection);
      const before = await monitor(`?bucket=${bucket}`, bob);
      const etag = expectETag(before);
      expect((await del(`/buckets/${bucket}/collections/${collection}`, { auth: alice })).status).toBe(200);
      const since = await monitor(`?bucket=${bucket}&_since=${etag}`, bob);
      expect(since.json.data).toEqual([
        {
          id: entryId(before.json.data[0]!.host, bucket, collection),
          last_modified: expect.any(Number),
          bucket,
          collection,
          host: before.json.data[0]!.host,
          deleted: true,
        },
      ]);
      expect(since.json.data[0]!.last_modified).toBeGreaterThan(record.last_modified);
      expect(expectETag(since)).toBe(since.json.data[0]!.last_modified);
      // As a tombstone: not listed without _since.
      expect((await monitor(`?bucket=${bucket}`, bob)).json.data).toEqual([]);
    },
  );
});

describe.runIf(streams)('change monitor: event stream (capabilities.changes.stream)', () => {
  it('streams the entries (text/event-stream) from Last-Event-ID, then each change as it commits', async () => {
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket);
    const first = await createRecord(alice, bucket, collection);
    const controller = new AbortController();
    const response = await fetch(url(`${MONITOR}?bucket=${bucket}`), {
      headers: { Authorization: alice.authorization, Accept: 'text/event-stream' },
      signal: controller.signal,
    });
    try {
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      const until = async (done: () => boolean) => {
        const deadline = Date.now() + 10_000;
        while (!done()) {
          if (Date.now() > deadline) throw new Error(`no such event in: ${text.slice(0, 500)}`);
          const { value, done: ended } = await reader.read();
          if (ended) throw new Error('stream ended');
          text += value;
        }
      };
      await until(() => text.includes(`id: ${first.last_modified}\n`));
      const second = await createRecord(alice, bucket, collection);
      await until(() => text.includes(`id: ${second.last_modified}\n`));
      const event = /id: (\d+)\ndata: (.*)\n\n/.exec(text.slice(text.indexOf(`id: ${second.last_modified}`)))!;
      expect(JSON.parse(event[2]!)).toMatchObject({ bucket, collection, last_modified: second.last_modified });
    } finally {
      controller.abort();
    }
  });
});
