/** Records that lost read permission on the server disappear locally at the next sync. */
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, inject, it } from 'vitest';
import { createCollection, makeClient, raw, uniqueName } from './support/server.js';

const url = inject('quireUrl');

async function userId(user: string): Promise<string> {
  return (await raw(url, 'GET', '/', undefined, user)).body.user.id;
}

describe('lost read permission', () => {
  it('drops a record whose read permission was revoked, keeping the others and local pending ones', async () => {
    const bucket = uniqueName('p');
    await createCollection(url, bucket, 'shared', 'alice');
    const bob = await userId('bob');
    // Bob may create records in the collection, and read three of alice's.
    await raw(
      url,
      'PATCH',
      `/buckets/${bucket}/collections/shared`,
      { permissions: { 'record:create': [bob] } },
      'alice',
    );
    for (const id of ['r1', 'r2', 'r3']) {
      await raw(
        url,
        'PUT',
        `/buckets/${bucket}/collections/shared/records/${id}`,
        { data: { id }, permissions: { read: [bob] } },
        'alice',
      );
    }
    await raw(url, 'PUT', `/buckets/${bucket}/collections/shared/records/private`, { data: {} }, 'alice');
    const client = makeClient(url, { user: 'bob' });
    const shared = client.bucket(bucket).collection('shared');
    expect((await shared.sync()).pulled).toBe(3);
    await shared.create({ id: 'bobs-draft' });

    await raw(url, 'PATCH', `/buckets/${bucket}/collections/shared/records/r2`, { permissions: { read: [] } }, 'alice');
    const result = await shared.sync({ pullOnly: true });
    expect(result.removed).toBe(1);
    expect((await shared.list()).map((r) => r.id).sort()).toEqual(['bobs-draft', 'r1', 'r3']);
    expect(await shared.pending()).toBe(1);
    await client.close();
  });

  it('drops every synced record when the whole collection becomes unreadable (403)', async () => {
    const bucket = uniqueName('p');
    await createCollection(url, bucket, 'shared', 'alice');
    const bob = await userId('bob');
    await raw(url, 'PATCH', `/buckets/${bucket}/collections/shared`, { permissions: { read: [bob] } }, 'alice');
    await raw(url, 'PUT', `/buckets/${bucket}/collections/shared/records/a`, { data: {} }, 'alice');
    await raw(url, 'PUT', `/buckets/${bucket}/collections/shared/records/b`, { data: {} }, 'alice');
    const client = makeClient(url, { user: 'bob' });
    const shared = client.bucket(bucket).collection('shared');
    expect((await shared.sync()).pulled).toBe(2);
    await raw(url, 'PATCH', `/buckets/${bucket}/collections/shared`, { permissions: { read: [] } }, 'alice');
    const result = await shared.sync();
    expect(result).toMatchObject({ ok: false, removed: 2, errors: [{ status: 403 }] });
    expect(await shared.count()).toBe(0);
    await client.close();
  });

  it('a no-change poll is one request; the HEAD comes after a change, and every intervalMs', async () => {
    const bucket = uniqueName('p');
    await createCollection(url, bucket, 'c', 'alice');
    await raw(url, 'PUT', `/buckets/${bucket}/collections/c/records/a`, { data: {} }, 'alice');
    const calls: string[] = [];
    const fetchFn = async (input: string, init: RequestInit) => {
      calls.push(init.method ?? 'GET');
      return fetch(input, init);
    };
    const client = makeClient(url, { fetch: fetchFn });
    const c = client.bucket(bucket).collection('c');
    await c.sync();
    expect(calls).toEqual(['GET', 'HEAD']);
    calls.length = 0;
    await c.sync();
    expect(calls).toEqual(['GET']);
    calls.length = 0;
    await raw(url, 'PUT', `/buckets/${bucket}/collections/c/records/b`, { data: {} }, 'alice');
    await c.sync();
    expect(calls).toEqual(['GET', 'HEAD']);
    await client.close();

    // A check due by time: a 304 poll is followed by the HEAD.
    const every = makeClient(url, { fetch: fetchFn });
    const timed = every.bucket(bucket).collection('c', { checkReadable: { intervalMs: 0 } });
    await timed.sync();
    calls.length = 0;
    await timed.sync();
    expect(calls).toEqual(['GET', 'HEAD']);
    await every.close();
  });

  it('finds a record hidden by a group membership change (no new ETag) at the next timed check', async () => {
    const bucket = uniqueName('p');
    await createCollection(url, bucket, 'c', 'alice');
    const bob = await userId('bob');
    await raw(url, 'PUT', `/buckets/${bucket}/groups/readers`, { data: { members: [bob] } }, 'alice');
    await raw(
      url,
      'PUT',
      `/buckets/${bucket}/collections/c/records/a`,
      { data: {}, permissions: { read: [`/buckets/${bucket}/groups/readers`] } },
      'alice',
    );
    await raw(
      url,
      'PUT',
      `/buckets/${bucket}/collections/c/records/b`,
      { data: {}, permissions: { read: [bob] } },
      'alice',
    );
    const idb = new IDBFactory();
    const client = makeClient(url, { user: 'bob', idb });
    const c = client.bucket(bucket).collection('c', { checkReadable: { intervalMs: 60_000 } });
    expect((await c.sync()).pulled).toBe(2);
    await raw(url, 'PUT', `/buckets/${bucket}/groups/readers`, { data: { members: [] } }, 'alice');
    // Within the interval, a 304 poll does not look.
    expect(await c.sync()).toMatchObject({ notModified: true, removed: 0 });
    expect(await c.count()).toBe(2);
    await client.close();
    // Once the interval has passed (here: a client over the same replica with a 0 ms interval).
    const later = makeClient(url, { user: 'bob', idb });
    const again = later.bucket(bucket).collection('c', { checkReadable: { intervalMs: 0 } });
    expect(await again.sync()).toMatchObject({ notModified: true, removed: 1 });
    expect((await again.list()).map((record) => record.id)).toEqual(['b']);
    await later.close();
  });
});
