/**
 * §2 endpoint map and §4 bodies for records: POST/PUT/GET/DELETE, id rules (§4.2), body
 * validation (§1.3), 404 shapes, plural DELETE and HEAD counting (§7.8).
 */
import { describe, expect, it } from 'vitest';
import type { ErrorBody, ListBody } from '../harness/bodies.js';
import { createBucket, createCollectionFixture, createRecord, createRecords, randomId } from '../harness/fixtures.js';
import { del, get, head, post, put, request } from '../harness/http.js';
import {
  UUID4,
  expectApiError,
  expectETag,
  expectLastModified,
  expectTombstone,
  expectValidationError,
} from '../harness/matchers.js';
import { alice, bob, userId } from '../harness/users.js';

describe('§2 POST records', () => {
  it('creates with 201, a server-assigned lowercase UUID4 and the creator in permissions.write', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await post(fx.records, { auth: alice, body: { data: { title: 'First', n: 1 } } });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({
      title: 'First',
      n: 1,
      id: expect.stringMatching(UUID4),
      last_modified: expect.any(Number),
    });
    expect(res.json.permissions).toEqual({ write: [await userId(alice)] });
    expect(expectETag(res)).toBe(res.json.data.last_modified);
    expectLastModified(res, res.json.data.last_modified);
  });

  it('creates an empty record from an empty {} body', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await post(fx.records, { auth: alice, body: {} });
    expect(res.status).toBe(201);
    expect(Object.keys(res.json.data).sort()).toEqual(['id', 'last_modified']);
  });

  it('creates with a client-given data.id', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await post(fx.records, { auth: alice, body: { data: { id: 'my-id_1', a: 1 } } });
    expect(res.status).toBe(201);
    expect(res.json.data.id).toBe('my-id_1');
  });

  it('returns the existing record unchanged with 200 when data.id already exists', async () => {
    const fx = await createCollectionFixture(alice);
    const first = await post(fx.records, { auth: alice, body: { data: { id: 'dup', v: 1 } } });
    const second = await post(fx.records, { auth: alice, body: { data: { id: 'dup', v: 2 } } });
    expect(second.status).toBe(200);
    expect(second.json.data).toEqual(first.json.data);
    expect((await get(fx.record('dup'), { auth: alice })).json.data.v).toBe(1);
  });

  it('refuses an invalid or non-string posted id with 400', async () => {
    const fx = await createCollectionFixture(alice);
    expectValidationError(
      await post(fx.records, { auth: alice, body: { data: { id: 'Bad Id!' } } }),
      {},
      400,
      'path: Invalid object id',
    );
    expect((await post(fx.records, { auth: alice, body: { data: { id: 42 } } })).status).toBe(400);
  });

  it('answers 404 errno 111 with details when the collection does not exist (wire example)', async () => {
    const bucket = await createBucket(alice);
    const res = await post(`/buckets/${bucket}/collections/nope/records`, { auth: alice, body: { data: {} } });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({
      code: 404,
      errno: 111,
      error: 'Not Found',
      details: { id: 'nope', resource_name: 'collection' },
    });
  });
});

