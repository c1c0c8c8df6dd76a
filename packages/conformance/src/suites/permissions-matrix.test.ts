/**
 * The permission matrix of interface spec "Permission rules per operation" and
 * protocol-reference §9.2: each endpoint, called by the owner, another user, an anonymous
 * caller, a member of a group the owner shared with, and a principal granted read on every
 * bucket by the server's settings — expected status and, for listings, the visible objects.
 *
 * The layout, all created by alice (the owner):
 *   bucket B (private) ── group G {members: [carol]}
 *                     └── collection C {read: [G]} ── record R (private)
 *                                                  └── record S {write: [G]}
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { AuthenticatedRootBody, ErrorBody, ListBody } from '../harness/bodies.js';
import { applicable } from '../harness/capabilities.js';
import { createBucket, createCollection, createGroup, createRecord } from '../harness/fixtures.js';
import { basic, request, type HttpResponse } from '../harness/http.js';
import { alice, bob, createUser, userId, type User } from '../harness/users.js';

const carol = createUser('carol');

/** `QUIRE_CONFORMANCE_BUCKET_READER=user:password`: an identity in `bucket_read_principals`. */
function bucketReader(): User | null {
  const raw = process.env.QUIRE_CONFORMANCE_BUCKET_READER;
  const colon = raw ? raw.indexOf(':') : -1;
  if (!raw || colon < 1) return null;
  const name = raw.slice(0, colon);
  const password = raw.slice(colon + 1);
  return { name, password, authorization: basic(name, password), label: 'bucket reader' };
}

type Actor = 'owner' | 'other' | 'anonymous' | 'member' | 'global';
const reader = bucketReader();
const actors: Record<Actor, User | null> = { owner: alice, other: bob, anonymous: null, member: carol, global: reader };

let B = '';
let G = '';
let C = '';
let R = '';
let S = '';
const paths = () => ({
  bucket: `/buckets/${B}`,
  groups: `/buckets/${B}/groups`,
  group: `/buckets/${B}/groups/${G}`,
  collections: `/buckets/${B}/collections`,
  collection: `/buckets/${B}/collections/${C}`,
  records: `/buckets/${B}/collections/${C}/records`,
  record: `/buckets/${B}/collections/${C}/records/${R}`,
  shared: `/buckets/${B}/collections/${C}/records/${S}`,
});

beforeAll(async () => {
  B = await createBucket(alice);
  G = await createGroup(alice, B, { data: { members: [await userId(carol)] } });
  C = await createCollection(alice, B, { permissions: { read: [`/buckets/${B}/groups/${G}`] } });
  R = (await createRecord(alice, B, C, { title: 'private' })).id;
  S = (await createRecord(alice, B, C, { title: 'shared' }, { write: [`/buckets/${B}/groups/${G}`] })).id;
});

function call(actor: Actor, method: string, path: string, body?: unknown): Promise<HttpResponse> {
  return request(method, path, { auth: actors[actor], ...(body === undefined ? {} : { body }) });
}

/** The global principal is checked only when the run knows such an identity. */
const CHECKED: Actor[] = ['owner', 'other', 'anonymous', 'member'];
if (
  applicable(
    reader !== null,
    'globally granted principal',
    'no globally granted identity given: --bucket-reader name:password, an identity listed in bucket_read_principals ' +
      '(QUIRE_CONFORMANCE_BUCKET_READER)',
  )
) {
  CHECKED.push('global');
}

interface Row {
  what: string;
  method: string;
  path: (p: ReturnType<typeof paths>) => string;
  body?: unknown;
  expected: Record<Actor, number>;
  /** For listings: the ids each actor sees when answered 200. */
  visible?: (ids: { G: string; C: string; R: string; S: string }) => Partial<Record<Actor, string[]>>;
}

// Reads: GET/HEAD need read, inherited down the tree; denial is 401 anonymous / 403 otherwise.
const READS: Row[] = [
  {
    what: 'read the bucket',
    method: 'GET',
    path: (p) => p.bucket,
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 200 },
  },
  {
    what: 'read the group',
    method: 'GET',
    path: (p) => p.group,
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 200 },
  },
  {
    what: 'list the groups',
    method: 'GET',
    path: (p) => p.groups,
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 200 },
    visible: ({ G }) => ({ owner: [G], global: [G] }),
  },
  {
    what: 'list the collections (restricted to the readable ones)',
    method: 'GET',
    path: (p) => p.collections,
    expected: { owner: 200, other: 403, anonymous: 401, member: 200, global: 200 },
    visible: ({ C }) => ({ owner: [C], member: [C], global: [C] }),
  },
  {
    what: 'read the collection',
    method: 'GET',
    path: (p) => p.collection,
    expected: { owner: 200, other: 403, anonymous: 401, member: 200, global: 200 },
  },
  {
    what: 'list the records',
    method: 'GET',
    path: (p) => p.records,
    expected: { owner: 200, other: 403, anonymous: 401, member: 200, global: 200 },
    visible: ({ R, S }) => ({ owner: [R, S], member: [R, S], global: [R, S] }),
  },
  {
    what: 'count the records (HEAD)',
    method: 'HEAD',
    path: (p) => p.records,
    expected: { owner: 200, other: 403, anonymous: 401, member: 200, global: 200 },
  },
  {
    what: 'read a record',
    method: 'GET',
    path: (p) => p.record,
    expected: { owner: 200, other: 403, anonymous: 401, member: 200, global: 200 },
  },
];

