/**
 * Resource events (protocol-reference §10): payloads, impacted objects, grouping per request
 * and per batch, the two delivery phases and what a failing in-transaction listener does.
 */
import type { FastifyInstance } from 'fastify';
import { beforeAll, beforeEach, expect, it } from 'vitest';
import { loadSettings } from '../src/config.js';
import type { EventSubscriber, ResourceEvent } from '../src/events/types.js';
import { describeOnBackends } from './helpers/backends.js';

const alice = { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` };

class Recorder implements EventSubscriber {
  name = 'recorder';
  actions = new Set(['create', 'update', 'delete', 'read'] as const);
  resources = null;
  inTx: ResourceEvent[][] = [];
  committed: ResourceEvent[][] = [];
  failOn: string | null = null;
  async inTransaction(events: ResourceEvent[]) {
    this.inTx.push(events);
    if (this.failOn && events.some((event) => event.impactedObjects.some((item) => item.new.id === this.failOn))) {
      throw new Error('listener refused');
    }
  }
  afterCommit(events: ResourceEvent[]) {
    this.committed.push(events);
  }
  reset() {
    this.inTx = [];
    this.committed = [];
    this.failOn = null;
  }
}

describeOnBackends('events (§10)', { timeout: 30_000 }, (backend) => {
  let app: FastifyInstance;
  let userId: string;
  const recorder = new Recorder();

  beforeAll(async () => {
    app = await backend.serverWith({});
    app.services.events.subscribe(recorder);
    const root = await app.inject({ method: 'GET', url: '/v1/', headers: alice });
    userId = root.json().user.id;
    await app.inject({ method: 'PUT', url: '/v1/buckets/b', headers: alice });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c', headers: alice });
  }, 60_000);
  beforeEach(() => recorder.reset());

  it('§10.2 a record creation: payload with the URL ids, impacted {new} (§10.3), both phases', async () => {
    const res = await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b/collections/c/records/r1',
      headers: alice,
      payload: { data: { x: 1 } },
    });
    expect(res.statusCode).toBe(201);
    const stored = res.json().data;
    expect(recorder.inTx).toHaveLength(1);
    expect(recorder.committed).toEqual(recorder.inTx);
    const [event] = recorder.inTx[0]!;
    expect(event!.payload).toEqual({
      action: 'create',
      resource_name: 'record',
      timestamp: stored.last_modified,
      uri: '/buckets/b/collections/c/records/r1',
      user_id: userId,
      bucket_id: 'b',
      collection_id: 'c',
      record_id: 'r1',
    });
    expect(event!.parentId).toBe('/buckets/b/collections/c');
    expect(event!.impactedObjects).toEqual([{ new: stored }]);
    // The payload is what leaves the process (Redis): plain JSON.
    expect(JSON.parse(JSON.stringify(event!.payload))).toEqual(event!.payload);
  });

  it('§10.2 POST on a plural endpoint: uri is the plural path, no <resource>_id', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/buckets/b/collections/c/records',
      headers: alice,
      payload: { data: { x: 2 } },
    });
    const [event] = recorder.committed[0]!;
    expect(event!.payload.uri).toBe('/buckets/b/collections/c/records');
    expect(event!.payload).not.toHaveProperty('record_id');
    expect(event!.impactedObjects[0]!.new.id).toBe(res.json().data.id);
  });

  it('§10.3 update carries {new, old}; PATCH too; delete carries {new: tombstone, old}', async () => {
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b/collections/c/records/u',
      headers: alice,
      payload: { data: { v: 1 } },
    });
    recorder.reset();
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b/collections/c/records/u',
      headers: alice,
      payload: { data: { v: 2 } },
    });
    await app.inject({
      method: 'PATCH',
      url: '/v1/buckets/b/collections/c/records/u',
      headers: alice,
      payload: { data: { w: 3 } },
    });
    await app.inject({ method: 'DELETE', url: '/v1/buckets/b/collections/c/records/u', headers: alice });
    const [put, patch, del] = recorder.committed.map((events) => events[0]!);
    expect(put!.payload.action).toBe('update');
    expect(put!.impactedObjects[0]!.old).toMatchObject({ id: 'u', v: 1 });
    expect(put!.impactedObjects[0]!.new).toMatchObject({ id: 'u', v: 2 });
    expect(patch!.payload.action).toBe('update');
    expect(patch!.impactedObjects[0]!.new).toMatchObject({ v: 2, w: 3 });
    expect(del!.payload.action).toBe('delete');
    expect(del!.impactedObjects[0]!.new).toEqual({ id: 'u', last_modified: expect.any(Number), deleted: true });
    expect(del!.impactedObjects[0]!.old).toMatchObject({ id: 'u', v: 2, w: 3 });
    expect(del!.payload.timestamp).toBe(del!.impactedObjects[0]!.new.last_modified);
  });

  it('§10.3 plural DELETE: one event, one impacted object per deleted record', async () => {
    await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/pd', headers: alice });
    for (const id of ['a1', 'a2', 'a3'])
      await app.inject({ method: 'PUT', url: `/v1/buckets/b/collections/pd/records/${id}`, headers: alice });
    recorder.reset();
    await app.inject({ method: 'DELETE', url: '/v1/buckets/b/collections/pd/records', headers: alice });
    expect(recorder.committed).toHaveLength(1);
    const [event] = recorder.committed[0]!;
    expect(event!.payload).toMatchObject({
      action: 'delete',
      resource_name: 'record',
      uri: '/buckets/b/collections/pd/records',
    });
    expect(event!.impactedObjects.map((item) => item.old!.id).sort()).toEqual(['a1', 'a2', 'a3']);
    expect(event!.impactedObjects.every((item) => (item.new as { deleted?: boolean }).deleted === true)).toBe(true);
  });

  it('§10.1 reads emit `read` (object, plural, POST of an existing id) for subscribers that ask', async () => {
    await app.inject({ method: 'GET', url: '/v1/buckets/b/collections/c/records/r1', headers: alice });
    await app.inject({ method: 'GET', url: '/v1/buckets/b/collections/c/records', headers: alice });
    await app.inject({
      method: 'POST',
      url: '/v1/buckets/b/collections/c/records',
      headers: alice,
      payload: { data: { id: 'r1' } },
    });
    const reads = recorder.committed.map((events) => events[0]!);
    expect(reads.map((event) => event.payload.action)).toEqual(['read', 'read', 'read']);
    expect(reads[0]!.impactedObjects).toEqual([{ new: expect.objectContaining({ id: 'r1' }) }]);
    expect(reads[1]!.impactedObjects.length).toBeGreaterThanOrEqual(2);
  });

  it('§10.4 a batch is one request: events grouped by (resource, parent, action), by first occurrence', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: {
        requests: [
          { method: 'PUT', path: '/buckets/b/collections/c/records/g1' },
          { method: 'PUT', path: '/buckets/b/collections/g' },
          { method: 'PUT', path: '/buckets/b/collections/c/records/g2' },
          { method: 'DELETE', path: '/buckets/b/collections/c/records/g1' },
        ],
      },
    });
    expect(res.statusCode).toBe(200);
    expect(recorder.inTx).toHaveLength(1);
    expect(recorder.committed).toHaveLength(1);
    const events = recorder.committed[0]!;
    expect(events.map((event) => [event.payload.resource_name, event.payload.action])).toEqual([
      ['record', 'create'],
      ['collection', 'create'],
      ['record', 'delete'],
    ]);
    // Payload of the first occurrence, impacted objects concatenated.
    expect(events[0]!.payload.uri).toBe('/buckets/b/collections/c/records/g1');
    expect(events[0]!.impactedObjects.map((item) => item.new.id)).toEqual(['g1', 'g2']);
  });

  it('§10.4 a failing in-transaction listener: 500, the request rolled back, nothing after-commit', async () => {
    recorder.failOn = 'boom';
    const res = await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c/records/boom', headers: alice });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ code: 500, errno: 999 });
    expect(recorder.committed).toEqual([]);
    recorder.failOn = null;
    const got = await app.inject({ method: 'GET', url: '/v1/buckets/b/collections/c/records/boom', headers: alice });
    expect(got.statusCode).toBe(404);
  });

  it('§10.4 in a batch, a failing listener rolls back every sub-request', async () => {
    recorder.failOn = 'boom2';
    const res = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: {
        requests: [
          { method: 'PUT', path: '/buckets/b/collections/c/records/ok1' },
          { method: 'PUT', path: '/buckets/b/collections/c/records/boom2' },
        ],
      },
    });
    expect(res.statusCode).toBe(500);
    recorder.failOn = null;
    expect(
      (await app.inject({ method: 'GET', url: '/v1/buckets/b/collections/c/records/ok1', headers: alice })).statusCode,
    ).toBe(404);
  });

  // Sub-requests are handed the batch's unit of work on their request object
  // (http/internal-requests.ts): nothing a request carries — such as the header that named a
  // batch in earlier versions — makes it join one, neither for a client nor for a sub-request.
  it('a header naming a batch does nothing on a request that is not part of a batch', async () => {
    const forged = { ...alice, 'x-quire-batch': 'a-batch-that-does-not-exist' };
    const injected = await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b/collections/c/records/forged1',
      headers: forged,
    });
    expect(injected.statusCode).toBe(201);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const overHttp = await fetch(`http://127.0.0.1:${port}/v1/buckets/b/collections/c/records/forged2`, {
      method: 'PUT',
      headers: forged,
    });
    expect(overHttp.status).toBe(201);
    for (const id of ['forged1', 'forged2']) {
      expect(
        (await app.inject({ method: 'GET', url: `/v1/buckets/b/collections/c/records/${id}`, headers: alice }))
          .statusCode,
      ).toBe(200);
    }
    // Each one a request of its own, committed at once.
    const created = recorder.committed.flat().filter((event) => event.payload.action === 'create');
    expect(created.map((event) => event.impactedObjects[0]!.new.id)).toEqual(['forged1', 'forged2']);
  });

  it('a sub-request naming another batch in its headers runs in its own batch (rolled back with it)', async () => {
    recorder.failOn = 'boom3';
    const res = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: {
        requests: [
          {
            method: 'PUT',
            path: '/buckets/b/collections/c/records/ok3',
            headers: { 'X-Quire-Batch': 'another-batch' },
          },
          { method: 'PUT', path: '/buckets/b/collections/c/records/boom3' },
        ],
      },
    });
    expect(res.statusCode).toBe(500);
    recorder.failOn = null;
    expect(
      (await app.inject({ method: 'GET', url: '/v1/buckets/b/collections/c/records/ok3', headers: alice })).statusCode,
    ).toBe(404);
  });

  it('refused requests emit nothing', async () => {
    const res = await app.inject({
      method: 'PUT',
      url: '/v1/buckets/b/collections/c/records/r1',
      headers: alice,
      payload: { data: 'nope' },
    });
    expect(res.statusCode).toBe(400);
    const anonymous = await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c/records/zz' });
    expect(anonymous.statusCode).toBe(401);
    expect(recorder.inTx).toEqual([]);
  });
});

