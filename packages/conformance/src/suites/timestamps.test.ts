/**
 * §5 timestamps: generation (§5.1), client-supplied last_modified (§5.2, the 1.18 rule),
 * collection timestamp / list ETag (§5.3).
 */
import { describe, expect, it } from 'vitest';
import type { BatchBody, ErrorBody, ListBody, ObjectBody } from '../harness/bodies.js';
import { serverInfo } from '../harness/capabilities.js';
import { createCollectionFixture, createRecord, createRecords } from '../harness/fixtures.js';
import { del, get, head, patch, post, put } from '../harness/http.js';
import { expectETag, expectLastModified, expectTimestamp } from '../harness/matchers.js';
import { alice } from '../harness/users.js';

const info = await serverInfo();
const batchSize = Math.min(info.batchMaxRequests ?? 20, 20);

describe('§5.1 generation', () => {
  it('gives integer millisecond timestamps', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, {});
    expectTimestamp(rec.last_modified);
    // Milliseconds since the epoch: after 2020-01-01, before 2200.
    expect(rec.last_modified).toBeGreaterThan(1_577_836_800_000);
    expect(rec.last_modified).toBeLessThan(7_258_118_400_000);
  });

  it(
    `keeps timestamps strictly increasing within a collection across rapid writes in one batch ` +
      `(${batchSize} writes)`,
    async () => {
      const fx = await createCollectionFixture(alice);
      const requests = Array.from({ length: batchSize }, (_, i) => ({
        method: 'POST',
        path: fx.records,
        body: { data: { i } },
      }));
      const res = await post<BatchBody>('/batch', { auth: alice, body: { requests } });
      expect(res.status).toBe(200);
      const stamps = res.json.responses.map((r) => {
        expect(r.status).toBe(201);
        return r.body.data.last_modified;
      });
      for (let i = 1; i < stamps.length; i++) expect(stamps[i]).toBeGreaterThan(stamps[i - 1]!);
    },
  );

  it(
    'keeps timestamps unique within a collection under concurrent requests (409 errno 122 allowed, ' + '§1.2)',
    async () => {
      const fx = await createCollectionFixture(alice);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          post<ObjectBody | ErrorBody>(fx.records, { auth: alice, body: { data: { i } } }),
        ),
      );
      const stamps: number[] = [];
      for (const r of results) {
        // A storage integrity error under concurrent writes is a documented answer: 409 errno 122 + Retry-After.
        if (r.status === 409) {
          expect((r.json as ErrorBody).errno).toBe(122);
          expect(r.headers.get('retry-after')).not.toBeNull();
          continue;
        }
        expect(r.status).toBe(201);
        stamps.push((r.json as ObjectBody).data.last_modified);
      }
      expect(stamps.length).toBeGreaterThan(0);
      expect(new Set(stamps).size).toBe(stamps.length);
      const list = await get(fx.records, { auth: alice });
      expect(expectETag(list)).toBe(Math.max(...stamps));
    },
  );

  it('gives every update a fresh timestamp, even with identical data (PUT and PATCH)', async () => {
    const fx = await createCollectionFixture(alice);
    const a = await put(fx.record('r'), { auth: alice, body: { data: { v: 1 } } });
    const b = await put(fx.record('r'), { auth: alice, body: { data: { v: 1 } } });
    const c = await patch(fx.record('r'), { auth: alice, body: { data: { v: 1 } } });
    expect(b.json.data.last_modified).toBeGreaterThan(a.json.data.last_modified);
    expect(c.json.data.last_modified).toBeGreaterThan(b.json.data.last_modified);
  });

  it('does not change the collection object when records are added (only the records list timestamp)', async () => {
    const fx = await createCollectionFixture(alice);
    const before = await get(fx.path, { auth: alice });
    const listBefore = await get(fx.records, { auth: alice });
    await createRecords(alice, fx, [{ a: 1 }, { a: 2 }]);
    const after = await get(fx.path, { auth: alice });
    expect(after.json.data.last_modified).toBe(before.json.data.last_modified);
    expect(expectETag(after)).toBe(expectETag(before));
    const listAfter = await get(fx.records, { auth: alice });
    expect(expectETag(listAfter)).toBeGreaterThan(expectETag(listBefore));
  });

  it('does not change the bucket object when collections are added', async () => {
    const fx = await createCollectionFixture(alice);
    const before = await get(`/buckets/${fx.bucket}`, { auth: alice });
    await put(`/buckets/${fx.bucket}/collections/another`, { auth: alice });
    const after = await get(`/buckets/${fx.bucket}`, { auth: alice });
    expect(after.json.data.last_modified).toBe(before.json.data.last_modified);
  });
});