describe('§2/§4.3 PUT records', () => {
  it('creates with 201 (wire example "PUT record with explicit id")', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await put(fx.record('article-3'), {
      auth: alice,
      body: { data: { id: 'article-3', title: 'Third', n: 3 } },
    });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({ id: 'article-3', title: 'Third', n: 3, last_modified: expect.any(Number) });
    expect(res.json.permissions.write).toEqual([await userId(alice)]);
  });

  it('accepts a body without data.id', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await put(fx.record('r1'), { auth: alice, body: { data: { a: 1 } } });
    expect(res.status).toBe(201);
    expect(res.json.data.id).toBe('r1');
  });

  it('replaces with 200: data is not merged, last_modified increases', async () => {
    const fx = await createCollectionFixture(alice);
    const first = await put(fx.record('r1'), { auth: alice, body: { data: { a: 1, b: 2 } } });
    const res = await put(fx.record('r1'), { auth: alice, body: { data: { c: 3 } } });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ id: 'r1', c: 3, last_modified: expect.any(Number) });
    expect(res.json.data.last_modified).toBeGreaterThan(first.json.data.last_modified);
  });

  it('keeps the current data when the body has no data (permissions-only PUT)', async () => {
    const fx = await createCollectionFixture(alice);
    await put(fx.record('r1'), { auth: alice, body: { data: { keep: 'me' } } });
    const bobId = await userId(bob);
    const res = await put(fx.record('r1'), { auth: alice, body: { permissions: { read: [bobId] } } });
    expect(res.status).toBe(200);
    expect(res.json.data.keep).toBe('me');
    expect(res.json.permissions.read).toEqual([bobId]);
  });

  it('creates an empty object when the creating body has no data', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await put(fx.record('r1'), { auth: alice, body: {} });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({ id: 'r1', last_modified: expect.any(Number) });
  });

  it('re-creates over a tombstone with 201', async () => {
    const fx = await createCollectionFixture(alice);
    await put(fx.record('r1'), { auth: alice, body: { data: { v: 1 } } });
    await del(fx.record('r1'), { auth: alice });
    const res = await put(fx.record('r1'), { auth: alice, body: { data: { v: 2 } } });
    expect(res.status).toBe(201);
    expect(res.json.data.v).toBe(2);
    // The tombstone is replaced by the new object (§5.5).
    const changes = await get<ListBody>(`${fx.records}?_since=0`, { auth: alice });
    expect(changes.json.data).toEqual([res.json.data]);
  });
});

describe('§4.2 record ids', () => {
  it('accepts ids matching ^[a-zA-Z0-9][a-zA-Z0-9_-]*$, of any length', async () => {
    const fx = await createCollectionFixture(alice);
    for (const id of ['a', 'Z', '0', 'A-b_c', '0abc-', 'x'.repeat(200), '7c8ee3a2-4a7b-4f5c-9d1e-2b9f3c5d6e7f']) {
      const res = await put(fx.record(id), { auth: alice, body: { data: {} } });
      expect(res.status, id).toBe(201);
      expect(res.json.data.id).toBe(id);
    }
  });

  it('answers 400 "path: Invalid object id" for other ids (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    for (const id of ['_abc', '-abc', 'a.b', 'a@b', 'a b', 'é', 'a+b', 'a~b']) {
      const res = await put(fx.record(id), { auth: alice, body: { data: {} } });
      const body = expectValidationError(
        res,
        { location: 'path', name: null, description: 'Invalid object id' },
        400,
        'path: Invalid object id',
      );
      expect(body.details).toHaveLength(1);
    }
  });

  it('refuses an invalid id on GET, PATCH and DELETE too', async () => {
    const fx = await createCollectionFixture(alice);
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const res = await request(method, fx.record('a.b'), {
        auth: alice,
        ...(method === 'PATCH' ? { body: { data: { a: 1 } } } : {}),
      });
      expectValidationError(res, { location: 'path' }, 400, 'path: Invalid object id');
    }
  });
});