describeOnBackends(
  '§10.1 read events of the other resources: account, permissions, history',
  { timeout: 30_000 },
  (backend) => {
    it('are emitted for subscribers that ask, without password hashes', async () => {
      const app = await backend.serverWith({
        multiauth_policies: ['account', 'basicauth'],
        account_create_principals: ['system.Everyone'],
        history_enabled: true,
      });
      const recorder = new Recorder();
      recorder.actions = new Set(['read'] as const);
      app.services.events.subscribe(recorder);
      await app.inject({ method: 'PUT', url: '/v1/accounts/bob', payload: { data: { password: 'bob-password' } } });
      const bob = { authorization: `Basic ${Buffer.from('bob:bob-password').toString('base64')}` };
      await app.inject({ method: 'PUT', url: '/v1/buckets/hb', headers: bob });
      recorder.reset();

      await app.inject({ url: '/v1/accounts/bob', headers: bob });
      await app.inject({ url: '/v1/accounts', headers: bob });
      await app.inject({
        method: 'POST',
        url: '/v1/accounts',
        headers: bob,
        payload: { data: { id: 'bob', password: 'bob-password' } },
      });
      await app.inject({ url: '/v1/permissions', headers: bob });
      await app.inject({ url: '/v1/buckets/hb/history', headers: bob });

      const reads = recorder.inTx.map((events) => events[0]!);
      expect(reads.map((event) => [event.payload.resource_name, event.payload.uri])).toEqual([
        ['account', '/accounts/bob'],
        ['account', '/accounts'],
        ['account', '/accounts'],
        ['permissions', '/permissions'],
        ['history', '/buckets/hb/history'],
      ]);
      expect(reads[0]!.payload).toMatchObject({ action: 'read', user_id: 'account:bob', account_id: 'bob' });
      for (const event of reads.slice(0, 3)) {
        expect(event.impactedObjects).toEqual([{ new: expect.objectContaining({ id: 'bob' }) }]);
        expect(event.impactedObjects[0]!.new).not.toHaveProperty('password');
      }
      expect(reads[3]!.payload.timestamp).toBe(0);
      expect(reads[3]!.impactedObjects).toContainEqual({
        new: expect.objectContaining({ uri: '/buckets/hb', resource_name: 'bucket' }),
      });
      expect(reads[4]!.impactedObjects).toEqual([
        { new: expect.objectContaining({ action: 'create', resource_name: 'bucket', uri: '/buckets/hb' }) },
      ]);
      expect(reads[4]!.impactedObjects[0]!.new).not.toHaveProperty('_read_principals');
    });
  },
);

describeOnBackends('event_listeners setting', { timeout: 60_000 }, ({ serverWith }) => {
  it('refuses unknown listeners, actions and keys at boot', async () => {
    const build = (event_listeners: unknown) => serverWith({ event_listeners } as never);
    await expect(build([{ name: 'x', use: 'nope' }])).rejects.toThrow(/unknown listener "nope"/);
    await expect(build([{ name: 'x', use: 'redis', actions: ['explode'] }])).rejects.toThrow(/unknown action/);
    await expect(build([{ name: 'x', use: 'redis', colour: 'red' }])).rejects.toThrow(/unknown key\(s\) colour/);
    await expect(build([{ name: 'x', use: 'redis', url: 'http://x' }])).rejects.toThrow(/redis:\/\//);
    await expect(build({ name: 'x' })).rejects.toThrow(/JSON array/);
    expect(() => loadSettings({ env: { QUIRE_EVENT_LISTENERS: '[{' }, configFile: null })).toThrow(/expected JSON/);
  });
});
