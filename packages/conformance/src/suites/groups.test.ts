/**
 * §4.1 groups (`members`), §9.1 group principals (the group URI), §9.2 group-based sharing.
 */
import { describe, expect, it } from 'vitest';
import type { AuthenticatedRootBody, ErrorBody, ListBody } from '../harness/bodies.js';
import { createBucket, createCollection, createGroup } from '../harness/fixtures.js';
import { del, get, head, patch, post, put } from '../harness/http.js';
import { SHORT_ID, expectApiError, expectTombstone, expectValidationError } from '../harness/matchers.js';
import { alice, bob, createUser, userId } from '../harness/users.js';

describe('§4.1 group bodies', () => {
  it('PUT creates a group (1.16) with members defaulting to []', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/groups/editors`, { auth: alice });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({ id: 'editors', members: [], last_modified: expect.any(Number) });
    expect(res.json.permissions.write).toEqual([await userId(alice)]);
  });

  it('POST creates a group with a generated 8-character id', async () => {
    const bucket = await createBucket(alice);
    const res = await post(`/buckets/${bucket}/groups`, { auth: alice, body: { data: { members: ['basicauth:x'] } } });
    expect(res.status).toBe(201);
    expect(res.json.data.id).toMatch(SHORT_ID);
    expect(res.json.data.members).toEqual(['basicauth:x']);
  });

  it('keeps members and arbitrary attributes (1.5)', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/groups/g`, {
      auth: alice,
      body: { data: { members: ['basicauth:a', 'system.Authenticated'], title: 'G' } },
    });
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual({
      id: 'g',
      members: ['basicauth:a', 'system.Authenticated'],
      title: 'G',
      last_modified: expect.any(Number),
    });
    const got = await get(`/buckets/${bucket}/groups/g`, { auth: alice });
    expect(got.json.data).toEqual(res.json.data);
  });

  it('always shows members, even when a PUT replaces the group without it', async () => {
    const bucket = await createBucket(alice);
    await createGroup(alice, bucket, { id: 'g', data: { members: ['basicauth:a'] } });
    const res = await put(`/buckets/${bucket}/groups/g`, { auth: alice, body: { data: { title: 'x' } } });
    expect(res.status).toBe(200);
    expect(res.json.data.members).toEqual([]);
  });

  it('refuses a member that is another group URI (no nested groups)', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/groups/g`, {
      auth: alice,
      body: { data: { members: [`/buckets/${bucket}/groups/other`] } },
    });
    expectValidationError(res, { location: 'body' });
  });

  it('refuses system.Everyone as a member', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/groups/g`, {
      auth: alice,
      body: { data: { members: ['system.Everyone'] } },
    });
    expectValidationError(res, { location: 'body' });
  });

  it('refuses members that are not a list of strings', async () => {
    const bucket = await createBucket(alice);
    for (const members of ['basicauth:a', [1], { a: 1 }]) {
      const res = await put(`/buckets/${bucket}/groups/g`, { auth: alice, body: { data: { members } } });
      expectValidationError(res, { location: 'body' });
    }
  });

  it('refuses record permission names on a group (group accepts read and write only)', async () => {
    const bucket = await createBucket(alice);
    const res = await put(`/buckets/${bucket}/groups/g`, {
      auth: alice,
      body: { permissions: { 'record:create': ['basicauth:a'] } },
    });
    expectValidationError(res, { location: 'body' });
  });

  it('lists, counts and deletes groups', async () => {
    const bucket = await createBucket(alice);
    await createGroup(alice, bucket, { id: 'g1' });
    await createGroup(alice, bucket, { id: 'g2' });
    const list = await get<ListBody>(`/buckets/${bucket}/groups`, { auth: alice });
    expect(list.status).toBe(200);
    expect(list.json.data.map((g) => g.id)).toEqual(['g2', 'g1']);
    const count = await head(`/buckets/${bucket}/groups`, { auth: alice });
    expect(count.headers.get('total-objects')).toBe('2');
    const gone = await del(`/buckets/${bucket}/groups/g1`, { auth: alice });
    expect(gone.status).toBe(200);
    expectTombstone(gone.json.data, 'g1');
    expectApiError(await get(`/buckets/${bucket}/groups/g1`, { auth: alice }), 404, 110);
    const missing = await get<ErrorBody>(`/buckets/${bucket}/groups/g1`, { auth: alice });
    expect(missing.json.details).toEqual({ id: 'g1', resource_name: 'group' });
  });
});

describe('§9.1 group principals', () => {
  it('adds the group URI /buckets/<bid>/groups/<gid> to the principals of its members', async () => {
    const member = createUser('member');
    const bucket = await createBucket(alice);
    await createGroup(alice, bucket, { id: 'readers', data: { members: [await userId(member)] } });
    const res = await get<AuthenticatedRootBody>('/', { auth: member });
    expect(res.json.user.principals).toContain(`/buckets/${bucket}/groups/readers`);
  });

  it('grants access through a group principal, and revokes it when the group is deleted', async () => {
    const member = createUser('member');
    const bucket = await createBucket(alice);
    const gid = await createGroup(alice, bucket, { id: 'readers', data: { members: [await userId(member)] } });
    const cid = await createCollection(alice, bucket, { permissions: { read: [`/buckets/${bucket}/groups/${gid}`] } });
    expect((await get(`/buckets/${bucket}/collections/${cid}/records`, { auth: member })).status).toBe(200);
    expect((await del(`/buckets/${bucket}/groups/${gid}`, { auth: alice })).status).toBe(200);
    const who = await get<AuthenticatedRootBody>('/', { auth: member });
    expect(who.json.user.principals).not.toContain(`/buckets/${bucket}/groups/${gid}`);
    expectApiError(await get(`/buckets/${bucket}/collections/${cid}/records`, { auth: member }), 403, 121);
  });

  it('follows membership changes made by PATCH', async () => {
    const member = createUser('member');
    const bucket = await createBucket(alice);
    await createGroup(alice, bucket, { id: 'g', data: { members: [] } });
    const cid = await createCollection(alice, bucket, { permissions: { read: [`/buckets/${bucket}/groups/g`] } });
    expectApiError(await get(`/buckets/${bucket}/collections/${cid}/records`, { auth: member }), 403, 121);
    const res = await patch(`/buckets/${bucket}/groups/g`, {
      auth: alice,
      body: { data: { members: [await userId(member)] } },
    });
    expect(res.status).toBe(200);
    expect((await get(`/buckets/${bucket}/collections/${cid}/records`, { auth: member })).status).toBe(200);
  });

  it('gives the group principal to every authenticated user when system.Authenticated is a member', async () => {
    const bucket = await createBucket(alice);
    await createGroup(alice, bucket, { id: 'everybody', data: { members: ['system.Authenticated'] } });
    const res = await get<AuthenticatedRootBody>('/', { auth: bob });
    expect(res.json.user.principals).toContain(`/buckets/${bucket}/groups/everybody`);
  });
});