describe('§0/§1.3 body validation', () => {
  it('answers 400 when data.id differs from the path id', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await put(fx.record('r1'), { auth: alice, body: { data: { id: 'r2' } } });
    expectValidationError(res, { location: 'body', name: 'id' });
  });

  it('answers 400 for an unknown top-level key', async () => {
    const fx = await createCollectionFixture(alice);
    for (const body of [{ datta: {} }, { data: {}, extra: 1 }]) {
      const res = await post(fx.records, { auth: alice, body });
      expectValidationError(res, { location: 'body' });
    }
  });

  it('answers 400 when data is not an object (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    for (const data of ['not-an-object', 42, [1, 2], true]) {
      const res = await post(fx.records, { auth: alice, body: { data } });
      expectValidationError(res, { location: 'body', name: 'data' });
    }
  });

  it('answers 400 when permissions is malformed or names an unknown permission', async () => {
    const fx = await createCollectionFixture(alice);
    for (const permissions of [
      { read: 'system.Everyone' },
      { 'record:create': ['system.Everyone'] },
      { frobnicate: [] },
      'read',
    ]) {
      const res = await post(fx.records, { auth: alice, body: { data: {}, permissions } });
      expectValidationError(res, { location: 'body' });
    }
  });

  it('answers 400 errno 107 "Invalid JSON…" for malformed JSON (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await post(fx.records, {
      auth: alice,
      rawBody: '{"data": {"title": ',
      contentType: 'application/json',
    });
    const body = expectValidationError(res, { location: 'body' });
    expect(body.details[0]!.description).toMatch(/^Invalid JSON/);
    expect(body.message).toMatch(/^Invalid JSON/);
  });

  it('answers 400 for a JSON body that is not an object', async () => {
    const fx = await createCollectionFixture(alice);
    for (const raw of ['"a string"', '42', 'null', 'true', '[1, 2]']) {
      const res = await post(fx.records, { auth: alice, rawBody: raw, contentType: 'application/json' });
      expectValidationError(res, { location: 'body' });
    }
  });
});

describe('§2 GET a record and 404 shapes', () => {
  it('answers 200 with data, permissions, ETag and Last-Modified', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    const res = await get(fx.record(rec.id), { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual(rec);
    expect(res.json.permissions.write).toEqual([await userId(alice)]);
    expect(expectETag(res)).toBe(rec.last_modified);
    expectLastModified(res, rec.last_modified);
  });

  it('answers 404 errno 110 with details {id, resource_name} and no message (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await get(fx.record('does-not-exist'), { auth: alice });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({
      code: 404,
      errno: 110,
      error: 'Not Found',
      details: { id: 'does-not-exist', resource_name: 'record' },
    });
  });

  it('answers 404 errno 111 when the parent collection is missing in an existing bucket (wire example)', async () => {
    const bucket = await createBucket(alice);
    for (const path of [
      `/buckets/${bucket}/collections/nope/records`,
      `/buckets/${bucket}/collections/nope/records/r1`,
    ]) {
      const res = await get(path, { auth: alice });
      expect(res.status, path).toBe(404);
      expect(res.json).toEqual({
        code: 404,
        errno: 111,
        error: 'Not Found',
        details: { id: 'nope', resource_name: 'collection' },
      });
    }
  });

  it('answers 403 for records under a bucket that does not exist (§9.2)', async () => {
    const res = await get(`/buckets/${randomId('nope')}/collections/c/records`, { auth: alice });
    expectApiError(res, 403, 121);
  });

  it('answers 404 errno 110 to PATCH and DELETE of a missing record', async () => {
    const fx = await createCollectionFixture(alice);
    const p = await request<ErrorBody>('PATCH', fx.record('missing'), { auth: alice, body: { data: { a: 1 } } });
    expectApiError(p, 404, 110);
    expect(p.json.details).toEqual({ id: 'missing', resource_name: 'record' });
    expectApiError(await del(fx.record('missing'), { auth: alice }), 404, 110);
  });
});

describe('§2 DELETE a record', () => {
  it('returns exactly {data: {id, last_modified, deleted: true}} with the tombstone ETag (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    const res = await del(fx.record(rec.id), { auth: alice });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json)).toEqual(['data']);
    expectTombstone(res.json.data, rec.id);
    expect(res.json.data.last_modified).toBeGreaterThan(rec.last_modified);
    expect(expectETag(res)).toBe(res.json.data.last_modified);
  });

  it('then GET and a second DELETE answer 404 errno 110', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, {});
    await del(fx.record(rec.id), { auth: alice });
    expectApiError(await get(fx.record(rec.id), { auth: alice }), 404, 110);
    expectApiError(await del(fx.record(rec.id), { auth: alice }), 404, 110);
  });

  it('leaves a tombstone visible with _since but not in a plain listing (§5.4)', async () => {
    const fx = await createCollectionFixture(alice);
    const keep = await createRecord(alice, fx.bucket, fx.collection, { k: 1 });
    const gone = await createRecord(alice, fx.bucket, fx.collection, { k: 2 });
    const tomb = (await del(fx.record(gone.id), { auth: alice })).json.data;
    expect((await get<ListBody>(fx.records, { auth: alice })).json.data).toEqual([keep]);
    expect((await get<ListBody>(`${fx.records}?_since=0`, { auth: alice })).json.data).toEqual([tomb, keep]);
  });
});

