/**
 * Interface spec "Permissions and principals" rules 1–4, §4.6 permissions in bodies,
 * §9.2 inheritance and denial (401/104 vs 403/121).
 */
import { describe, expect, it } from 'vitest';
import type { ListBody } from '../harness/bodies.js';
import { createBucket, createCollection, createCollectionFixture, createRecord } from '../harness/fixtures.js';
import { del, get, patch, post, put } from '../harness/http.js';
import { expectApiError } from '../harness/matchers.js';
import { alice, bob, createUser, userId } from '../harness/users.js';

describe('Rule 1: the creator is added to write', () => {
  it('on buckets, collections, groups and records', async () => {
    const aliceId = await userId(alice);
    const bucket = await createBucket(alice);
    for (const res of [
      await get(`/buckets/${bucket}`, { auth: alice }),
      await put(`/buckets/${bucket}/collections/c`, { auth: alice }),
      await put(`/buckets/${bucket}/groups/g`, { auth: alice }),
      await post(`/buckets/${bucket}/collections/c/records`, { auth: alice, body: { data: {} } }),
    ]) {
      expect(res.status).toBeLessThan(300);
      expect(res.json.permissions.write).toEqual([aliceId]);
    }
  });

  it('even when the body gives a write list without the caller', async () => {
    const bucket = await createBucket(alice, { permissions: { write: ['basicauth:someone-else'] } });
    const res = await get(`/buckets/${bucket}`, { auth: alice });
    expect([...res.json.permissions.write!].sort()).toEqual(['basicauth:someone-else', await userId(alice)].sort());
  });
});

describe('§9.2 denial: 401 for anonymous, 403 for authenticated', () => {
  it('answers 403 errno 121 to another user on a private bucket, collection and record', async () => {
    const fx = await createCollectionFixture(alice);
    const rec = await createRecord(alice, fx.bucket, fx.collection, {});
    for (const path of [`/buckets/${fx.bucket}`, fx.path, fx.records, fx.record(rec.id)]) {
      const res = await get(path, { auth: bob });
      expect(res.status, path).toBe(403);
      expect(res.json).toEqual({
        code: 403,
        errno: 121,
        error: 'Forbidden',
        message: 'This user cannot access this resource.',
      });
    }
  });

  it('answers 401 errno 104 with WWW-Authenticate to an anonymous read (wire example)', async () => {
    const bucket = await createBucket(alice);
    const res = await get(`/buckets/${bucket}`);
    expect(res.status).toBe(401);
    expect(res.json).toEqual({
      code: 401,
      errno: 104,
      error: 'Unauthorized',
      message: 'Please authenticate yourself to use this endpoint.',
    });
    expect(res.headers.get('www-authenticate') ?? '').toMatch(/Basic realm=/);
  });

  it('answers 401 errno 104 to an anonymous write (wire example)', async () => {
    const res = await put('/buckets/anon-bucket-conformance');
    expectApiError(res, 401, 104, 'Please authenticate yourself to use this endpoint.');
    expect(res.headers.get('www-authenticate')).not.toBeNull();
  });

  it('answers 403 to another user writing into a private collection (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    expectApiError(await post(fx.records, { auth: bob, body: { data: { title: 'bob was here' } } }), 403, 121);
  });
});

describe('§4.6 permissions shown only to writers', () => {
  it('shows permissions {} to a reader without write (1.11)', async () => {
    const bobId = await userId(bob);
    const bucket = await createBucket(alice, { permissions: { read: [bobId] } });
    const res = await get(`/buckets/${bucket}`, { auth: bob });
    expect(res.status).toBe(200);
    expect(res.json.permissions).toEqual({});
    expect(res.json.data.id).toBe(bucket);
  });

  it('does not count inherited write: a bucket writer reading a record created by someone else sees {}', async () => {
    const bobId = await userId(bob);
    const fx = await createCollectionFixture(alice, { bucket: { permissions: { write: [bobId] } } });
    const rec = await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    const res = await get(fx.record(rec.id), { auth: bob });
    expect(res.status).toBe(200);
    expect(res.json.permissions).toEqual({});
    // Writing it (allowed through the bucket) adds bob to the record's own write list.
    const replaced = await put(fx.record(rec.id), { auth: bob, body: { data: { a: 2 } } });
    expect(replaced.status).toBe(200);
    expect([...replaced.json.permissions.write!].sort()).toEqual([await userId(alice), bobId].sort());
  });
});

