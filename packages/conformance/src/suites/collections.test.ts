/**
 * §2/§4 collections: create/replace/patch/delete, plural endpoints, cascades, and the optional
 * JSON-schema validation (capability `schema`, §4.1).
 */
import { describe, expect, it } from 'vitest';
import type { ListBody } from '../harness/bodies.js';
import { serverInfo, applicable } from '../harness/capabilities.js';
import {
  createBucket,
  createCollection,
  createCollectionFixture,
  createRecord,
  randomId,
} from '../harness/fixtures.js';
import { del, get, head, patch, post, put } from '../harness/http.js';
import {
  SHORT_ID,
  expectApiError,
  expectETag,
  expectLastModified,
  expectTombstone,
  expectValidationError,
} from '../harness/matchers.js';
import { alice, bob, userId } from '../harness/users.js';

const info = await serverInfo();

describe('§2 PUT /buckets/{bid}/collections/{cid}', () => {
  it('creates with 201 and the given data and permissions (wire example)', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/collections/articles`, {
      auth: alice,
      body: { data: { description: 'Blog articles' }, permissions: { read: ['system.Everyone'] } },
    });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({ description: 'Blog articles', id: 'articles', last_modified: expect.any(Number) });
    expect(res.json.permissions.read).toEqual(['system.Everyone']);
    expect(res.json.permissions.write).toEqual([await userId(alice)]);
    expect(expectETag(res)).toBe(res.json.data.last_modified);
  });

  it('creates with an empty body', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/collections/empty`, { auth: alice, body: {} });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({ id: 'empty', last_modified: expect.any(Number) });
  });

  it('replaces with 200', async () => {
    const bucket = await createBucket(alice);
    const cid = await createCollection(alice, bucket, { data: { a: 1 } });
    const res = await put(`/buckets/${bucket}/collections/${cid}`, { auth: alice, body: { data: { b: 2 } } });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ id: cid, b: 2, last_modified: expect.any(Number) });
  });

  it('refuses the permission names of other resources (collection accepts read, write, record:create)', async () => {
    const bucket = await createBucket(alice);
    const ok = await put(`/buckets/${bucket}/collections/ok`, {
      auth: alice,
      body: { permissions: { 'record:create': ['system.Authenticated'] } },
    });
    expect(ok.status).toBe(201);
    const res = await put(`/buckets/${bucket}/collections/bad`, {
      auth: alice,
      body: { permissions: { 'collection:create': ['system.Authenticated'] } },
    });
    expectValidationError(res, { location: 'body' });
  });
});

describe('§2 POST /buckets/{bid}/collections (1.2)', () => {
  it('creates with a generated 8-character id', async () => {
    const bucket = await createBucket(alice);
    const res = await post(`/buckets/${bucket}/collections`, { auth: alice, body: { data: { x: 1 } } });
    expect(res.status).toBe(201);
    expect(res.json.data.id).toMatch(SHORT_ID);
    expect(res.json.data.x).toBe(1);
  });

  it('creates with the given id, and returns the existing one with 200 on a second POST', async () => {
    const bucket = await createBucket(alice);
    const first = await post(`/buckets/${bucket}/collections`, { auth: alice, body: { data: { id: 'c1', v: 1 } } });
    expect(first.status).toBe(201);
    const second = await post(`/buckets/${bucket}/collections`, { auth: alice, body: { data: { id: 'c1', v: 2 } } });
    expect(second.status).toBe(200);
    expect(second.json.data).toEqual(first.json.data);
  });
});

describe('§2 GET, PATCH, DELETE a collection', () => {
  it('GET answers 200 with data, permissions, ETag and Last-Modified', async () => {
    const fx = await createCollectionFixture(alice, { collection: { data: { title: 't' } } });
    const res = await get(fx.path, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ id: fx.collection, title: 't', last_modified: expect.any(Number) });
    expect(res.json.permissions.write).toContain(await userId(alice));
    expect(expectETag(res)).toBe(res.json.data.last_modified);
    expectLastModified(res, res.json.data.last_modified);
  });

  it('PATCH with an arbitrary attribute returns the full object with it', async () => {
    const fx = await createCollectionFixture(alice, { collection: { data: { a: 1 } } });
    const res = await patch(fx.path, { auth: alice, body: { data: { fingerprint: 'abc' } } });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ id: fx.collection, a: 1, fingerprint: 'abc', last_modified: expect.any(Number) });
  });

  it('GET of a missing collection in an existing bucket answers 404 errno 110 with details', async () => {
    const bucket = await createBucket(alice);
    const res = await get(`/buckets/${bucket}/collections/nope`, { auth: alice });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({
      code: 404,
      errno: 110,
      error: 'Not Found',
      details: { id: 'nope', resource_name: 'collection' },
    });
  });

  it(
    'GET of a collection in a missing bucket answers 403 (§9.2: nobody holds permissions on a missing ' + 'bucket)',
    async () => {
      const res = await get(`/buckets/${randomId('nope')}/collections/c`, { auth: alice });
      expectApiError(res, 403, 121);
    },
  );

  it('DELETE returns the tombstone and removes the records without leaving record tombstones', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    const res = await del(fx.path, { auth: alice });
    expect(res.status).toBe(200);
    expectTombstone(res.json.data, fx.collection);
    expect(res.json).not.toHaveProperty('permissions');
    expectApiError(await get(fx.path, { auth: alice }), 404, 110);
    expectApiError(await get(fx.records, { auth: alice }), 404, 111);
    await createCollection(alice, fx.bucket, { id: fx.collection });
    const recs = await get<ListBody>(`${fx.records}?_since=0`, { auth: alice });
    expect(recs.status).toBe(200);
    expect(recs.json.data).toEqual([]);
  });

  it('the deleted collection shows as a tombstone in its own list with _since', async () => {
    const fx = await createCollectionFixture(alice);
    const tomb = (await del(fx.path, { auth: alice })).json.data;
    const res = await get<ListBody>(`/buckets/${fx.bucket}/collections?_since=0`, { auth: alice });
    expect(res.json.data).toEqual([tomb]);
  });
});

