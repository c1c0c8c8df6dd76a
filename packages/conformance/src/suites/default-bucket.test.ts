/**
 * protocol-reference §13.1 and §9.4: `/buckets/default`, each user's personal bucket, created
 * with the collections its URLs name on first access (also inside /batch).
 * Only with throwaway identities: writing in a real user's personal bucket is never done.
 */
import { describe, expect, it } from 'vitest';
import type { AuthenticatedRootBody, BatchBody, ListBody, ObjectBody } from '../harness/bodies.js';
import { applicable, serverInfo } from '../harness/capabilities.js';
import { trackBucket } from '../harness/fixtures.js';
import { request } from '../harness/http.js';
import { expectApiError, expectValidationError } from '../harness/matchers.js';
import { createUser, userId, usesThrowawayIdentities, type User } from '../harness/users.js';

const info = await serverInfo();
const applies =
  applicable(info.hasCapability('default_bucket'), 'default bucket (§13.1)', 'capability default_bucket not offered') &&
  applicable(
    usesThrowawayIdentities(),
    'default bucket (§13.1)',
    "needs throwaway identities: it writes in the user's personal bucket",
  );

/** A new identity whose personal bucket is deleted after the file. */
async function newUser(): Promise<{ user: User; bucket: string }> {
  const user = createUser();
  const root = await request<AuthenticatedRootBody>('GET', '/', { auth: user });
  const bucket = root.json.user.bucket as string;
  trackBucket(bucket, user);
  return { user, bucket };
}

describe.runIf(applies)('§13.1 the personal bucket', () => {
  it('GET /buckets/default creates the bucket and answers with its real id (user.bucket)', async () => {
    const { user, bucket } = await newUser();
    const res = await request('GET', '/buckets/default', { auth: user });
    expect(res.status).toBe(200);
    expect(res.json.data.id).toBe(bucket);
    expect(res.json.permissions.write).toContain(await userId(user));
    // It now exists under its real id, owned by the user.
    expect((await request('GET', `/buckets/${bucket}`, { auth: user })).status).toBe(200);
  });

  it('§9.4 the id is UUID-shaped, stable for a user and distinct between users', async () => {
    const a = await newUser();
    const b = await newUser();
    expect(a.bucket).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(a.bucket).not.toBe(b.bucket);
    expect((await request<AuthenticatedRootBody>('GET', '/', { auth: a.user })).json.user.bucket).toBe(a.bucket);
  });

  it('a record posted under /buckets/default/collections/<c> creates bucket and collection implicitly', async () => {
    const { user, bucket } = await newUser();
    const created = await request('POST', '/buckets/default/collections/tasks/records', {
      auth: user,
      body: { data: { title: 'milk' } },
    });
    expect(created.status).toBe(201);
    const listed = await request<ListBody>('GET', `/buckets/${bucket}/collections/tasks/records`, { auth: user });
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((r) => r.id)).toEqual([created.json.data.id]);
    // Reading through the alias gives the same list and ETag.
    const alias = await request<ListBody>('GET', '/buckets/default/collections/tasks/records', { auth: user });
    expect(alias.json.data).toEqual(listed.json.data);
    expect(alias.headers.get('etag')).toBe(listed.headers.get('etag'));
  });

  it('plain GETs create too: listing records of a new collection is an empty 200', async () => {
    const { user, bucket } = await newUser();
    const res = await request<ListBody>('GET', '/buckets/default/collections/fresh/records', { auth: user });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual([]);
    expect((await request('GET', `/buckets/${bucket}/collections/fresh`, { auth: user })).status).toBe(200);
  });

  it('PUT /buckets/default/collections/<c> creates the collection itself (201), once', async () => {
    const { user } = await newUser();
    const first = await request('PUT', '/buckets/default/collections/notes', {
      auth: user,
      headers: { 'If-None-Match': '*' },
    });
    expect(first.status).toBe(201);
    const again = await request('PUT', '/buckets/default/collections/notes', {
      auth: user,
      headers: { 'If-None-Match': '*' },
    });
    expect(again.status).toBe(412);
  });

  it('Next-Page links name the real bucket id', async () => {
    const { user, bucket } = await newUser();
    for (let i = 0; i < 3; i++) {
      expect(
        (await request('POST', '/buckets/default/collections/paged/records', { auth: user, body: { data: { i } } }))
          .status,
      ).toBe(201);
    }
    const page = await request('GET', '/buckets/default/collections/paged/records?_limit=2', { auth: user });
    expect(page.status).toBe(200);
    expect(page.headers.get('next-page')).toContain(`/buckets/${bucket}/collections/paged/records`);
  });

  it('works inside /batch, bucket and collections created on the way', async () => {
    const { user, bucket } = await newUser();
    const res = await request<BatchBody<ObjectBody | ListBody>>('POST', '/batch', {
      auth: user,
      body: {
        requests: [
          { method: 'POST', path: '/buckets/default/collections/a/records', body: { data: { n: 1 } } },
          { method: 'PUT', path: '/buckets/default/collections/b/records/r1', body: { data: { n: 2 } } },
          { method: 'GET', path: '/buckets/default/collections/a/records' },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.json.responses.map((r) => r.status)).toEqual([201, 201, 200]);
    expect(res.json.responses[2]!.body.data).toHaveLength(1);
    expect((await request('GET', `/buckets/${bucket}/collections/b/records/r1`, { auth: user })).json.data.n).toBe(2);
  });

  it("another user cannot reach someone's personal bucket by its real id", async () => {
    const { user, bucket } = await newUser();
    expect((await request('GET', '/buckets/default', { auth: user })).status).toBe(200);
    const other = createUser();
    expect((await request('GET', `/buckets/${bucket}`, { auth: other })).status).toBe(403);
  });

  it.runIf(
    applicable(info.hasCapability('history'), 'implicit creations in history', 'capability history not offered'),
  )('implicit creations are create events like any other (seen in the history, §13.1, §13.3)', async () => {
    const { user, bucket } = await newUser();
    const created = await request('POST', '/buckets/default/collections/tasks/records', {
      auth: user,
      body: { data: { n: 1 } },
    });
    expect(created.status).toBe(201);
    const history = await request<ListBody>('GET', `/buckets/${bucket}/history?_sort=last_modified`, { auth: user });
    expect(history.status).toBe(200);
    const seen = history.json.data.map((entry) => [entry.resource_name, entry.action, entry.uri]);
    expect(seen).toEqual([
      ['bucket', 'create', `/buckets/${bucket}`],
      ['collection', 'create', `/buckets/${bucket}/collections/tasks`],
      ['record', 'create', `/buckets/${bucket}/collections/tasks/records/${created.json.data.id}`],
    ]);
  });

  it('answers 401 to anonymous callers (not 403)', async () => {
    expectApiError(await request('GET', '/buckets/default'), 401, 104);
    expectApiError(await request('POST', '/buckets/default/collections/x/records', { body: { data: {} } }), 401, 104);
  });

  it('refuses an invalid collection id with 400', async () => {
    const { user } = await newUser();
    const res = await request('GET', '/buckets/default/collections/in%20valid/records', { auth: user });
    expectValidationError(res);
  });
});