describe('§4.6 sharing through the permissions of a body', () => {
  it('read shared with a user on a collection lets them list and read records, not write', async () => {
    const bobId = await userId(bob);
    const fx = await createCollectionFixture(alice, { collection: { permissions: { read: [bobId] } } });
    const rec = await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    const list = await get<ListBody>(fx.records, { auth: bob });
    expect(list.status).toBe(200);
    expect(list.json.data).toEqual([rec]);
    expect((await get(fx.record(rec.id), { auth: bob })).status).toBe(200);
    expect((await get(fx.path, { auth: bob })).status).toBe(200);
    expectApiError(await post(fx.records, { auth: bob, body: { data: {} } }), 403, 121);
    expectApiError(await put(fx.record(rec.id), { auth: bob, body: { data: {} } }), 403, 121);
    expectApiError(await del(fx.record(rec.id), { auth: bob }), 403, 121);
    expectApiError(await patch(fx.path, { auth: bob, body: { data: { x: 1 } } }), 403, 121);
  });

  it('system.Authenticated grants every authenticated user but not anonymous callers', async () => {
    const fx = await createCollectionFixture(alice, {
      collection: { permissions: { read: ['system.Authenticated'] } },
    });
    expect((await get(fx.records, { auth: createUser() })).status).toBe(200);
    expectApiError(await get(fx.records), 401, 104);
  });

  it('system.Everyone grants anonymous callers too', async () => {
    const fx = await createCollectionFixture(alice, { collection: { permissions: { read: ['system.Everyone'] } } });
    const rec = await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    const res = await get<ListBody>(fx.records);
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual([rec]);
    expect((await get(fx.record(rec.id))).status).toBe(200);
  });

  it('PUT with non-empty permissions clears the names not given; PUT without permissions keeps them', async () => {
    const bobId = await userId(bob);
    const bucket = await createBucket(alice);
    const cid = await createCollection(alice, bucket, { permissions: { read: [bobId], 'record:create': [bobId] } });
    const path = `/buckets/${bucket}/collections/${cid}`;
    const keep = await put(path, { auth: alice, body: { data: { t: 1 } } });
    expect(keep.json.permissions.read).toEqual([bobId]);
    expect(keep.json.permissions['record:create']).toEqual([bobId]);
    const same = await put(path, { auth: alice, body: { data: { t: 2 }, permissions: {} } });
    expect(same.json.permissions.read).toEqual([bobId]);
    const replaced = await put(path, { auth: alice, body: { data: { t: 3 }, permissions: { read: ['basicauth:x'] } } });
    expect(replaced.status).toBe(200);
    expect(replaced.json.permissions.read).toEqual(['basicauth:x']);
    expect(replaced.json.permissions['record:create'] ?? []).toEqual([]);
    expect(replaced.json.permissions.write).toEqual([await userId(alice)]);
  });

  it('lets a reader not change permissions (write is required)', async () => {
    const bobId = await userId(bob);
    const fx = await createCollectionFixture(alice, { collection: { permissions: { read: [bobId] } } });
    expectApiError(await patch(fx.path, { auth: bob, body: { permissions: { write: [bobId] } } }), 403, 121);
  });
});

describe('§9.2 create permissions and listing restrictions', () => {
  it('record:create lets a user POST, read the parent collection (1.11) and list only their own records', async () => {
    const bobId = await userId(bob);
    const fx = await createCollectionFixture(alice, { collection: { permissions: { 'record:create': [bobId] } } });
    await createRecord(alice, fx.bucket, fx.collection, { by: 'alice' });
    const empty = await get<ListBody>(fx.records, { auth: bob });
    expect(empty.status).toBe(200);
    expect(empty.json.data).toEqual([]);
    const mine = await post(fx.records, { auth: bob, body: { data: { by: 'bob' } } });
    expect(mine.status).toBe(201);
    expect(mine.json.permissions.write).toEqual([bobId]);
    const list = await get<ListBody>(fx.records, { auth: bob });
    expect(list.json.data).toEqual([mine.json.data]);
    expect((await get(fx.path, { auth: bob })).status).toBe(200);
    const count = await get<ListBody>(fx.records, { auth: alice });
    expect(count.json.data).toHaveLength(2);
  });

  it('collection:create on a bucket lets a user create collections and see an empty collections list', async () => {
    const carol = createUser('carol');
    const carolId = await userId(carol);
    const bucket = await createBucket(alice, { permissions: { 'collection:create': [carolId] } });
    await createCollection(alice, bucket, { id: 'alices' });
    const list = await get<ListBody>(`/buckets/${bucket}/collections`, { auth: carol });
    expect(list.status).toBe(200);
    expect(list.json.data).toEqual([]);
    const created = await put(`/buckets/${bucket}/collections/carols`, { auth: carol });
    expect(created.status).toBe(201);
    expect((await get<ListBody>(`/buckets/${bucket}/collections`, { auth: carol })).json.data.map((c) => c.id)).toEqual(
      ['carols'],
    );
    // Parent attributes are readable when creating children is allowed (1.11).
    expect((await get(`/buckets/${bucket}`, { auth: carol })).status).toBe(200);
    expectApiError(await put(`/buckets/${bucket}/collections/alices`, { auth: carol, body: { data: {} } }), 403, 121);
  });

  it('a user can always replace and delete what they created (rule 3)', async () => {
    const bobId = await userId(bob);
    const fx = await createCollectionFixture(alice, { collection: { permissions: { 'record:create': [bobId] } } });
    const mine = await post(fx.records, { auth: bob, body: { data: { v: 1 } } });
    expect((await put(fx.record(mine.json.data.id), { auth: bob, body: { data: { v: 2 } } })).status).toBe(200);
    expect((await del(fx.record(mine.json.data.id), { auth: bob })).status).toBe(200);
  });

  it('a bucket reader can read every child; a bucket writer can write every child', async () => {
    const reader = createUser('reader');
    const writer = createUser('writer');
    const fx = await createCollectionFixture(alice, {
      bucket: { permissions: { read: [await userId(reader)], write: [await userId(writer)] } },
    });
    const rec = await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    expect((await get(fx.record(rec.id), { auth: reader })).status).toBe(200);
    expectApiError(await put(fx.record(rec.id), { auth: reader, body: { data: {} } }), 403, 121);
    expect((await put(fx.record(rec.id), { auth: writer, body: { data: { a: 2 } } })).status).toBe(200);
    expect((await del(fx.path, { auth: writer })).status).toBe(200);
  });

  it(
    'GET of a missing record answers 404 to a reader of the parent and 403 to others ' + '(no existence leak)',
    async () => {
      const bobId = await userId(bob);
      const fx = await createCollectionFixture(alice, { collection: { permissions: { read: [bobId] } } });
      expectApiError(await get(fx.record('missing'), { auth: bob }), 404, 110);
      expectApiError(await get(fx.record('missing'), { auth: createUser() }), 403, 121);
    },
  );
});