describe('§5.3 collection timestamp (list ETag)', () => {
  it('equals the newest last_modified, tombstones included', async () => {
    const fx = await createCollectionFixture(alice);
    const [, b] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }]);
    const list = await get(fx.records, { auth: alice });
    expect(expectETag(list)).toBe(b.last_modified);
    expectLastModified(list, b.last_modified);
    const tomb = (await del(fx.record(b.id), { auth: alice })).json.data;
    const after = await get(fx.records, { auth: alice });
    expect(expectETag(after)).toBe(tomb.last_modified);
  });

  it('is stable across reads of an empty collection (GET, HEAD, repeated)', async () => {
    const fx = await createCollectionFixture(alice);
    const first = expectETag(await get(fx.records, { auth: alice }));
    const second = expectETag(await get(fx.records, { auth: alice }));
    const third = expectETag(await head(fx.records, { auth: alice }));
    await new Promise((r) => setTimeout(r, 20));
    const fourth = expectETag(await get(fx.records, { auth: alice }));
    expect([second, third, fourth]).toEqual([first, first, first]);
    const rec = await createRecord(alice, fx.bucket, fx.collection, {});
    expect(rec.last_modified).toBeGreaterThan(first);
    expect(expectETag(await get(fx.records, { auth: alice }))).toBe(rec.last_modified);
  });

  it('ignores filters, _since and pagination', async () => {
    const fx = await createCollectionFixture(alice);
    const recs = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const newest = recs[2].last_modified;
    for (const q of [
      '?n=1',
      '?n=999',
      `?_since=${newest}`,
      '?_limit=1',
      `?_before=${recs[0].last_modified}`,
      '?_sort=n&_fields=n',
    ]) {
      expect(expectETag(await get(`${fx.records}${q}`, { auth: alice })), q).toBe(newest);
    }
  });

  // A client holding the old ETag must learn that the list changed: a cache gets 200, a `_since`
  // poll sees the timestamp move past its own with nothing returned (the "server emptied" signal
  // kinto.js acts on). The original stores a fresh timestamp for the re-created list.
  for (const deleted of ['collection', 'bucket'] as const) {
    it(`moves past every old timestamp when the ${deleted} is deleted and re-created`, async () => {
      const fx = await createCollectionFixture(alice);
      await createRecords(alice, fx, [{ n: 1 }, { n: 2 }]);
      const old = expectETag(await get(fx.records, { auth: alice }));
      const parent = deleted === 'collection' ? fx.path : `/buckets/${fx.bucket}`;
      expect((await del(parent, { auth: alice })).status).toBe(200);
      if (deleted === 'bucket') expect((await put(`/buckets/${fx.bucket}`, { auth: alice })).status).toBe(201);
      expect((await put(fx.path, { auth: alice })).status).toBe(201);
      const cached = await get(fx.records, { auth: alice, headers: { 'If-None-Match': `"${old}"` } });
      expect(cached.status).toBe(200);
      expect(expectETag(cached)).toBeGreaterThan(old);
      const polled = await get<ListBody>(`${fx.records}?_since=${old}`, { auth: alice });
      expect(polled.status).toBe(200);
      expect(polled.json.data).toEqual([]);
      expect(expectETag(polled)).toBeGreaterThan(old);
    });
  }

  it('does not move on reads of a non-empty collection', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{}, {}]);
    const a = expectETag(await get(fx.records, { auth: alice }));
    await new Promise((r) => setTimeout(r, 20));
    const b = expectETag(await get(fx.records, { auth: alice }));
    expect(b).toBe(a);
  });
});

