/** Records that lost read permission on the server disappear locally at the next sync. */
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
    await raw(url, 'PATCH', `/buckets/${bucket}/collections/shared`, { permissions: { 'record:create': [bob] } }, 'alice');
    for (const id of ['r1', 'r2', 'r3']) {
      await raw(url, 'PUT', `/buckets/${bucket}/collections/shared/records/${id}`, { data: { id }, permissions: { read: [bob] } }, 'alice');
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

  it('costs one HEAD when nothing was revoked', async () => {
    const bucket = uniqueName('p');
    await createCollection(url, bucket, 'c', 'alice');
    await raw(url, 'PUT', `/buckets/${bucket}/collections/c/records/a`, { data: {} }, 'alice');
    const calls: string[] = [];
    const client = makeClient(url, {
      fetch: async (input, init) => {
        calls.push(`${init.method} ${new URL(input).search}`);
        return fetch(input, init);
      },
    });
    const c = client.bucket(bucket).collection('c');
    await c.sync();
    calls.length = 0;
    await c.sync();
    expect(calls.map((call) => call.split(' ')[0])).toEqual(['GET', 'HEAD']);
    await client.close();
  });
});
