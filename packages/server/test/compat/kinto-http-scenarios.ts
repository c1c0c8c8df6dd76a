/**
 * Compatibility with the published `kinto-http` npm client: the client drives a real Quire
 * deployment through its public API and must find the protocol it expects — server info,
 * creation, filters, sorting, pagination (following Next-Page), `_since` polling with
 * tombstones, batches chunked by `batch_max_requests`, 412 conflicts surfaced by the aggregated
 * batch result, and the permissions of the author; with the history plugin on, its history
 * listing and the snapshots it computes from it. Run on one embedded server (kinto-http.test.ts)
 * and on four processes behind one PgBouncer (kinto-http-pooled.test.ts).
 */
import { Buffer } from 'node:buffer';
import KintoClient, { type AggregateResponse, type KintoObject } from 'kinto-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A type alias, not an interface: kinto-http wants records assignable to an index signature.
type Item = {
  title: string;
  n: number;
  tag: 'even' | 'odd';
};
type ItemRecord = KintoObject & Item;

interface Call {
  method: string;
  url: string;
  status: number;
}

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const BUCKET = 'compat';

/** A deployment of Quire for the clients: its API root, and how to stop it. */
export interface Deployment {
  url: string;
  stop(): Promise<void>;
}

/**
 * The scenarios, against deployments `deploy` gives: one for the main scenarios, another with
 * the history plugin on (`{ history_enabled: true }`, settings by name). Skipped with `skip`, the
 * reason (printed by whoever found it).
 */
export function describeKintoHttp(
  target: string,
  deploy: (overrides: Record<string, unknown>) => Promise<Deployment>,
  { timeout = 30_000, skip }: { timeout?: number; skip?: string } = {},
): void {
  describe.skipIf(skip !== undefined)(`kinto-http against ${target}`, { timeout }, () => scenarios(deploy, timeout));
}