describe('§2 plural records endpoints', () => {
  it('GET lists {data: [...]} newest first, items without permissions, no Total-* headers (1.21)', async () => {
    const fx = await createCollectionFixture(alice);
    const [a, b] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }]);
    const res = await get<ListBody>(fx.records, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: [b, a] });
    expect(res.headers.get('total-records')).toBeNull();
    expect(res.headers.get('total-objects')).toBeNull();
  });

  it('HEAD answers an empty body with Total-Objects and Total-Records (live, filtered) and ETag', async () => {
    const fx = await createCollectionFixture(alice);
    const recs = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 2 }]);
    await del(fx.record(recs[0].id), { auth: alice });
    const all = await head(fx.records, { auth: alice });
    expect(all.status).toBe(200);
    expect(all.text).toBe('');
    expect(all.headers.get('total-objects')).toBe('2');
    expect(all.headers.get('total-records')).toBe('2');
    const list = await get(fx.records, { auth: alice });
    expect(expectETag(all)).toBe(expectETag(list));
    const filtered = await head(`${fx.records}?n=2`, { auth: alice });
    expect(filtered.headers.get('total-objects')).toBe('2');
    const none = await head(`${fx.records}?n=1`, { auth: alice });
    expect(none.headers.get('total-objects')).toBe('0');
    expect(none.headers.get('total-records')).toBe('0');
  });

  it('DELETE deletes every record, each tombstone with its own increasing timestamp', async () => {
    const fx = await createCollectionFixture(alice);
    const recs = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const res = await del<ListBody>(fx.records, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data).toHaveLength(3);
    for (const t of res.json.data) expectTombstone(t);
    expect(res.json.data.map((t) => t.id).sort()).toEqual(recs.map((r) => r.id).sort());
    const stamps = res.json.data.map((t) => t.last_modified);
    expect(new Set(stamps).size).toBe(3);
    for (const s of stamps) expect(s).toBeGreaterThan(recs[2].last_modified);
    expect(expectETag(res)).toBe(Math.max(...stamps));
    expect((await get<ListBody>(fx.records, { auth: alice })).json.data).toEqual([]);
    expect((await get<ListBody>(`${fx.records}?_since=0`, { auth: alice })).json.data).toHaveLength(3);
  });

  it('DELETE honours filters', async () => {
    const fx = await createCollectionFixture(alice);
    const [a, b, c] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 1 }]);
    const res = await del<ListBody>(`${fx.records}?n=1`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data.map((t) => t.id).sort()).toEqual([a.id, c.id].sort());
    expect((await get<ListBody>(fx.records, { auth: alice })).json.data).toEqual([b]);
  });

  it('DELETE on an empty collection returns [] and the collection timestamp as ETag', async () => {
    const fx = await createCollectionFixture(alice);
    const list = await get(fx.records, { auth: alice });
    const res = await del(fx.records, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: [] });
    expect(expectETag(res)).toBe(expectETag(list));
  });

  it('answers 403 to a user without permission on the collection', async () => {
    const fx = await createCollectionFixture(alice);
    expectApiError(await get(fx.records, { auth: bob }), 403, 121);
    expectApiError(await del(fx.records, { auth: bob }), 403, 121);
    expectApiError(await post(fx.records, { auth: bob, body: { data: {} } }), 403, 121);
  });
});