describe('§5.2 client-supplied last_modified (1.18)', () => {
  it('uses a value greater than the collection timestamp, which becomes the list ETag', async () => {
    const fx = await createCollectionFixture(alice);
    const first = await createRecord(alice, fx.bucket, fx.collection, {});
    const v = first.last_modified + 100_000;
    const res = await post(fx.records, { auth: alice, body: { data: { last_modified: v } } });
    expect(res.status).toBe(201);
    expect(res.json.data.last_modified).toBe(v);
    expect(expectETag(res)).toBe(v);
    expect(expectETag(await get(fx.records, { auth: alice }))).toBe(v);
    // The next write continues after it.
    const next = await createRecord(alice, fx.bucket, fx.collection, {});
    expect(next.last_modified).toBeGreaterThan(v);
  });

  it('keeps a smaller value on creation without moving the list ETag', async () => {
    const fx = await createCollectionFixture(alice);
    const first = await createRecord(alice, fx.bucket, fx.collection, {});
    const etagBefore = expectETag(await get(fx.records, { auth: alice }));
    const v = first.last_modified - 12_345;
    const res = await put(fx.record('old'), { auth: alice, body: { data: { last_modified: v } } });
    expect(res.status).toBe(201);
    expect(res.json.data.last_modified).toBe(v);
    expect(expectETag(await get(fx.records, { auth: alice }))).toBe(etagBefore);
    // It is invisible to a client already synced past v.
    const since = await get<ListBody>(`${fx.records}?_since=${etagBefore}`, { auth: alice });
    expect(since.json.data).toEqual([]);
  });

  it('bumps a value equal to the collection timestamp', async () => {
    const fx = await createCollectionFixture(alice);
    const first = await createRecord(alice, fx.bucket, fx.collection, {});
    const res = await post(fx.records, { auth: alice, body: { data: { last_modified: first.last_modified } } });
    expect(res.status).toBe(201);
    expect(res.json.data.last_modified).toBeGreaterThan(first.last_modified);
  });

  it('ignores a value not greater than the current one on update (normal bump)', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, { v: 1 });
    for (const value of [rec.last_modified, rec.last_modified - 1000]) {
      const current = (await get(fx.record(rec.id), { auth: alice })).json.data.last_modified;
      const res = await put(fx.record(rec.id), { auth: alice, body: { data: { v: 2, last_modified: value } } });
      expect(res.status).toBe(200);
      expect(res.json.data.last_modified).toBeGreaterThan(current);
    }
  });

  it('uses a greater value on update (PUT and PATCH)', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, { v: 1 });
    const v1 = rec.last_modified + 50_000;
    const a = await put(fx.record(rec.id), { auth: alice, body: { data: { v: 2, last_modified: v1 } } });
    expect(a.json.data.last_modified).toBe(v1);
    const v2 = v1 + 50_000;
    const b = await patch(fx.record(rec.id), { auth: alice, body: { data: { v: 3, last_modified: v2 } } });
    expect(b.json.data.last_modified).toBe(v2);
  });

  it('silently drops a value that is not an integer', async () => {
    const fx = await createCollectionFixture(alice);
    for (const value of ['1234', 12.5, null]) {
      const res = await post(fx.records, { auth: alice, body: { data: { last_modified: value } } });
      expect(res.status, String(value)).toBe(201);
      expectTimestamp(res.json.data.last_modified);
      expect(res.json.data.last_modified).toBeGreaterThan(1_577_836_800_000);
    }
  });

  it('applies ?last_modified= on object DELETE when greater than the current value', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, {});
    const v = rec.last_modified + 70_000;
    const res = await del(`${fx.record(rec.id)}?last_modified=${v}`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data.last_modified).toBe(v);
    expect(expectETag(await get(fx.records, { auth: alice }))).toBe(v);
  });
});
