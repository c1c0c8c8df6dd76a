/**
 * `POST /__flush__` (protocol-reference §13.5) on a server of its own: flushing is destructive,
 * so it never runs against the shared conformance server.
 */
import { expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';

const alice = basicAuth('alice');
const bob = basicAuth('bob');
describeOnBackends('POST /__flush__', {}, ({ serverWith }) => {
  it('is absent by default: no capability, 404', async () => {
    const app = await serverWith({});
    expect((await app.inject({ url: '/v1/' })).json().capabilities.flush_endpoint).toBeUndefined();
    const response = await app.inject({ method: 'POST', url: '/v1/__flush__' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ errno: 111 });
    await app.close();
  });

  it('deletes every object, tombstone, permission and membership, and answers 202 {}', async () => {
    const app = await serverWith({ flush_endpoint_enabled: true });
    expect((await app.inject({ url: '/v1/' })).json().capabilities.flush_endpoint).toEqual({
      description: 'The __flush__ endpoint can be used to remove all data from all backends.',
      url: 'https://kinto.readthedocs.io/en/latest/api/1.x/flush.html',
    });
    const bobId = (await app.inject({ url: '/v1/', headers: bob })).json().user.id as string;
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b',
      headers: alice,
      payload: { permissions: { read: ['system.Everyone'] } },
    });
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b/groups/g',
      headers: alice,
      payload: { data: { members: [bobId] } },
    });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c', headers: alice });
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b/collections/c/records/r1',
      headers: alice,
      payload: { data: { n: 1 } },
    });
    await app.inject({ method: 'DELETE', url: '/v1/buckets/b/collections/c/records/r1', headers: alice });
    expect((await app.inject({ url: '/v1/', headers: bob })).json().user.principals).toContain('/buckets/b/groups/g');

    // Anyone may flush, as in Kinto: the endpoint exists for test servers only.
    const flushed = await app.inject({ method: 'POST', url: '/v1/__flush__' });
    expect(flushed.statusCode).toBe(202);
    expect(flushed.json()).toEqual({});

    expect((await app.inject({ url: '/v1/buckets', headers: alice })).json().data).toEqual([]);
    expect((await app.inject({ url: '/v1/buckets/b', headers: alice })).statusCode).toBe(403);
    expect((await app.inject({ url: '/v1/', headers: bob })).json().user.principals).not.toContain(
      '/buckets/b/groups/g',
    );
    // Everything can be created again from scratch.
    expect((await app.inject({ method: 'PUT', url: '/v1/buckets/b', headers: alice })).statusCode).toBe(201);
    const records = await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c', headers: alice });
    expect(records.statusCode).toBe(201);
    const tombstones = await app.inject({ url: '/v1/buckets/b/collections/c/records?_since=0', headers: alice });
    expect(tombstones.json().data).toEqual([]);
    await app.close();
  });

  it('answers 405 on other methods, is refused in readonly mode and inside a batch', async () => {
    const app = await serverWith({ flush_endpoint_enabled: true });
    await app.inject({ method: 'PUT', url: '/v1/buckets/kept', headers: alice });
    expect((await app.inject({ method: 'GET', url: '/v1/__flush__' })).statusCode).toBe(405);
    const batch = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: { requests: [{ method: 'POST', path: '/__flush__' }] },
    });
    expect(batch.json().responses[0].status).toBe(400);
    expect((await app.inject({ url: '/v1/buckets/kept', headers: alice })).statusCode).toBe(200);
    await app.close();

    const readonly = await serverWith({ flush_endpoint_enabled: true, readonly: true });
    expect((await readonly.inject({ method: 'POST', url: '/v1/__flush__' })).statusCode).toBe(405);
    await readonly.close();
  });
});
