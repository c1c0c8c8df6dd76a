/**
 * The change monitor (capability `changes`): the kinto-changes listing, polled, and the same
 * feed as server-sent events, on both stores.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterEach, expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';
import { holdStream } from './helpers/held-streams.js';
import { openEventStream } from './helpers/sse.js';

const alice = basicAuth('alice');
const bob = basicAuth('bob');
const MONITOR = '/v1/buckets/monitor/collections/changes/records';

function kintoChangesId(host: string, uri: string): string {
  const hex = createHash('md5')
    .update(host + uri)
    .digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

async function put(app: FastifyInstance, url: string, headers: Record<string, string>, payload: unknown = {}) {
  const response = await app.inject({ method: 'PUT', url, headers, payload: payload as never });
  if (response.statusCode >= 300) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
  return response.json();
}

let unique = 0;
const name = (prefix: string) => `${prefix}${Date.now().toString(36)}${unique++}`;

describeOnBackends('change monitor', { timeout: 30_000 }, ({ serverWith }) => {
  const open: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const item of open.splice(0).reverse()) await item.close();
  });

  it('lists one entry per readable collection, with the records timestamp and a stable kinto-changes id', async () => {
    const app = await serverWith({});
    open.push(app);
    const b = name('b');
    await put(app, `/v1/buckets/${b}`, alice);
    await put(app, `/v1/buckets/${b}/collections/tasks`, alice);
    await put(app, `/v1/buckets/${b}/collections/notes`, alice);
    const record = await put(app, `/v1/buckets/${b}/collections/tasks/records/r1`, alice, { data: { n: 1 } });

    const hello = (await app.inject({ url: '/v1/' })).json();
    expect(hello.capabilities.changes).toMatchObject({
      stream: { url: '/buckets/monitor/collections/changes/records', accept: 'text/event-stream' },
    });

    const response = await app.inject({ url: `${MONITOR}?bucket=${b}`, headers: alice });
    expect(response.statusCode).toBe(200);
    const data = response.json().data as Array<Record<string, unknown>>;
    expect(data).toHaveLength(2);
    const tasks = data.find((entry) => entry.collection === 'tasks')!;
    expect(tasks).toEqual({
      id: kintoChangesId('', `/buckets/${b}/collections/tasks`),
      last_modified: record.data.last_modified,
      bucket: b,
      collection: 'tasks',
      host: '',
    });
    const listing = await app.inject({ url: `/v1/buckets/${b}/collections/tasks/records`, headers: alice });
    expect(listing.headers.etag).toBe(`"${tasks.last_modified}"`);
    // Sorted by -last_modified by default.
    expect(data[0]!.last_modified as number).toBeGreaterThanOrEqual(data[1]!.last_modified as number);

    // Bob reads nothing of alice's bucket; once given read on one collection, that one only.
    expect((await app.inject({ url: `${MONITOR}?bucket=${b}`, headers: bob })).json().data).toEqual([]);
    const bobId = (await app.inject({ url: '/v1/', headers: bob })).json().user.id as string;
    await app.inject({
      method: 'PATCH',
      url: `/v1/buckets/${b}/collections/notes`,
      headers: alice,
      payload: { permissions: { read: [bobId] } },
    });
    const forBob = (await app.inject({ url: `${MONITOR}?bucket=${b}`, headers: bob })).json().data as Array<
      Record<string, unknown>
    >;
    expect(forBob.map((entry) => entry.collection)).toEqual(['notes']);
  });

  it('answers _since, _before, ETag / 304, _sort, _limit with Next-Page', async () => {
    const app = await serverWith({});
    open.push(app);
    const b = name('b');
    await put(app, `/v1/buckets/${b}`, alice);
    for (const c of ['c1', 'c2', 'c3']) {
      await put(app, `/v1/buckets/${b}/collections/${c}`, alice);
      await put(app, `/v1/buckets/${b}/collections/${c}/records/r`, alice, { data: {} });
    }
    const all = await app.inject({ url: `${MONITOR}?bucket=${b}`, headers: alice });
    const entries = all.json().data as Array<{ collection: string; last_modified: number }>;
    expect(entries.map((entry) => entry.collection)).toEqual(['c3', 'c2', 'c1']);
    const etag = all.headers.etag as string;
    expect(etag).toBe(`"${entries[0]!.last_modified}"`);

    const since = await app.inject({
      url: `${MONITOR}?bucket=${b}&_since=${entries[1]!.last_modified}`,
      headers: alice,
    });
    expect(since.json().data.map((entry: { collection: string }) => entry.collection)).toEqual(['c3']);
    const before = await app.inject({
      url: `${MONITOR}?bucket=${b}&_before=${entries[1]!.last_modified}`,
      headers: alice,
    });
    expect(before.json().data.map((entry: { collection: string }) => entry.collection)).toEqual(['c1']);
    const sorted = await app.inject({ url: `${MONITOR}?bucket=${b}&_sort=collection`, headers: alice });
    expect(sorted.json().data.map((entry: { collection: string }) => entry.collection)).toEqual(['c1', 'c2', 'c3']);

    // Only alice's bucket is readable by alice here: the whole-list ETag is hers.
    const notModified = await app.inject({
      url: `${MONITOR}?bucket=${b}`,
      headers: { ...alice, 'If-None-Match': etag },
    });
    expect([200, 304]).toContain(notModified.statusCode); // other tests' buckets of alice may be newer
    const carol = basicAuth(name('carol'));
    const own = name('own');
    await put(app, `/v1/buckets/${own}`, carol);
    await put(app, `/v1/buckets/${own}/collections/c`, carol);
    await put(app, `/v1/buckets/${own}/collections/c/records/r`, carol, { data: {} });
    const carols = await app.inject({ url: MONITOR, headers: carol });
    expect(
      (await app.inject({ url: MONITOR, headers: { ...carol, 'If-None-Match': carols.headers.etag as string } }))
        .statusCode,
    ).toBe(304);

    const page1 = await app.inject({ url: `${MONITOR}?bucket=${b}&_limit=2`, headers: alice });
    expect(page1.json().data).toHaveLength(2);
    const next = page1.headers['next-page'] as string;
    expect(next).toContain('_token=');
    const page2 = await app.inject({ url: next.replace(/^https?:\/\/[^/]+/, ''), headers: alice });
    expect(page2.json().data.map((entry: { collection: string }) => entry.collection)).toEqual(['c1']);
    expect(page2.headers['next-page']).toBeUndefined();
  });

  it('with changes_resources, lists exactly those collections, to anyone', async () => {
    const b = name('pub');
    const app = await serverWith({ changes_resources: [`/buckets/${b}`, '/buckets/other/collections/one'] });
    open.push(app);
    await put(app, `/v1/buckets/${b}`, alice);
    await put(app, `/v1/buckets/${b}/collections/c`, alice);
    const hidden = name('hidden');
    await put(app, `/v1/buckets/${hidden}`, alice, { permissions: { read: ['system.Everyone'] } });
    await put(app, `/v1/buckets/${hidden}/collections/c`, alice);
    const anonymous = (await app.inject({ url: MONITOR })).json().data as Array<{ bucket: string }>;
    expect(anonymous.map((entry) => entry.bucket)).toEqual([b]);
    expect((await app.inject({ url: '/v1/' })).json().capabilities.changes.collections).toEqual([
      `/buckets/${b}`,
      '/buckets/other/collections/one',
    ]);
  });

  it('streams entries as server-sent events: backlog after Last-Event-ID, then each commit', async () => {
    const app = await serverWith({ changes_stream_heartbeat_seconds: 0.2 });
    open.push(app);
    const b = name('b');
    await put(app, `/v1/buckets/${b}`, alice);
    await put(app, `/v1/buckets/${b}/collections/c`, alice);
    const first = await put(app, `/v1/buckets/${b}/collections/c/records/r1`, alice, { data: {} });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });

    const stream = await openEventStream(`${base}${MONITOR}?bucket=${b}`, alice);
    open.push(stream);
    expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const backlog = await stream.next();
    expect(backlog.id).toBe(String(first.data.last_modified));
    expect(JSON.parse(backlog.data)).toMatchObject({
      bucket: b,
      collection: 'c',
      last_modified: first.data.last_modified,
    });

    const written = Date.now();
    const second = await put(app, `/v1/buckets/${b}/collections/c/records/r2`, alice, { data: {} });
    const live = await stream.next();
    expect(Date.now() - written).toBeLessThan(1000);
    expect(live.id).toBe(String(second.data.last_modified));
    await stream.waitForComment('heartbeat');

    // Resuming after the first id gives the second entry, not the first.
    const resumed = await openEventStream(`${base}${MONITOR}?bucket=${b}`, {
      ...alice,
      'Last-Event-ID': String(first.data.last_modified),
    });
    open.push(resumed);
    expect((await resumed.next()).id).toBe(String(second.data.last_modified));
    // Up to date: nothing more.
    const resumedLatest = await openEventStream(`${base}${MONITOR}?bucket=${b}`, {
      ...alice,
      'Last-Event-ID': String(second.data.last_modified),
    });
    open.push(resumedLatest);
    await expect(resumedLatest.next(300)).rejects.toThrow(/no event/);
  });

  it('coalesces a burst and stops sending to a reader whose permission is revoked', async () => {
    const app = await serverWith({ changes_stream_coalesce_ms: 20 });
    open.push(app);
    const b = name('b');
    const bobId = (await app.inject({ url: '/v1/', headers: bob })).json().user.id as string;
    await put(app, `/v1/buckets/${b}`, alice);
    await put(app, `/v1/buckets/${b}/collections/c`, alice, { permissions: { read: [bobId] } });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const stream = await openEventStream(`${base}${MONITOR}?bucket=${b}`, bob);
    open.push(stream);
    await stream.next(); // the collection's current timestamp

    const requests = Array.from({ length: 50 }, (_, i) => ({
      method: 'PUT',
      path: `/buckets/${b}/collections/c/records/r${i}`,
      body: { data: { i } },
    }));
    await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: { requests: requests.slice(0, 25) },
    });
    await app.inject({ method: 'POST', url: '/v1/batch', headers: alice, payload: { requests: requests.slice(25) } });
    const latest = (await app.inject({ url: `/v1/buckets/${b}/collections/c/records`, headers: alice })).headers
      .etag as string;
    const events = await stream.until((event) => `"${event.id}"` === latest);
    expect(events.length).toBeLessThanOrEqual(2);

    await app.inject({
      method: 'PATCH',
      url: `/v1/buckets/${b}/collections/c`,
      headers: alice,
      payload: { permissions: { read: [] } },
    });
    await put(app, `/v1/buckets/${b}/collections/c/records/after`, alice, { data: {} });
    await expect(stream.next(300)).rejects.toThrow(/no event/);
  });

  it('applies a group membership change to an open stream', async () => {
    const app = await serverWith({ changes_stream_coalesce_ms: 0 });
    open.push(app);
    const b = name('b');
    const bobId = (await app.inject({ url: '/v1/', headers: bob })).json().user.id as string;
    await put(app, `/v1/buckets/${b}`, alice);
    await put(app, `/v1/buckets/${b}/groups/readers`, alice, { data: { members: [bobId] } });
    await put(app, `/v1/buckets/${b}/collections/c`, alice, {
      permissions: { read: [`/buckets/${b}/groups/readers`] },
    });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const stream = await openEventStream(`${base}${MONITOR}?bucket=${b}`, bob);
    open.push(stream);
    await stream.next();
    const seen = await put(app, `/v1/buckets/${b}/collections/c/records/r1`, alice, { data: {} });
    expect((await stream.next()).id).toBe(String(seen.data.last_modified));
    // Bob leaves the group: the stream stops showing the collection.
    await put(app, `/v1/buckets/${b}/groups/readers`, alice, { data: { members: [] } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await put(app, `/v1/buckets/${b}/collections/c/records/r2`, alice, { data: {} });
    await expect(stream.next(300)).rejects.toThrow(/no event/);
  });

  it('caps streams per verified user, per address (every caller), per process, fairly (29.5, 36.7)', async () => {
    const app = await serverWith({
      multiauth_policies: ['account', 'basicauth'],
      account_create_principals: ['system.Everyone'],
      changes_stream_max_per_user: 1,
      changes_stream_max_per_address: 2,
      changes_stream_max_per_process: 4,
    });
    open.push(app);
    const origin = await app.listen({ port: 0, host: '127.0.0.1' });
    const hold = async (from: string, headers: Record<string, string>) => {
      const stream = await holdStream(origin, from, headers);
      open.push({ close: async () => stream.close() });
      return stream;
    };
    const signUp = async () => {
      const id = name('acc');
      const created = await app.inject({
        method: 'PUT',
        url: `/v1/accounts/${id}`,
        payload: { data: { password: 's' } },
      });
      expect(created.statusCode).toBe(201);
      return basicAuth(id, 's');
    };
    // Basic Auth: every made-up name is a new identity, so they count as one holder per address.
    const first = await hold('127.0.0.2', basicAuth(name('made-up')));
    const second = await hold('127.0.0.2', basicAuth(name('made-up')));
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(await hold('127.0.0.2', basicAuth(name('made-up')))).toMatchObject({
      status: 429,
      body: { errno: 117, message: 'Too many change streams are open from this address.' },
      retryAfter: expect.any(String),
    });
    // Anonymous callers are that same holder.
    expect((await hold('127.0.0.2', {})).status).toBe(429);
    // A verified account at that full address takes the place of the heavier holder's oldest stream.
    const account = await signUp();
    expect((await hold('127.0.0.2', account)).status).toBe(200);
    await first.ended;
    expect(second.isEnded).toBe(false);
    // Its own cap: one.
    expect(await hold('127.0.0.3', account)).toMatchObject({ status: 429, body: { errno: 117 } });
    // Two more accounts elsewhere fill the process.
    const mine = await hold('127.0.0.3', await signUp());
    expect(mine.status).toBe(200);
    expect((await hold('127.0.0.4', await signUp())).status).toBe(200);
    // Full: an address holding nothing takes the place of the oldest stream of the heaviest address.
    expect((await hold('127.0.0.5', await signUp())).status).toBe(200);
    await second.ended;
    // Now every address holds one: nobody holds more than a newcomer's share, the process is full.
    expect(await hold('127.0.0.6', {})).toMatchObject({ status: 503, retryAfter: expect.any(String) });
    // A closed stream frees its place.
    mine.close();
    await expect.poll(async () => (await hold('127.0.0.6', {})).status).toBe(200);
  });
});
