/**
 * Partial replicas (engine/unmatched.ts): a filtered `_since` listing with `_unmatched=true` also
 * lists, as stubs, the records changed since that no longer match, on both stores; off with
 * `partial_replicas_enabled: false` (then as the original server: the parameter is ignored).
 */
import type { FastifyInstance } from 'fastify';
import { expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';

const alice = basicAuth('alice');
const bob = basicAuth('bob');
const records = '/v1/buckets/pr/collections/tasks/records';

async function put(app: FastifyInstance, id: string, data: Record<string, unknown>, headers = alice) {
  const response = await app.inject({ method: 'PUT', url: `${records}/${id}`, headers, payload: { data } });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.json().data.last_modified as number;
}

async function list(app: FastifyInstance, query: string, headers = alice) {
  const response = await app.inject({ url: `${records}?${query}`, headers });
  return { status: response.statusCode, body: response.json(), next: response.headers['next-page'] as string };
}

async function setUp(app: FastifyInstance): Promise<number> {
  await app.inject({ method: 'PUT', url: '/v1/buckets/pr', headers: alice, payload: {} });
  await app.inject({ method: 'PUT', url: '/v1/buckets/pr/collections/tasks', headers: alice, payload: {} });
  await put(app, 'a', { done: false, title: 'a' });
  await put(app, 'b', { done: false, title: 'b' });
  return put(app, 'c', { done: true, title: 'c' });
}

describeOnBackends('partial replicas', { timeout: 30_000 }, ({ serverWith }) => {
  it('announces the capability, and lists what left the subset as stubs', async () => {
    const app = await serverWith({});
    const hello = await app.inject({ url: '/v1/', headers: alice });
    expect(hello.json().capabilities.partial_replicas).toMatchObject({ param: '_unmatched' });
    const since = await setUp(app);
    const aLeft = await put(app, 'a', { done: true, title: 'a' });
    const dCame = await put(app, 'd', { done: false, title: 'd' });
    await app.inject({ method: 'DELETE', url: `${records}/b`, headers: alice });

    const plain = await list(app, `done=false&_since=${since}&_sort=-last_modified`);
    expect(plain.body.data.map((r: { id: string }) => r.id)).toEqual(['d']);

    const poll = await list(app, `done=false&_since=${since}&_sort=-last_modified&_unmatched=true`);
    expect(poll.status).toBe(200);
    const [tombstone, d, a] = poll.body.data;
    expect(tombstone).toMatchObject({ id: 'b', deleted: true });
    expect(tombstone.unmatched).toBeUndefined();
    expect(d).toEqual({ id: 'd', last_modified: dCame, done: false, title: 'd' });
    expect(a).toEqual({ id: 'a', last_modified: aLeft, deleted: true, unmatched: true });
    expect(poll.body.data).toHaveLength(3);

    // A cold listing (no lower bound) needs no stubs: the plain filtered listing.
    const cold = await list(app, 'done=false&_unmatched=true');
    expect(cold.body.data.map((r: { id: string }) => r.id)).toEqual(['d']);
  });

  it('pages through the stubs with Next-Page, and only shows what the caller may read', async () => {
    const app = await serverWith({});
    const since = await setUp(app);
    for (let i = 0; i < 5; i++) await put(app, `x${i}`, { done: i % 2 === 0 });
    // Bob may read one record only: the others are neither listed nor stubbed for him.
    await app.inject({
      method: 'PATCH',
      url: `${records}/x1`,
      headers: alice,
      payload: { permissions: { read: [(await app.inject({ url: '/v1/', headers: bob })).json().user.id] } },
    });
    const seen: Array<Record<string, unknown>> = [];
    let url: string | undefined = `${records}?done=false&_since=${since}&_unmatched=1&_limit=2`;
    while (url) {
      const response = await app.inject({ url, headers: alice });
      expect(response.statusCode, response.body).toBe(200);
      seen.push(...response.json().data);
      const next = response.headers['next-page'] as string | undefined;
      url = next ? `${new URL(next).pathname}${new URL(next).search}` : undefined;
    }
    const stubs = seen.filter((r) => r.unmatched).map((r) => r.id);
    expect(stubs.sort()).toEqual(['x0', 'x2', 'x4']);
    // x1 newest: its permissions changed it.
    expect(seen.filter((r) => !r.unmatched).map((r) => r.id)).toEqual(['x1', 'x3']);

    const bobs = await list(app, `done=false&_since=${since}&_unmatched=true`, bob);
    expect(bobs.status).toBe(200);
    expect(bobs.body.data.map((r: { id: string }) => r.id)).toEqual(['x1']);
  });

  it('refuses a value that is not a boolean with 400', async () => {
    const app = await serverWith({});
    await setUp(app);
    const response = await list(app, 'done=false&_since=1&_unmatched=maybe');
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ errno: 107, details: [{ location: 'querystring', name: '_unmatched' }] });
  });

  it('switched off, ignores _unmatched as the original server does', async () => {
    const app = await serverWith({ partial_replicas_enabled: false });
    const hello = await app.inject({ url: '/v1/', headers: alice });
    expect(hello.json().capabilities.partial_replicas).toBeUndefined();
    const since = await setUp(app);
    await put(app, 'a', { done: true, title: 'a' });
    const poll = await list(app, `done=false&_since=${since}&_unmatched=maybe`);
    expect(poll.status).toBe(200);
    expect(poll.body.data).toEqual([]);
  });
});
