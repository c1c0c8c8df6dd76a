/**
 * History auto-trim (protocol-reference §13.3, Kinto's `history.auto_trim_max_count` and
 * `history.auto_trim_user_ids`): only the newest entries per kind of object — and per listed
 * user — are kept, and the `history` capability says so.
 */
import type { FastifyInstance } from 'fastify';
import { expect, it } from 'vitest';
import { describeOnBackends } from './helpers/backends.js';
import { basicAuth } from './helpers/embedded-server.js';

const alice = basicAuth('alice');
const bob = basicAuth('bob');

interface Entry {
  action: string;
  resource_name: string;
  user_id: string;
  uri: string;
}

async function history(app: FastifyInstance, bucket: string): Promise<Entry[]> {
  const response = await app.inject({ url: `/v1/buckets/${bucket}/history?_sort=last_modified`, headers: alice });
  expect(response.statusCode).toBe(200);
  return response.json().data as Entry[];
}

async function userId(app: FastifyInstance, headers: { authorization: string }): Promise<string> {
  return (await app.inject({ url: '/v1/', headers })).json().user.id as string;
}

describeOnBackends('history auto-trim', { timeout: 30_000 }, ({ serverWith }) => {
  it('is off by default: every entry is kept and the capability has no trim fields', async () => {
    const app = await serverWith({ history_enabled: true });
    expect((await app.inject({ url: '/v1/' })).json().capabilities.history).toEqual({
      description: expect.any(String),
      url: expect.any(String),
    });
    await app.inject({ method: 'PUT', url: '/v1/buckets/all', headers: alice });
    await app.inject({ method: 'PUT', url: '/v1/buckets/all/collections/c', headers: alice });
    for (let i = 0; i < 5; i++)
      await app.inject({
        method: 'POST',
        url: '/v1/buckets/all/collections/c/records',
        headers: alice,
        payload: { data: { i } },
      });
    expect(await history(app, 'all')).toHaveLength(7);
  });

  it('keeps the newest N entries of each kind of object', async () => {
    const app = await serverWith({ history_enabled: true, history_auto_trim_max_count: 2 });
    expect((await app.inject({ url: '/v1/' })).json().capabilities.history).toEqual({
      description: expect.any(String),
      url: expect.any(String),
      auto_trim_max_count: 2,
    });
    await app.inject({ method: 'PUT', url: '/v1/buckets/trim', headers: alice });
    for (const c of ['c1', 'c2', 'c3'])
      await app.inject({ method: 'PUT', url: `/v1/buckets/trim/collections/${c}`, headers: alice });
    for (let i = 1; i <= 4; i++)
      await app.inject({
        method: 'PUT',
        url: `/v1/buckets/trim/collections/c1/records/r${i}`,
        headers: alice,
        payload: { data: { i } },
      });
    await app.inject({
      method: 'PATCH',
      url: '/v1/buckets/trim/collections/c1/records/r4',
      headers: alice,
      payload: { data: { i: 5 } },
    });

    expect((await history(app, 'trim')).map((entry) => `${entry.action} ${entry.uri}`)).toEqual([
      'create /buckets/trim',
      'create /buckets/trim/collections/c2',
      'create /buckets/trim/collections/c3',
      'create /buckets/trim/collections/c1/records/r4',
      'update /buckets/trim/collections/c1/records/r4',
    ]);
    // Another bucket's history is its own.
    await app.inject({ method: 'PUT', url: '/v1/buckets/trim2', headers: alice });
    expect(await history(app, 'trim2')).toHaveLength(1);
    expect(await history(app, 'trim')).toHaveLength(5);
  });

  it("with user ids, trims only those users' entries, N per user and kind", async () => {
    const [aliceId, bobId] = [await userId(await serverWith({}), alice), await userId(await serverWith({}), bob)];
    const app = await serverWith({
      history_enabled: true,
      history_auto_trim_max_count: 1,
      history_auto_trim_user_ids: [bobId],
    });
    expect((await app.inject({ url: '/v1/' })).json().capabilities.history).toMatchObject({
      auto_trim_max_count: 1,
      auto_trim_user_ids: [bobId],
    });
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/shared',
      headers: alice,
      payload: { permissions: { write: [bobId] } },
    });
    await app.inject({ method: 'PUT', url: '/v1/buckets/shared/collections/c', headers: alice });
    for (const [who, id] of [
      [alice, 'a1'],
      [bob, 'b1'],
      [alice, 'a2'],
      [bob, 'b2'],
      [bob, 'b3'],
    ] as const) {
      const response = await app.inject({
        method: 'PUT',
        url: `/v1/buckets/shared/collections/c/records/${id}`,
        headers: who,
        payload: { data: {} },
      });
      expect(response.statusCode).toBe(201);
    }
    const entries = await history(app, 'shared');
    expect(
      entries
        .filter((entry) => entry.resource_name === 'record')
        .map((entry) => `${entry.user_id === aliceId ? 'alice' : 'bob'} ${entry.uri.split('/').at(-1)}`),
    ).toEqual(['alice a1', 'alice a2', 'bob b3']);
    expect(entries.filter((entry) => entry.resource_name !== 'record')).toHaveLength(2);
  });

  it('refuses a count below 1 at boot', async () => {
    await expect(serverWith({ history_enabled: true, history_auto_trim_max_count: 0 })).rejects.toThrow(
      /history_auto_trim_max_count/,
    );
  });
});