// Writes that the owner may do; run for every actor but the owner so the layout stays intact.
const WRITES: Row[] = [
  {
    what: 'modify the bucket',
    method: 'PATCH',
    path: (p) => p.bucket,
    body: { data: { x: 1 } },
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 403 },
  },
  {
    what: 'modify the group',
    method: 'PATCH',
    path: (p) => p.group,
    body: { data: { x: 1 } },
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 403 },
  },
  {
    what: 'create a group',
    method: 'POST',
    path: (p) => p.groups,
    body: { data: { members: [] } },
    expected: { owner: 201, other: 403, anonymous: 401, member: 403, global: 403 },
  },
  {
    what: 'create a collection',
    method: 'POST',
    path: (p) => p.collections,
    body: { data: {} },
    expected: { owner: 201, other: 403, anonymous: 401, member: 403, global: 403 },
  },
  {
    what: 'modify the collection',
    method: 'PATCH',
    path: (p) => p.collection,
    body: { data: { x: 1 } },
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 403 },
  },
  {
    what: 'create a record',
    method: 'POST',
    path: (p) => p.records,
    body: { data: { x: 1 } },
    expected: { owner: 201, other: 403, anonymous: 401, member: 403, global: 403 },
  },
  {
    what: 'modify the private record',
    method: 'PATCH',
    path: (p) => p.record,
    body: { data: { x: 1 } },
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 403 },
  },
  {
    what: 'modify the record shared with the group',
    method: 'PATCH',
    path: (p) => p.shared,
    body: { data: { x: 1 } },
    expected: { owner: 200, other: 403, anonymous: 401, member: 200, global: 403 },
  },
  {
    what: 'delete the private record',
    method: 'DELETE',
    path: (p) => p.record,
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 403 },
  },
  {
    what: 'delete the collection',
    method: 'DELETE',
    path: (p) => p.collection,
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 403 },
  },
  {
    what: 'delete the bucket',
    method: 'DELETE',
    path: (p) => p.bucket,
    expected: { owner: 200, other: 403, anonymous: 401, member: 403, global: 403 },
  },
];

describe('§9.2 permission matrix: reads', () => {
  for (const row of READS) {
    for (const actor of CHECKED) {
      it(
        `${actor} may${row.expected[actor] < 300 ? '' : ' not'} ${row.what} ` +
          `(${row.method} → ${row.expected[actor]})`,
        async () => {
          const res = await call(actor, row.method, row.path(paths()));
          expect(res.status).toBe(row.expected[actor]);
          if (res.status >= 400 && row.method !== 'HEAD') {
            expect((res.json as ErrorBody).errno).toBe(res.status === 401 ? 104 : 121);
          }
          const visible = row.visible?.({ G, C, R, S })[actor];
          if (visible && res.status === 200) {
            expect((res.json as ListBody).data.map((item) => item.id).sort()).toEqual([...visible].sort());
          }
        },
      );
    }
  }
});

describe('§9.2 permission matrix: writes', () => {
  for (const row of WRITES) {
    for (const actor of CHECKED.filter((a) => a !== 'owner')) {
      it(
        `${actor} may${row.expected[actor] < 300 ? '' : ' not'} ${row.what} ` +
          `(${row.method} → ${row.expected[actor]})`,
        async () => {
          const res = await call(actor, row.method, row.path(paths()), row.body);
          expect(res.status).toBe(row.expected[actor]);
          if (res.status >= 400) expect((res.json as ErrorBody).errno).toBe(res.status === 401 ? 104 : 121);
        },
      );
    }
  }

  it('the owner may do every write, in an order that keeps the layout until the end', async () => {
    // Each write on a fresh layout of the owner's, so the rows above keep theirs.
    const bucket = await createBucket(alice);
    const group = await createGroup(alice, bucket, { data: { members: [] } });
    const collection = await createCollection(alice, bucket);
    const record = (await createRecord(alice, bucket, collection, {})).id;
    const p = {
      bucket: `/buckets/${bucket}`,
      groups: `/buckets/${bucket}/groups`,
      group: `/buckets/${bucket}/groups/${group}`,
      collections: `/buckets/${bucket}/collections`,
      collection: `/buckets/${bucket}/collections/${collection}`,
      records: `/buckets/${bucket}/collections/${collection}/records`,
      record: `/buckets/${bucket}/collections/${collection}/records/${record}`,
      shared: `/buckets/${bucket}/collections/${collection}/records/${record}`,
    };
    for (const row of WRITES.filter((r) => r.what !== 'modify the record shared with the group')) {
      const res = await call('owner', row.method, row.path(p), row.body);
      expect(res.status, row.what).toBe(row.expected.owner);
    }
  });
});