describe('§2 plural collections endpoints', () => {
  it('GET lists the collections of the bucket without permissions', async () => {
    const bucket = await createBucket(alice);
    await createCollection(alice, bucket, { id: 'a1', data: { t: 1 } });
    await createCollection(alice, bucket, { id: 'b2' });
    const res = await get<ListBody>(`/buckets/${bucket}/collections`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data.map((c) => c.id)).toEqual(['b2', 'a1']);
    for (const item of res.json.data) expect(item).not.toHaveProperty('permissions');
  });

  it('HEAD counts them', async () => {
    const bucket = await createBucket(alice);
    await createCollection(alice, bucket);
    await createCollection(alice, bucket);
    await createCollection(alice, bucket);
    const res = await head(`/buckets/${bucket}/collections`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.headers.get('total-objects')).toBe('3');
    expect(res.headers.get('total-records')).toBe('3');
  });

  it('DELETE deletes every collection (1.4) and returns their tombstones', async () => {
    const bucket = await createBucket(alice);
    const a = await createCollection(alice, bucket);
    const b = await createCollection(alice, bucket);
    await createRecord(alice, bucket, a, { x: 1 });
    const res = await del<ListBody>(`/buckets/${bucket}/collections`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data.map((t) => t.id).sort()).toEqual([a, b].sort());
    for (const t of res.json.data) expectTombstone(t);
    expect((await get<ListBody>(`/buckets/${bucket}/collections`, { auth: alice })).json.data).toEqual([]);
  });

  it('GET answers 403 to a user without any permission on the bucket', async () => {
    const bucket = await createBucket(alice);
    expectApiError(await get(`/buckets/${bucket}/collections`, { auth: bob }), 403, 121);
  });
});

describe.runIf(
  applicable(
    info.hasCapability('schema'),
    '§4.1 collection JSON schema',
    'schema validation disabled: no capability "schema"',
  ),
)('§4.1 collection JSON schema (capability "schema")', () => {
  const schema = {
    type: 'object',
    properties: { title: { type: 'string' }, n: { type: 'integer' } },
    required: ['title'],
  };

  it('stores the schema and validates records against it (wire example)', async () => {
    const fx = await createCollectionFixture(alice, { collection: { data: { schema } } });
    const bad = await post(fx.records, { auth: alice, body: { data: { title: 'ok', n: 'x' } } });
    expectValidationError(bad, { location: 'body', name: 'n' });
    const missing = await post(fx.records, { auth: alice, body: { data: { n: 1 } } });
    expectValidationError(missing, { location: 'body' });
  });

  it('marks valid records with schema = the collection last_modified', async () => {
    const fx = await createCollectionFixture(alice, { collection: { data: { schema } } });
    const col = await get(fx.path, { auth: alice });
    const res = await post(fx.records, { auth: alice, body: { data: { title: 'ok', n: 1 } } });
    expect(res.status).toBe(201);
    expect(res.json.data.schema).toBe(col.json.data.last_modified);
  });

  it('validates PUT and PATCH as well', async () => {
    const fx = await createCollectionFixture(alice, { collection: { data: { schema } } });
    const created = await put(fx.record('r1'), { auth: alice, body: { data: { title: 'ok' } } });
    expect(created.status).toBe(201);
    expectValidationError(await put(fx.record('r1'), { auth: alice, body: { data: { title: 5 } } }), {
      location: 'body',
    });
    expectValidationError(await patch(fx.record('r1'), { auth: alice, body: { data: { n: 'x' } } }), {
      location: 'body',
    });
  });

  it('refuses an invalid JSON schema with 400 on data.schema (wire example)', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/collections/badschema`, {
      auth: alice,
      body: { data: { schema: { type: 'nonsense' } } },
    });
    expectValidationError(res, { location: 'body', name: 'data.schema' });
  });

  it('removes the schema when set to an empty mapping', async () => {
    const fx = await createCollectionFixture(alice, { collection: { data: { schema } } });
    const res = await patch(fx.path, { auth: alice, body: { data: { schema: {} } } });
    expect(res.status).toBe(200);
    const rec = await post(fx.records, { auth: alice, body: { data: { n: 'anything' } } });
    expect(rec.status).toBe(201);
  });
});
