/**
 * The Redis queue listener (protocol-reference §10.4) against a real Redis: a worker consumes
 * the list with BRPOP and gets each committed event's payload, in order. While Redis is away,
 * requests still succeed, events wait in a bounded buffer and reach Redis once it is back.
 * Skipped (with the reason printed) when Redis is unreachable, unless QUIRE_TEST_REQUIRE_REDIS.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisQueueListener } from '../src/listeners/redis.js';
import { describeOnBackends } from './helpers/backends.js';
import { REDIS_URL as url, redisUnavailable } from './helpers/redis.js';

const alice = { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` };

/** Pops up to `count` messages (oldest first), waiting at most `seconds` for each. */
async function consume(
  worker: Redis,
  list: string,
  count: number,
  seconds = 5,
): Promise<Array<Record<string, unknown>>> {
  const messages: Array<Record<string, unknown>> = [];
  while (messages.length < count) {
    const popped = await worker.brpop(list, seconds);
    if (!popped) break;
    messages.push(JSON.parse(popped[1]) as Record<string, unknown>);
  }
  return messages;
}

/** A TCP relay to Redis that can be switched off and on, to play an outage. */
class Relay {
  port = 0;
  #server: net.Server | null = null;
  readonly #sockets = new Set<net.Socket>();

  async reservePort(): Promise<void> {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    this.port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }

