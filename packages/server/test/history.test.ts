/**
 * History plugin settings and transactional behaviour (protocol-reference §13.3) that the HTTP
 * suite cannot configure: off by default, excluded resources and user ids, entries written in
 * the change's own transaction.
 */
import { expect, it } from 'vitest';
import type { Settings } from '../src/config.js';
import { describeOnBackends } from './helpers/backends.js';

const basic = (user: string) => ({ authorization: `Basic ${Buffer.from(`${user}:pw`).toString('base64')}` });
const alice = basic('alice');
const bob = basic('bob');

describeOnBackends('history plugin', { timeout: 30_000 }, (backend) => {
  const server = (overrides: Partial<Settings>) => backend.serverWith(overrides);

  it('is off by default: no capability, no endpoint, nothing stored', async () => {
    const app = await server({});
    const root = await app.inject({ method: 'GET', url: '/v1/' });
    expect(root.json().capabilities).not.toHaveProperty('history');
    await app.inject({ method: 'PUT', url: '/v1/buckets/off', headers: alice });
    expect((await app.inject({ method: 'GET', url: '/v1/buckets/off/history', headers: alice })).statusCode).toBe(404);
    expect(
      await backend.storage.read((session) =>
        session.objects.list({ resourceName: 'history', parentId: '/buckets/off' }),
      ),
    ).toEqual([]);
  });

  it('history_exclude_resources and history_exclude_user_ids skip those changes', async () => {
    const app = await server({
      history_enabled: true,
      history_exclude_resources: [
        '/buckets/ex/collections/quiet',
        '/buckets/ex/collections/c/records/hidden',
        '/buckets/silent',
      ],
      history_exclude_user_ids: [
        (await (await server({})).inject({ method: 'GET', url: '/v1/', headers: bob })).json().user.id,
      ],
    });
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/ex',
      headers: alice,
      payload: { permissions: { write: ['system.Authenticated'] } },
    });
    await app.inject({ method: 'PUT', url: '/v1/buckets/silent', headers: alice });
    await app.inject({ method: 'PUT', url: '/v1/buckets/silent/collections/c', headers: alice });
    for (const path of [
      'collections/quiet',
      'collections/quiet/records/r',
      'collections/c',
      'collections/c/records/hidden',
      'collections/c/records/shown',
    ]) {
      await app.inject({ method: 'PUT', url: `/v1/buckets/ex/${path}`, headers: alice });
    }
    await app.inject({ method: 'PUT', url: '/v1/buckets/ex/collections/c/records/by-bob', headers: bob });
    const entries = (
      await app.inject({ method: 'GET', url: '/v1/buckets/ex/history?_sort=last_modified', headers: alice })
    ).json().data;
    expect(entries.map((entry: { uri: string }) => entry.uri)).toEqual([
      '/buckets/ex',
      '/buckets/ex/collections/c',
      '/buckets/ex/collections/c/records/shown',
    ]);
    expect(
      (await app.inject({ method: 'GET', url: '/v1/buckets/silent/history', headers: alice })).json().data,
    ).toEqual([]);
  });

  it('entries share the fate of their change: a rolled-back batch leaves none', async () => {
    const app = await server({ history_enabled: true });
    await app.inject({ method: 'PUT', url: '/v1/buckets/tx', headers: alice });
    await app.inject({ method: 'PUT', url: '/v1/buckets/tx/collections/c', headers: alice });
    app.services.events.subscribe({
      name: 'veto',
      actions: new Set(['create']),
      resources: null,
      async inTransaction(events) {
        if (events.some((event) => event.impactedObjects.some((item) => item.new.id === 'vetoed')))
          throw new Error('vetoed');
      },
    });
    const res = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: {
        requests: ['kept', 'vetoed'].map((id) => ({ method: 'PUT', path: `/buckets/tx/collections/c/records/${id}` })),
      },
    });
    expect(res.statusCode).toBe(500);
    const entries = (await app.inject({ method: 'GET', url: '/v1/buckets/tx/history', headers: alice })).json().data;
    expect(entries.map((entry: { resource_name: string }) => entry.resource_name)).toEqual(['collection', 'bucket']);
  });

  it('reads add no entry; the hidden principals never show', async () => {
    const app = await server({ history_enabled: true });
    await app.inject({ method: 'PUT', url: '/v1/buckets/rd', headers: alice });
    await app.inject({ method: 'GET', url: '/v1/buckets/rd', headers: alice });
    await app.inject({ method: 'GET', url: '/v1/buckets', headers: alice });
    const res = await app.inject({
      method: 'GET',
      url: '/v1/buckets/rd/history?_fields=_read_principals',
      headers: alice,
    });
    const entries = res.json().data;
    expect(entries).toHaveLength(1);
    expect(Object.keys(entries[0]).sort()).toEqual(['id', 'last_modified']);
    const full = (await app.inject({ method: 'GET', url: '/v1/buckets/rd/history', headers: alice })).json().data;
    expect(full[0]).not.toHaveProperty('_read_principals');
  });
});