function scenarios(deploy: (overrides: Record<string, unknown>) => Promise<Deployment>, timeout: number): void {
  let remote: string;
  /** Every HTTP exchange made by the clients, in order (the fetch function is wrapped). */
  const calls: Call[] = [];

  function basic(user: string): string {
    return `Basic ${Buffer.from(`${user}:secret`).toString('base64')}`;
  }

  function client(user: string, server = remote): KintoClient {
    const fetchFunc = async (...[input, init]: Parameters<typeof fetch>): Promise<Response> => {
      const response = await fetch(input, init);
      calls.push({ method: init?.method ?? 'GET', url: String(input), status: response.status });
      return response;
    };
    return new KintoClient(server, { headers: { Authorization: basic(user) }, fetchFunc });
  }

  /** Runs `fn` and returns the calls it made. */
  async function recording<T>(fn: () => Promise<T>): Promise<{ result: T; made: Call[] }> {
    const start = calls.length;
    const result = await fn();
    return { result, made: calls.slice(start) };
  }

  /** The error a client call rejects with (kinto-http throws a ServerResponse with `data`). */
  async function rejection(
    promise: Promise<unknown>,
  ): Promise<{ response: { status: number }; data?: Record<string, unknown> }> {
    try {
      await promise;
    } catch (error) {
      return error as { response: { status: number }; data?: Record<string, unknown> };
    }
    throw new Error('expected the call to fail');
  }

  function titles(records: Array<{ title?: unknown }>): unknown[] {
    return records.map((record) => record.title);
  }

  let alice: KintoClient;
  let bob: KintoClient;
  let aliceId: string;
  let bobId: string;

  let stopServer: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const server = await deploy({});
    remote = server.url;
    stopServer = server.stop;
    alice = client('alice');
    bob = client('bob');
  }, 4 * timeout);

  afterAll(async () => {
    await stopServer?.();
  });

  describe('the scenarios', () => {
    it('reads the server info: API 1.22, batch_max_requests, the authenticated user', async () => {
      const info = await alice.fetchServerInfo();
      expect(info.http_api_version).toBe('1.22');
      expect(await alice.fetchHTTPApiVersion()).toBe('1.22');
      expect(info.settings.batch_max_requests).toBe(25);
      expect(info.settings.readonly).toBe(false);
      expect(info.url).toBe(`${remote}/`);
      expect(info.user?.id).toMatch(/^basicauth:[0-9a-f]{64}$/);
      expect(info.user?.principals).toEqual(
        expect.arrayContaining([info.user?.id, 'system.Everyone', 'system.Authenticated']),
      );
      aliceId = info.user!.id;
      bobId = (await bob.fetchServerInfo()).user!.id;
      expect(bobId).not.toBe(aliceId);
    });

    it('creates a bucket, a collection and records; the author is shown in permissions.write', async () => {
      const bucket = await alice.createBucket(BUCKET, { data: { title: 'Compatibility' } });
      expect(bucket.data).toMatchObject({ id: BUCKET, title: 'Compatibility', last_modified: expect.any(Number) });
      expect(bucket.permissions).toEqual({ write: [aliceId] });

      const collection = await alice.bucket(BUCKET).createCollection('items');
      expect(collection.data).toMatchObject({ id: 'items', last_modified: expect.any(Number) });
      expect(collection.permissions).toEqual({ write: [aliceId] });

      const items = alice.bucket(BUCKET).collection('items');
      let previous = 0;
      for (let i = 0; i < 12; i++) {
        const item: Item = { title: `item-${String(i).padStart(2, '0')}`, n: i % 4, tag: i % 2 === 0 ? 'even' : 'odd' };
        const created = await items.createRecord(item);
        expect(created.data).toEqual({ ...item, id: expect.stringMatching(UUID4), last_modified: expect.any(Number) });
        expect(created.data.last_modified).toBeGreaterThan(previous);
        previous = created.data.last_modified;
        expect(created.permissions).toEqual({ write: [aliceId] });
      }
      expect(await items.getTotalRecords()).toBe(12);

      const buckets = await alice.listBuckets();
      expect(buckets.data.map((b) => b.id)).toEqual([BUCKET]);
      const collections = await alice.bucket(BUCKET).listCollections();
      expect(collections.data.map((c) => c.id)).toEqual(['items']);
    });

    it('filters: equality, in_, min_, not_, and combined', async () => {
      const items = alice.bucket(BUCKET).collection('items');

      const twos = await items.listRecords<ItemRecord>({ filters: { n: 2 } });
      expect(twos.data.map((r) => r.title).sort()).toEqual(['item-02', 'item-06', 'item-10']);
      expect(twos.data.every((r) => r.n === 2)).toBe(true);

      const inList = await items.listRecords<ItemRecord>({ filters: { in_n: '1,3' } });
      expect(inList.data).toHaveLength(6);
      expect(inList.data.every((r) => r.n === 1 || r.n === 3)).toBe(true);

      const min = await items.listRecords<ItemRecord>({ filters: { min_n: 2 } });
      expect(min.data).toHaveLength(6);

      const notOdd = await items.listRecords<ItemRecord>({ filters: { not_tag: 'odd' } });
      expect(notOdd.data.every((r) => r.tag === 'even')).toBe(true);
      expect(notOdd.data).toHaveLength(6);

      const combined = await items.listRecords<ItemRecord>({ filters: { tag: 'even', in_n: '0,1' } });
      expect(combined.data.map((r) => r.title).sort()).toEqual(['item-00', 'item-04', 'item-08']);

      const none = await items.listRecords<ItemRecord>({ filters: { n: 42 } });
      expect(none.data).toEqual([]);
    });

    it('sorts: default -last_modified, ascending, descending and multi-field', async () => {
      const items = alice.bucket(BUCKET).collection('items');

      const byDefault = await items.listRecords<ItemRecord>();
      const stamps = byDefault.data.map((r) => r.last_modified);
      expect(stamps).toEqual([...stamps].sort((a, b) => b - a));
      expect(byDefault.last_modified).toBe(String(stamps[0]));

      const ascending = await items.listRecords<ItemRecord>({ sort: 'title' });
      expect(titles(ascending.data)).toEqual(
        Array.from({ length: 12 }, (_, i) => `item-${String(i).padStart(2, '0')}`),
      );

      const descending = await items.listRecords<ItemRecord>({ sort: '-title' });
      expect(titles(descending.data)).toEqual([...titles(ascending.data)].reverse());

      const multi = await items.listRecords<ItemRecord>({ sort: 'n,-title' });
      const expected = [...ascending.data].sort((a, b) => a.n - b.n || b.title.localeCompare(a.title));
      expect(titles(multi.data)).toEqual(titles(expected));
    });

    it('paginates with limit: pages: Infinity gets every record exactly once, next() walks pages', async () => {
      const items = alice.bucket(BUCKET).collection('items');

      for (const sort of ['-last_modified', 'title', 'n,-title']) {
        const { result: all, made } = await recording(() =>
          items.listRecords<ItemRecord>({ sort, limit: 5, pages: Infinity }),
        );
        expect(made).toHaveLength(3); // 5 + 5 + 2
        expect(all.data).toHaveLength(12);
        expect(new Set(all.data.map((r) => r.id)).size).toBe(12);
        expect(all.hasNextPage).toBe(false);
      }

      const first = await items.listRecords<ItemRecord>({ sort: 'title', limit: 5 });
      expect(titles(first.data)).toEqual(['item-00', 'item-01', 'item-02', 'item-03', 'item-04']);
      expect(first.hasNextPage).toBe(true);
      const second = await first.next();
      expect(titles(second.data)).toEqual(['item-05', 'item-06', 'item-07', 'item-08', 'item-09']);
      const third = await second.next();
      expect(titles(third.data)).toEqual(['item-10', 'item-11']);
      expect(third.hasNextPage).toBe(false);
      await expect(third.next()).rejects.toThrow('Pagination exhausted');

      const filtered = await items.listRecords<ItemRecord>({
        filters: { tag: 'odd' },
        sort: 'title',
        limit: 2,
        pages: Infinity,
      });
      expect(titles(filtered.data)).toEqual(['item-01', 'item-03', 'item-05', 'item-07', 'item-09', 'item-11']);
    });

    it('keeps pages stable when records are created while paginating (keyset tokens)', async () => {
      await alice.bucket(BUCKET).createCollection('moving');
      const moving = alice.bucket(BUCKET).collection('moving');
      for (let i = 0; i < 10; i++) await moving.createRecord({ title: `old-${i}` });

      const first = await moving.listRecords<KintoObject & { title: string }>({ limit: 4 });
      await moving.createRecord({ title: 'new-during-pagination' });
      const second = await first.next();
      const third = await second.next();
      const seen = [...first.data, ...second.data, ...third.data].map((r) => r.title);
      expect(seen).toHaveLength(10);
      expect(new Set(seen)).toEqual(new Set(Array.from({ length: 10 }, (_, i) => `old-${i}`)));
      expect(third.hasNextPage).toBe(false);
    });

    it('polls with since: nothing, then changes and tombstones after update and deleteRecord', async () => {
      const items = alice.bucket(BUCKET).collection('items');
      const listed = await items.listRecords<ItemRecord>({ sort: 'title' });
      const etag = listed.last_modified!;
      expect(etag).toMatch(/^\d+$/);
      expect(await items.getRecordsTimestamp()).toBe(`"${etag}"`);

      const quiet = await items.listRecords({ since: etag });
      expect(quiet.data).toEqual([]);
      expect(quiet.last_modified).toBe(etag);

      const [toUpdate, toDelete] = listed.data;
      const updated = await items.updateRecord<Item>({ ...toUpdate!, title: 'item-00-changed' });
      expect(updated.data.title).toBe('item-00-changed');
      expect(updated.data.last_modified).toBeGreaterThan(Number(etag));
      const deleted = await items.deleteRecord(toDelete!.id);
      expect(deleted.data).toEqual({ id: toDelete!.id, deleted: true, last_modified: expect.any(Number) });
      expect(deleted.data.last_modified).toBeGreaterThan(updated.data.last_modified);

      const changes = await items.listRecords<ItemRecord>({ since: etag });
      expect(changes.data).toEqual([
        { id: toDelete!.id, deleted: true, last_modified: deleted.data.last_modified },
        { ...toUpdate!, title: 'item-00-changed', last_modified: updated.data.last_modified },
      ]);
      expect(changes.last_modified).toBe(String(deleted.data.last_modified));

      const again = await items.listRecords({ since: changes.last_modified! });
      expect(again.data).toEqual([]);
      expect(await items.getTotalRecords()).toBe(11);
      // A plain list no longer shows the deleted record.
      const live = await items.listRecords<ItemRecord>({ pages: Infinity });
      expect(live.data.map((r) => r.id)).not.toContain(toDelete!.id);

      // since + filters + pagination, as a syncing client does.
      const paged = await items.listRecords<ItemRecord>({
        since: etag,
        limit: 1,
        pages: Infinity,
        sort: 'last_modified',
      });
      expect(paged.data.map((r) => r.id)).toEqual([toUpdate!.id, toDelete!.id]);
    });

    it('chunks a batch larger than batch_max_requests; the aggregate counts every published record', async () => {
      await alice.bucket(BUCKET).createCollection('bulk');
      const bulk = alice.bucket(BUCKET).collection('bulk');
      const max = (await alice.fetchServerSettings()).batch_max_requests;
      const count = max * 2 + 10;
      const ids = Array.from({ length: count }, (_, i) => `r${String(i).padStart(3, '0')}`);

      const { result, made } = await recording(
        () =>
          bulk.batch(
            (batch) => {
              ids.forEach((id, i) => void batch.createRecord({ id, i }));
            },
            { aggregate: true },
          ) as Promise<AggregateResponse>,
      );
      const posts = made.filter((call) => call.method === 'POST' && call.url.endsWith('/batch'));
      expect(posts).toHaveLength(3);
      expect(posts.every((call) => call.status === 200)).toBe(true);
      expect(result.errors).toEqual([]);
      expect(result.conflicts).toEqual([]);
      expect(result.skipped).toEqual([]);
      expect(result.published).toHaveLength(count);
      expect(result.published.map((body) => (body.data as KintoObject).id)).toEqual(ids);

      expect(await bulk.getTotalRecords()).toBe(count);
      const listed = await bulk.listRecords({ limit: 20, pages: Infinity });
      expect(listed.data.map((r) => r.id).sort()).toEqual(ids);

      // The server itself refuses an over-sized batch.
      const raw = await fetch(`${remote}/batch`, {
        method: 'POST',
        headers: { Authorization: basic('alice'), 'Content-Type': 'application/json' },
        body: JSON.stringify({ requests: Array.from({ length: max + 1 }, () => ({ path: '/' })) }),
      });
      expect(raw.status).toBe(400);
    });

    it('aggregates a mixed batch into published, skipped (404) and errors (400)', async () => {
      const bulk = alice.bucket(BUCKET).collection('bulk');
      const etag = (await bulk.listRecords()).last_modified!;
      const result = (await bulk.batch(
        (batch) => {
          void batch.updateRecord({ id: 'r000', i: -1 });
          void batch.deleteRecord('r001');
          void batch.deleteRecord('does-not-exist');
          void batch.createRecord({ id: 'not.valid', i: 0 });
        },
        { aggregate: true },
      )) as AggregateResponse;
      expect(result.published).toHaveLength(2);
      expect(result.published[0]!.data).toMatchObject({ id: 'r000', i: -1 });
      expect(result.published[1]!.data).toMatchObject({ id: 'r001', deleted: true });
      expect(result.skipped).toEqual([
        expect.objectContaining({ id: 'does-not-exist', error: expect.objectContaining({ code: 404, errno: 110 }) }),
      ]);
      expect(result.errors).toHaveLength(1);
      expect(result.errors[0]!.error).toMatchObject({ code: 400 });
      expect(result.conflicts).toEqual([]);

      // deleteRecord inside a batch, then listRecords since: the tombstone is there.
      const changes = await bulk.listRecords({ since: etag, sort: 'last_modified' });
      expect(changes.data).toEqual([
        expect.objectContaining({ id: 'r000', i: -1 }),
        { id: 'r001', deleted: true, last_modified: expect.any(Number) },
      ]);
    });

    it('reports 412 conflicts of safe writes with the remote record from details.existing', async () => {
      await alice.bucket(BUCKET).createCollection('conflicts');
      const coll = alice.bucket(BUCKET).collection('conflicts');
      const created = await coll.createRecord({ id: 'doc', title: 'v1' });
      const stale = created.data;
      const fresh = (await coll.updateRecord({ ...stale, title: 'v2' })).data;
      expect(fresh.last_modified).toBeGreaterThan(stale.last_modified);

      // Outside a batch: the client rejects with the server's 412 body.
      const error = await rejection(coll.updateRecord({ ...stale, title: 'v3' }, { safe: true }));
      expect(error.response.status).toBe(412);
      expect(error.data).toMatchObject({
        code: 412,
        errno: 114,
        error: 'Precondition Failed',
        details: { existing: fresh },
      });

      // A safe update with the current timestamp goes through.
      const ok = await coll.updateRecord({ ...fresh, title: 'v2.1' }, { safe: true });
      expect(ok.data.title).toBe('v2.1');
      const current = ok.data;

      // In a batch with aggregate: each 412 becomes a conflict carrying the remote record.
      const result = (await coll.batch(
        (batch) => {
          void batch.updateRecord({ ...stale, title: 'stale update' });
          void batch.createRecord({ id: 'doc', title: 'duplicate' }); // If-None-Match: *
          void batch.deleteRecord({ id: 'doc', last_modified: fresh.last_modified });
          void batch.createRecord({ id: 'other', title: 'fine' });
        },
        { safe: true, aggregate: true },
      )) as AggregateResponse;
      expect(result.errors).toEqual([]);
      expect(result.skipped).toEqual([]);
      expect(result.published).toEqual([
        { data: expect.objectContaining({ id: 'other', title: 'fine' }), permissions: { write: [aliceId] } },
      ]);
      expect(result.conflicts).toHaveLength(3);
      for (const conflict of result.conflicts as Array<{ type: string; remote: unknown }>) {
        expect(conflict.type).toBe('outgoing');
        expect(conflict.remote).toEqual(current);
      }
      expect((result.conflicts[0] as { local: { data: unknown } }).local.data).toMatchObject({
        id: 'doc',
        title: 'stale update',
      });

      // Nothing of the conflicting writes landed.
      expect((await coll.getRecord('doc')).data).toEqual(current);
    });

    it('shows permissions to the author only; a reader sees the records it may read', async () => {
      await alice.bucket(BUCKET).createCollection('shared');
      const shared = alice.bucket(BUCKET).collection('shared');
      const visible = await shared.createRecord({ title: 'for bob' }, { permissions: { read: [bobId] } });
      expect(visible.permissions).toEqual({ read: [bobId], write: [aliceId] });
      await shared.createRecord({ title: 'private' });

      const asAuthor = await shared.getRecord(visible.data.id);
      expect(asAuthor.permissions).toEqual({ read: [bobId], write: [aliceId] });
      expect(await shared.getPermissions()).toEqual({ write: [aliceId] });
      expect(await alice.bucket(BUCKET).getPermissions()).toEqual({ write: [aliceId] });

      const bobShared = bob.bucket(BUCKET).collection('shared');
      const asReader = await bobShared.getRecord(visible.data.id);
      expect(asReader.data).toEqual(visible.data);
      expect(asReader.permissions).toEqual({}); // not a writer: no ACL shown
      const bobList = await bobShared.listRecords();
      expect(bobList.data.map((r) => r.id)).toEqual([visible.data.id]);

      const denied = await rejection(bobShared.updateRecord({ ...visible.data, title: 'hijacked' }));
      expect(denied.response.status).toBe(403);
      const missing = await rejection(bob.bucket(BUCKET).collection('items').listRecords());
      expect(missing.response.status).toBe(403);

      // Alice grants bob write on the collection: he becomes a writer of its records too.
      await shared.addPermissions({ write: [bobId] });
      expect(await shared.getPermissions()).toEqual({ write: expect.arrayContaining([aliceId, bobId]) });
      const byBob = await bobShared.createRecord({ title: 'by bob' });
      expect(byBob.permissions).toEqual({ write: [bobId] });
      expect((await bobShared.listRecords()).data).toHaveLength(3);
    });

    it('handles fields, patch updates, collection data, filtered deleteRecords and groups', async () => {
      await alice.bucket(BUCKET).createCollection('misc');
      const misc = alice.bucket(BUCKET).collection('misc');
      for (let i = 0; i < 5; i++) await misc.createRecord({ id: `m${i}`, n: i, title: `t${i}` });

      const projected = await misc.listRecords({ fields: ['title'], sort: 'n', limit: 2 });
      expect(projected.data).toEqual([
        { id: 'm0', last_modified: expect.any(Number), title: 't0' },
        { id: 'm1', last_modified: expect.any(Number), title: 't1' },
      ]);
      expect((await misc.getRecord('m1', { fields: ['n'] })).data).toEqual({
        id: 'm1',
        last_modified: expect.any(Number),
        n: 1,
      });

      const patched = await misc.updateRecord({ id: 'm1', extra: true }, { patch: true });
      expect(patched.data).toEqual({ id: 'm1', n: 1, title: 't1', extra: true, last_modified: expect.any(Number) });

      await misc.setData({ displayed: 1 }, { patch: true });
      expect(await misc.getData()).toMatchObject({ id: 'misc', displayed: 1 });

      const removed = await misc.deleteRecords({ filters: { min_n: 3 } });
      expect(removed.data.map((r) => r.id).sort()).toEqual(['m3', 'm4']);
      expect(removed.data.every((r) => r.deleted === true)).toBe(true);
      expect(await misc.getTotalRecords()).toBe(3);

      const group = await alice.bucket(BUCKET).createGroup('editors', [bobId]);
      expect(group.data).toMatchObject({ id: 'editors', members: [bobId] });
      expect((await alice.bucket(BUCKET).listGroups()).data.map((g) => g.id)).toEqual(['editors']);
      // A group principal grants bob write on the collection, through addPermissions: kinto-http
      // writes the principal unescaped into a JSON Patch path (`/permissions/write//buckets/…`);
      // Quire reads the rest of the path as the principal (a JSON Pointer would split it).
      const editors = `/buckets/${BUCKET}/groups/editors`;
      await misc.addPermissions({ write: [editors] });
      expect(await misc.getPermissions()).toEqual({ write: expect.arrayContaining([aliceId, editors]) });
      await misc.removePermissions({ write: [editors] });
      expect((await misc.getPermissions()).write).not.toContain(editors);
      await misc.setPermissions({ write: [aliceId, editors] });
      const byEditor = await bob
        .bucket(BUCKET)
        .collection('misc')
        .updateRecord({ id: 'm0', n: 0, title: 'edited by bob' });
      expect(byEditor.data.title).toBe('edited by bob');
    });

    it('lists permissions: every object shared with the caller, expanded (listPermissions)', async () => {
      const info = await alice.fetchServerInfo();
      expect(info.capabilities).toHaveProperty('permissions_endpoint');
      const bucket = alice.bucket(BUCKET);
      await bucket.createCollection('shared', { permissions: { read: [bobId] } });
      const entries = await bob.listPermissions({ pages: Infinity });
      const shared = entries.data.find((entry) => entry.id === 'shared');
      expect(shared).toMatchObject({ resource_name: 'collection', bucket_id: BUCKET, collection_id: 'shared' });
      expect(shared?.permissions).toEqual(expect.arrayContaining(['read']));
      expect(entries.data.some((entry) => entry.resource_name === 'bucket' && entry.id === BUCKET)).toBe(false);
    });

    it("uses the personal bucket, the client's default bucket name, transparently", async () => {
      const info = await alice.fetchServerInfo();
      const personal = (info.user as { bucket?: string } | undefined)?.bucket;
      expect(personal).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      // No bucket name: kinto-http talks to `default`, created on first use with the collection.
      const tasks = alice.bucket('default').collection('tasks');
      const { data: created } = await tasks.createRecord({ title: 'milk', n: 1, tag: 'odd' });
      const { data: listed } = await tasks.listRecords();
      expect(listed.map((record) => record.id)).toEqual([created.id]);
      const { data: real } = await alice
        .bucket(personal as string)
        .collection('tasks')
        .getRecord(created.id);
      expect(real).toMatchObject({ title: 'milk' });
      // Each user has their own.
      expect((await bob.bucket('default').collection('tasks').listRecords()).data).toEqual([]);
    });

    it('lists and deletes buckets', async () => {
      await alice.createBucket('second');
      // The personal buckets (test above) are real buckets of their owners.
      const personal = (await alice.fetchServerInfo()).user as { bucket: string };
      const bobPersonal = ((await bob.fetchServerInfo()).user as { bucket: string }).bucket;
      const buckets = await alice.listBuckets({ sort: 'id' });
      expect(buckets.data.map((b) => b.id)).toEqual([BUCKET, 'second', personal.bucket].sort());
      expect((await bob.listBuckets()).data.map((b) => b.id)).toEqual([bobPersonal]);

      const deleted = await alice.deleteBuckets();
      expect(deleted.data.map((b) => b.id).sort()).toEqual([BUCKET, 'second', personal.bucket].sort());
      expect(deleted.data.every((b) => b.deleted === true)).toBe(true);
      expect((await alice.listBuckets()).data).toEqual([]);
      const gone = await rejection(alice.bucket(BUCKET).collection('items').listRecords());
      // As in Kinto: an unknown bucket is indistinguishable from a forbidden one.
      expect(gone.response.status).toBe(403);
      expect(gone.data).toMatchObject({ errno: 121 });
    });
  });

  describe('with history on', () => {
    let stopHistoryServer: (() => Promise<void>) | undefined;
    let writer: KintoClient;
    let stranger: KintoClient;

    beforeAll(async () => {
      const server = await deploy({ history_enabled: true });
      stopHistoryServer = server.stop;
      writer = client('alice', server.url);
      stranger = client('bob', server.url);
    }, 4 * timeout);

    afterAll(async () => {
      await stopHistoryServer?.();
    });

    it('lists the history with filters and pages, and computes snapshots from it (listRecords at)', async () => {
      expect(await writer.fetchServerInfo()).toMatchObject({ capabilities: { history: expect.any(Object) } });
      await writer.createBucket('hist');
      const bucket = writer.bucket('hist');
      await bucket.createCollection('notes');
      const notes = bucket.collection('notes');
      const a1 = (await notes.createRecord({ id: 'a', text: 'first' })).data;
      const b = (await notes.createRecord({ id: 'b', text: 'other' })).data;
      const a2 = (await notes.updateRecord({ id: 'a', text: 'second' })).data;
      await notes.deleteRecord('b');
      // Deleted through the plural endpoint, which kinto-http's snapshots treat with care.
      const c = (await notes.createRecord({ id: 'c', text: 'third' })).data;
      await notes.deleteRecords({ filters: { id: 'c' } });
      const d = (await notes.createRecord({ id: 'd', text: 'fourth' })).data;

      const { made, result: history } = await recording(() =>
        bucket.listHistory({ limit: 2, pages: Infinity, filters: { resource_name: 'record' } }),
      );
      expect(history.data.map((entry) => `${entry.action} ${entry.record_id}`)).toEqual([
        'create d',
        'delete c',
        'create c',
        'delete b',
        'update a',
        'create b',
        'create a',
      ]);
      expect(made).toHaveLength(4); // two entries per page, following Next-Page
      expect(history.data[4]).toMatchObject({
        uri: '/buckets/hist/collections/notes/records/a',
        collection_id: 'notes',
        target: { data: a2 },
      });

      const at = async (timestamp: number) => {
        const snapshot = await notes.listRecords({ at: timestamp });
        return snapshot.data.map((record) => `${record.id}:${String(record.text)}`).sort();
      };
      expect(await at(a1.last_modified)).toEqual(['a:first']);
      expect(await at(b.last_modified)).toEqual(['a:first', 'b:other']);
      expect(await at(a2.last_modified)).toEqual(['a:second', 'b:other']);
      expect(await at(c.last_modified)).toEqual(['a:second', 'c:third']);
      expect(await at(d.last_modified)).toEqual(['a:second', 'd:fourth']);

      // Someone who may read nothing of the bucket is refused its history.
      const refused = await rejection(stranger.bucket('hist').listHistory());
      expect(refused.response.status).toBe(403);
    });
  });
}