  async start(): Promise<void> {
    const target = new URL(url);
    this.#server = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 6379), target.hostname);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('error', () => {});
        socket.on('close', () => this.#sockets.delete(socket));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.#server!.listen(this.port, '127.0.0.1', resolve));
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    if (this.#server) await new Promise<void>((resolve) => this.#server!.close(() => resolve()));
    this.#server = null;
  }
}

const reason = await redisUnavailable('redis-listener.test.ts');

if (reason !== undefined) {
  describe.skip('Redis queue listener (Redis unreachable)', () => {
    it('needs a Redis server', () => {});
  });
} else {
  describeOnBackends('Redis queue listener', { timeout: 30_000 }, (backend) => {
    const serverWith = (listeners: unknown[]) => backend.serverWith({ event_listeners: listeners } as never);
    let worker: Redis;
    const lists: string[] = [];
    const newList = () => {
      const name = `quire-test-${randomUUID()}`;
      lists.push(name);
      return name;
    };

    beforeAll(() => {
      worker = new Redis(url);
    });
    afterAll(async () => {
      if (lists.length) await worker.del(...lists);
      worker.disconnect();
    });

    it('§10.4 LPUSHes each committed event payload as JSON; a BRPOP worker reads them in order', async () => {
      const list = newList();
      const records = newList();
      const app = await serverWith([
        { name: 'queue', use: 'kinto_redis.listeners', url, listname: list, pool_size: 5 },
        { name: 'records', use: 'redis', url, listname: records, resources: ['record'], actions: ['create'] },
      ]);
      try {
        const me = (await app.inject({ method: 'GET', url: '/v1/', headers: alice })).json().user.id;
        expect((await app.inject({ method: 'PUT', url: '/v1/buckets/rq', headers: alice })).statusCode).toBe(201);
        await app.inject({ method: 'PUT', url: '/v1/buckets/rq/collections/c', headers: alice });
        const record = await app.inject({
          method: 'PUT',
          url: '/v1/buckets/rq/collections/c/records/r1',
          headers: alice,
          payload: { data: { a: 1 } },
        });
        await app.inject({ method: 'DELETE', url: '/v1/buckets/rq/collections/c/records/r1', headers: alice });
        // A refused request pushes nothing.
        await app.inject({ method: 'PUT', url: '/v1/buckets/rq/collections/c/records/r2', payload: { data: {} } });

        const messages = await consume(worker, list, 4);
        expect(messages.map((m) => `${m.resource_name}:${m.action}`)).toEqual([
          'bucket:create',
          'collection:create',
          'record:create',
          'record:delete',
        ]);
        expect(messages[2]).toEqual({
          action: 'create',
          resource_name: 'record',
          timestamp: record.json().data.last_modified,
          uri: '/buckets/rq/collections/c/records/r1',
          user_id: me,
          bucket_id: 'rq',
          collection_id: 'c',
          record_id: 'r1',
        });
        expect(await worker.llen(list)).toBe(0);
        // The second listener only takes record creations.
        const filtered = await consume(worker, records, 2, 1);
        expect(filtered.map((m) => `${m.resource_name}:${m.action}:${m.record_id}`)).toEqual(['record:create:r1']);
      } finally {
        await app.close();
      }
    });

    it('§10.4 a batch pushes its grouped events once committed, and nothing when rolled back', async () => {
      const list = newList();
      const app = await serverWith([{ name: 'queue', use: 'redis', url, listname: list }]);
      try {
        await app.inject({ method: 'PUT', url: '/v1/buckets/rb', headers: alice });
        await app.inject({ method: 'PUT', url: '/v1/buckets/rb/collections/c', headers: alice });
        await consume(worker, list, 2);
        const ok = await app.inject({
          method: 'POST',
          url: '/v1/batch',
          headers: alice,
          payload: {
            requests: ['x', 'y'].map((id) => ({ method: 'PUT', path: `/buckets/rb/collections/c/records/${id}` })),
          },
        });
        expect(ok.statusCode).toBe(200);
        const grouped = await consume(worker, list, 2, 1);
        expect(grouped).toHaveLength(1);
        expect(grouped[0]).toMatchObject({
          action: 'create',
          resource_name: 'record',
          uri: '/buckets/rb/collections/c/records/x',
        });

        // A 404 sub-request is an answer, not a failure: the others are committed and pushed.
        const partial = await app.inject({
          method: 'POST',
          url: '/v1/batch',
          headers: alice,
          payload: {
            requests: [
              { method: 'PUT', path: '/buckets/rb/collections/c/records/z' },
              { method: 'PUT', path: '/buckets/rb/collections/missing/records/w' },
            ],
          },
        });
        expect(partial.statusCode).toBe(200);
        expect((await consume(worker, list, 1, 1)).map((m) => m.uri)).toEqual(['/buckets/rb/collections/c/records/z']);

        // A batch rolled back (here by an in-transaction listener refusing it) pushes nothing.
        app.services.events.subscribe({
          name: 'veto',
          actions: new Set(['create']),
          resources: null,
          async inTransaction(events) {
            if (events.some((event) => event.impactedObjects.some((item) => item.new.id === 'vetoed')))
              throw new Error('vetoed');
          },
        });
        const failed = await app.inject({
          method: 'POST',
          url: '/v1/batch',
          headers: alice,
          payload: {
            requests: ['fine', 'vetoed'].map((id) => ({
              method: 'PUT',
              path: `/buckets/rb/collections/c/records/${id}`,
            })),
          },
        });
        expect(failed.statusCode).toBe(500);
        expect(await consume(worker, list, 1, 1)).toEqual([]);
      } finally {
        await app.close();
      }
    });

    it('Redis down: requests succeed, the buffer is bounded, events arrive in order once Redis is back', async () => {
      const relay = new Relay();
      await relay.reservePort();
      const list = newList();
      const app = await serverWith([
        {
          name: 'queue',
          use: 'redis',
          url: `redis://127.0.0.1:${relay.port}/0`,
          listname: list,
          max_buffer: 3,
          retry_min_ms: 20,
          retry_max_ms: 100,
        },
      ]);
      const listener = app.services.events.subscribers.find((s) => s.name === 'queue') as RedisQueueListener;
      try {
        await app.inject({ method: 'PUT', url: '/v1/buckets/rd', headers: alice });
        await app.inject({ method: 'PUT', url: '/v1/buckets/rd/collections/c', headers: alice });
        for (const id of ['r1', 'r2', 'r3', 'r4']) {
          const res = await app.inject({
            method: 'PUT',
            url: `/v1/buckets/rd/collections/c/records/${id}`,
            headers: alice,
          });
          expect(res.statusCode).toBe(201);
        }
        // 6 events, at most 3 kept: the oldest were dropped (and logged).
        expect(listener.pending).toBe(3);

        await relay.start();
        const messages = await consume(worker, list, 3, 10);
        expect(messages.map((m) => m.uri)).toEqual(
          ['r2', 'r3', 'r4'].map((id) => `/buckets/rd/collections/c/records/${id}`),
        );
        // The worker may see the push before this process handles Redis's answer to it.
        await expect.poll(() => listener.pending).toBe(0);
      } finally {
        await app.close();
        await relay.stop();
      }
    });

    it('closing the server while Redis is unreachable does not hang', async () => {
      const relay = new Relay();
      await relay.reservePort();
      const app = await serverWith([
        { name: 'queue', use: 'redis', url: `redis://127.0.0.1:${relay.port}/0`, listname: newList() },
      ]);
      await app.inject({ method: 'PUT', url: '/v1/buckets/rc', headers: alice });
      const started = Date.now();
      await app.close();
      expect(Date.now() - started).toBeLessThan(15_000);
    });
  });
}
