/**
 * §2 endpoint map and §4 bodies for buckets (cascades, plural endpoints, server-generated ids).
 */
import { describe, expect, it } from 'vitest';
import type { ErrorBody, ListBody } from '../harness/bodies.js';
import { createBucket, createCollection, createRecord, randomId, trackBucket } from '../harness/fixtures.js';
import { del, get, head, post, put } from '../harness/http.js';
import {
  SHORT_ID,
  expectApiError,
  expectETag,
  expectLastModified,
  expectTombstone,
  expectValidationError,
} from '../harness/matchers.js';
import { alice, bob, createUser, userId } from '../harness/users.js';

describe('§2 PUT /buckets/{id}', () => {
  it('creates with 201, data {id, last_modified}, creator in permissions.write, ETag and Last-Modified', async () => {
    const id = randomId();
    trackBucket(id, alice);
    const res = await put(`/buckets/${id}`, { auth: alice });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({ id, last_modified: expect.any(Number) });
    expect(res.json.permissions).toEqual({ write: [await userId(alice)] });
    expect(expectETag(res)).toBe(res.json.data.last_modified);
    expectLastModified(res, res.json.data.last_modified);
  });

  it('creates with an empty {} body', async () => {
    const id = randomId();
    trackBucket(id, alice);
    const res = await put(`/buckets/${id}`, { auth: alice, body: {} });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({ id, last_modified: expect.any(Number) });
  });

  it('accepts arbitrary attributes (1.4) and returns them', async () => {
    const id = randomId();
    trackBucket(id, alice);
    const res = await put(`/buckets/${id}`, { auth: alice, body: { data: { title: 'Blog', meta: { a: [1] } } } });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({ id, title: 'Blog', meta: { a: [1] }, last_modified: expect.any(Number) });
    const got = await get(`/buckets/${id}`, { auth: alice });
    expect(got.json.data).toEqual(res.json.data);
  });

  it('replaces an existing bucket with 200 (no merge) and a newer timestamp', async () => {
    const id = await createBucket(alice, { data: { a: 1, b: 2 } });
    const before = await get(`/buckets/${id}`, { auth: alice });
    const res = await put(`/buckets/${id}`, { auth: alice, body: { data: { c: 3 } } });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ id, c: 3, last_modified: expect.any(Number) });
    expect(res.json.data.last_modified).toBeGreaterThan(before.json.data.last_modified);
  });

  it('answers 400 "path: Invalid object id" for an id outside ^[a-zA-Z0-9][a-zA-Z0-9_-]*$', async () => {
    for (const bad of ['a.b', '_abc', '-abc', 'a@b', 'a%20b']) {
      const res = await put(`/buckets/${bad}`, { auth: alice, body: { data: {} } });
      expectValidationError(
        res,
        { location: 'path', name: null, description: 'Invalid object id' },
        400,
        'path: Invalid object id',
      );
    }
  });

  it('answers 400 when data.id differs from the path id', async () => {
    const id = randomId();
    trackBucket(id, alice);
    const res = await put(`/buckets/${id}`, { auth: alice, body: { data: { id: `${id}-other` } } });
    expectValidationError(res, { location: 'body', name: 'id' });
  });

  it('accepts the bucket permission names and refuses others with 400 (§4.6)', async () => {
    const bobId = await userId(bob);
    const ok = await createBucket(alice, {
      permissions: { read: [bobId], 'collection:create': [bobId], 'group:create': [bobId] },
    });
    const got = await get(`/buckets/${ok}`, { auth: alice });
    expect(got.json.permissions['collection:create']).toEqual([bobId]);
    expect(got.json.permissions['group:create']).toEqual([bobId]);
    const id = randomId();
    trackBucket(id, alice);
    const res = await put(`/buckets/${id}`, {
      auth: alice,
      body: { data: {}, permissions: { 'record:create': [bobId] } },
    });
    const body = expectValidationError(res, { location: 'body' });
    expect(body.details.some((d) => String(d.name).startsWith('permissions'))).toBe(true);
  });
});

describe('§2 POST /buckets', () => {
  it('creates with 201 and the given data.id', async () => {
    const id = randomId();
    trackBucket(id, alice);
    const res = await post('/buckets', { auth: alice, body: { data: { id, x: 1 } } });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({ id, x: 1, last_modified: expect.any(Number) });
  });

  it('generates an 8-character id when none is given (§4.2)', async () => {
    const res = await post('/buckets', { auth: alice, body: { data: { x: 1 } } });
    expect(res.status).toBe(201);
    trackBucket(res.json.data.id, alice);
    expect(res.json.data.id).toMatch(SHORT_ID);
  });

  it('returns the existing bucket unchanged with 200 when data.id exists', async () => {
    const id = await createBucket(alice, { data: { original: true } });
    const res = await post('/buckets', { auth: alice, body: { data: { id, original: false } } });
    expect(res.status).toBe(200);
    expect(res.json.data.original).toBe(true);
  });

  it('refuses an invalid posted id with 400 "path: Invalid object id"', async () => {
    const res = await post('/buckets', { auth: alice, body: { data: { id: 'no.dots' } } });
    expectValidationError(res, { location: 'path', description: 'Invalid object id' }, 400, 'path: Invalid object id');
  });
});