describe('§9.2 plural DELETE removes only what the caller may write', () => {
  it('a group member with write on one record deletes that record only', async () => {
    const bucket = await createBucket(alice);
    const group = await createGroup(alice, bucket, { data: { members: [await userId(carol)] } });
    const groupUri = `/buckets/${bucket}/groups/${group}`;
    const collection = await createCollection(alice, bucket, { permissions: { read: [groupUri] } });
    const mine = await createRecord(alice, bucket, collection, {});
    const theirs = await createRecord(alice, bucket, collection, {}, { write: [groupUri] });
    const records = `/buckets/${bucket}/collections/${collection}/records`;
    const res = await request<ListBody>('DELETE', records, { auth: carol });
    expect(res.status).toBe(200);
    expect(res.json.data.map((t) => t.id)).toEqual([theirs.id]);
    const left = await request<ListBody>('GET', records, { auth: alice });
    expect(left.json.data.map((r) => r.id)).toEqual([mine.id]);
    expect((await request('DELETE', records, { auth: bob })).status).toBe(403);
  });
});

describe('Sharing and revoking take effect at once (§4.6, §9.1)', () => {
  it('a collection shared with a user, then revoked', async () => {
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket);
    await createRecord(alice, bucket, collection, { title: 'hello' });
    const path = `/buckets/${bucket}/collections/${collection}`;
    expect((await request('GET', `${path}/records`, { auth: bob })).status).toBe(403);

    const share = await request('PATCH', path, { auth: alice, body: { permissions: { read: [await userId(bob)] } } });
    expect(share.status).toBe(200);
    const shared = await request<ListBody>('GET', `${path}/records`, { auth: bob });
    expect(shared.status).toBe(200);
    expect(shared.json.data).toHaveLength(1);
    expect((await request('POST', `${path}/records`, { auth: bob, body: { data: {} } })).status).toBe(403);

    // merge-patch null removes the permission (§4.4).
    const revoke = await request('PATCH', path, {
      auth: alice,
      contentType: 'application/merge-patch+json',
      body: { permissions: { read: null } },
    });
    expect(revoke.status).toBe(200);
    expect(revoke.json.permissions.read).toBeUndefined();
    expect((await request('GET', `${path}/records`, { auth: bob })).status).toBe(403);
  });

  it('write shared with a group: joining grants it, leaving the group revokes it', async () => {
    const bucket = await createBucket(alice);
    const group = await createGroup(alice, bucket, { data: { members: [] } });
    const groupUri = `/buckets/${bucket}/groups/${group}`;
    const collection = await createCollection(alice, bucket, { permissions: { write: [groupUri] } });
    const records = `/buckets/${bucket}/collections/${collection}/records`;
    expect((await request('POST', records, { auth: bob, body: { data: {} } })).status).toBe(403);

    const join = await request('PATCH', `/buckets/${bucket}/groups/${group}`, {
      auth: alice,
      body: { data: { members: [await userId(bob)] } },
    });
    expect(join.status).toBe(200);
    const root = await request<AuthenticatedRootBody>('GET', '/', { auth: bob });
    expect(root.json.user.principals).toContain(groupUri);
    expect((await request('POST', records, { auth: bob, body: { data: { by: 'bob' } } })).status).toBe(201);

    expect(
      (await request('PATCH', `/buckets/${bucket}/groups/${group}`, { auth: alice, body: { data: { members: [] } } }))
        .status,
    ).toBe(200);
    expect((await request<AuthenticatedRootBody>('GET', '/', { auth: bob })).json.user.principals).not.toContain(
      groupUri,
    );
    expect((await request('POST', records, { auth: bob, body: { data: {} } })).status).toBe(403);
  });

  it('deleting the group revokes what it granted', async () => {
    const bucket = await createBucket(alice);
    const group = await createGroup(alice, bucket, { data: { members: [await userId(bob)] } });
    const collection = await createCollection(alice, bucket, {
      permissions: { read: [`/buckets/${bucket}/groups/${group}`] },
    });
    const path = `/buckets/${bucket}/collections/${collection}`;
    expect((await request('GET', path, { auth: bob })).status).toBe(200);
    expect((await request('DELETE', `/buckets/${bucket}/groups/${group}`, { auth: alice })).status).toBe(200);
    expect((await request('GET', path, { auth: bob })).status).toBe(403);
  });

  it('system.Authenticated as a group member shares with every authenticated user', async () => {
    const bucket = await createBucket(alice);
    const group = await createGroup(alice, bucket, { data: { members: ['system.Authenticated'] } });
    const collection = await createCollection(alice, bucket, {
      permissions: { read: [`/buckets/${bucket}/groups/${group}`] },
    });
    const path = `/buckets/${bucket}/collections/${collection}`;
    expect((await request('GET', path, { auth: createUser() })).status).toBe(200);
    expect((await request('GET', path)).status).toBe(401);
  });
});