describe('§2 GET and HEAD /buckets', () => {
  it('lists the readable buckets as {data: [...]} without permissions on items', async () => {
    const user = createUser();
    const a = await createBucket(user);
    const b = await createBucket(user, { data: { t: 1 } });
    const res = await get<ListBody>('/buckets', { auth: user });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json)).toEqual(['data']);
    const ids = res.json.data.map((x) => x.id).sort();
    expect(ids).toEqual([a, b].sort());
    for (const item of res.json.data) expect(item).not.toHaveProperty('permissions');
    expectETag(res);
  });

  it('gives an empty list (not 403) to a user who may create buckets but owns none (1.11)', async () => {
    const res = await get('/buckets', { auth: createUser() });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: [] });
  });

  it("does not show other users' private buckets", async () => {
    const id = await createBucket(alice);
    const res = await get<ListBody>('/buckets', { auth: bob });
    expect(res.status).toBe(200);
    expect(res.json.data.map((x) => x.id)).not.toContain(id);
  });

  it('counts with HEAD: Total-Objects and Total-Records, empty body', async () => {
    const user = createUser();
    await createBucket(user);
    await createBucket(user);
    const res = await head('/buckets', { auth: user });
    expect(res.status).toBe(200);
    expect(res.headers.get('total-objects')).toBe('2');
    expect(res.headers.get('total-records')).toBe('2');
    expect(res.text).toBe('');
    expectETag(res);
  });

  it(
    'answers 401 errno 104 to an anonymous listing (bucket:create is granted to system.Authenticated ' + 'only)',
    async () => {
      const res = await get('/buckets');
      expectApiError(res, 401, 104, 'Please authenticate yourself to use this endpoint.');
    },
  );
});

describe('§2 DELETE /buckets/{id} and cascades', () => {
  it('returns the tombstone {id, last_modified, deleted} without permissions', async () => {
    const id = await createBucket(alice);
    const res = await del(`/buckets/${id}`, { auth: alice });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json)).toEqual(['data']);
    expectTombstone(res.json.data, id);
    expect(expectETag(res)).toBe(res.json.data.last_modified);
  });

  it('makes the bucket unreachable afterwards (403: nobody holds permissions on a missing bucket, §9.2)', async () => {
    const id = await createBucket(alice);
    await del(`/buckets/${id}`, { auth: alice });
    const res = await get(`/buckets/${id}`, { auth: alice });
    expectApiError(res, 403, 121, 'This user cannot access this resource.');
  });

  it('deletes every child (collections, groups, records) without leaving child tombstones', async () => {
    const id = await createBucket(alice);
    const cid = await createCollection(alice, id);
    await createRecord(alice, id, cid, { a: 1 });
    await put(`/buckets/${id}/groups/g1`, { auth: alice, body: { data: { members: [] } } });
    expect((await del(`/buckets/${id}`, { auth: alice })).status).toBe(200);
    // Re-create the bucket with the same id: it must be empty.
    await createBucket(alice, { id });
    const cols = await get<ListBody>(`/buckets/${id}/collections?_since=0`, { auth: alice });
    expect(cols.status).toBe(200);
    expect(cols.json.data).toEqual([]);
    const groups = await get<ListBody>(`/buckets/${id}/groups?_since=0`, { auth: alice });
    expect(groups.json.data).toEqual([]);
    const col = await get<ErrorBody>(`/buckets/${id}/collections/${cid}`, { auth: alice });
    expectApiError(col, 404, 110);
    expect(col.json.details).toEqual({ id: cid, resource_name: 'collection' });
    const recs = await get(`/buckets/${id}/collections/${cid}/records`, { auth: alice });
    expectApiError(recs, 404, 111);
  });

  it('answers 403 to a second DELETE: a deleted bucket is reported like any missing bucket (§9.2)', async () => {
    const id = await createBucket(alice);
    await del(`/buckets/${id}`, { auth: alice });
    const res = await del<ListBody>(`/buckets/${id}`, { auth: alice });
    expectApiError(res, 403, 121);
  });
});

describe('§2 DELETE /buckets (plural)', () => {
  it("deletes every bucket the caller can write and returns their tombstones, leaving others' buckets", async () => {
    const user = createUser();
    const a = await createBucket(user);
    const b = await createBucket(user);
    const other = await createBucket(bob);
    const res = await del<ListBody>('/buckets', { auth: user });
    expect(res.status).toBe(200);
    const ids = res.json.data.map((t) => t.id).sort();
    expect(ids).toEqual([a, b].sort());
    for (const t of res.json.data) expectTombstone(t);
    const stamps = res.json.data.map((t) => t.last_modified);
    expect(new Set(stamps).size).toBe(stamps.length);
    expect((await get<ListBody>('/buckets', { auth: user })).json.data).toEqual([]);
    expect((await get(`/buckets/${other}`, { auth: bob })).status).toBe(200);
  });

  it('returns an empty list when there is nothing to delete', async () => {
    const res = await del('/buckets', { auth: createUser() });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: [] });
  });
});

describe('§9.2 buckets of other users', () => {
  it('answers 403 errno 121 to an authenticated user reading a private bucket (wire example)', async () => {
    const id = await createBucket(alice);
    const res = await get(`/buckets/${id}`, { auth: bob });
    expect(res.status).toBe(403);
    expect(res.json).toEqual({
      code: 403,
      errno: 121,
      error: 'Forbidden',
      message: 'This user cannot access this resource.',
    });
  });

  it('answers 403 to an authenticated user reading a bucket that does not exist (wire example)', async () => {
    const res = await get(`/buckets/${randomId('nope')}`, { auth: bob });
    expectApiError(res, 403, 121);
  });

  it('answers 403 when another user PUTs over an existing bucket', async () => {
    const id = await createBucket(alice);
    const res = await put(`/buckets/${id}`, { auth: bob, body: { data: {} } });
    expectApiError(res, 403, 121);
  });
});
