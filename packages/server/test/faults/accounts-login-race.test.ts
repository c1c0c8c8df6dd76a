/**
 * Issue 36 item 8: a right password is never answered 429. Parallel first requests of a client
 * (a cold password cache, at start and every `account_cache_ttl_seconds`) used to count one
 * failure each before their checks ended: 21 of them got 11 × 429 "Too many failed login
 * attempts". They now share one check (single-flight), and a check over a limit only because
 * of checks not yet decided waits for them: only real failures refuse. Brute force stays
 * limited (accounts-lockout.test.ts). Real HTTP on loopback, many connections at once, both stores.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { buildServer } from '../../src/app.js';
import type { Settings } from '../../src/config.js';
import { createSqliteStorage } from '../../src/storage/sqlite/sqlite-storage.js';
import { describeOnBackends } from '../helpers/backends.js';
import { testSettings } from '../helpers/embedded-server.js';
import { basic, clientFrom, listen, type Client } from '../helpers/from-address.js';
import { holdStream } from '../helpers/held-streams.js';
import { REDIS_URL, redisUnavailable } from '../helpers/redis.js';

const ADDRESS = '127.0.0.2';
const PARALLEL = 21;

interface Root {
  user?: { id: string };
}

describeOnBackends('a right password is never answered 429 (issue 36.8)', { timeout: 120_000 }, ({ serverWith }) => {
  const clients: Client[] = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  async function start(overrides: Partial<Settings>): Promise<{ app: FastifyInstance; port: number }> {
    const app = await serverWith({
      multiauth_policies: ['account', 'basicauth'],
      account_create_principals: ['system.Everyone'],
      ...overrides,
    });
    return { app, port: await listen(app) };
  }

  async function signUp(client: Client, id: string): Promise<void> {
    expect((await client.send('PUT', `/v1/accounts/${id}`, { body: { data: { password: `${id}-pw` } } })).status).toBe(
      201,
    );
  }

  /** `count` requests at once, each with the right password of one of `ids` (round-robin); their statuses and users. */
  async function burst(client: Client, ids: string[], count: number, path = '/v1/') {
    const answers = await Promise.all(
      Array.from({ length: count }, (_, index) => {
        const id = ids[index % ids.length] as string;
        return client.send<Root>('GET', path, { headers: basic(id, `${id}-pw`) }).then((answer) => ({ id, answer }));
      }),
    );
    return {
      statuses: answers.map(({ answer }) => answer.status),
      wrongUsers: answers.filter(({ id, answer }) => path === '/v1/' && answer.json.user?.id !== `account:${id}`),
    };
  }

  it(`${PARALLEL} parallel first requests with the right password: every one logs in, 0 × 429`, async () => {
    const { port } = await start({});
    const client = clientFrom(ADDRESS, port, PARALLEL);
    clients.push(client);
    // A fresh account per round: its password is in no cache.
    for (let round = 0; round < 3; round++) {
      const id = `racer-${round}`;
      await signUp(client, id);
      const { statuses, wrongUsers } = await burst(client, [id], PARALLEL);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(wrongUsers).toEqual([]);
    }
  });

  it('with no password cache at all, rounds of parallel requests never get 429', async () => {
    const { port } = await start({ account_cache_ttl_seconds: 0, account_login_max_failures: 3 });
    const client = clientFrom(ADDRESS, port, 25);
    clients.push(client);
    await signUp(client, 'uncached');
    for (let round = 0; round < 4; round++) {
      const { statuses } = await burst(client, ['uncached'], 25, '/v1/buckets');
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
    }
  });

  it('more accounts logging in at once from one address than its failure allowance: 0 × 429', async () => {
    // A shared address (NAT, a proxy) with 12 users whose passwords no cache holds, and an
    // allowance of 4 failures per address: checks in flight are not failures.
    const { port } = await start({ account_login_max_failures_per_ip: 4, account_cache_ttl_seconds: 0 });
    const client = clientFrom(ADDRESS, port, 36);
    clients.push(client);
    const ids = Array.from({ length: 12 }, (_, index) => `shared-${index}`);
    for (const id of ids) await signUp(client, id);
    for (let round = 0; round < 2; round++) {
      const { statuses, wrongUsers } = await burst(client, ids, 36);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(wrongUsers).toEqual([]);
    }
    // Real failures still count: the allowance of 4 is used up by 4 wrong passwords.
    const wrong = [];
    for (const id of ids.slice(0, 5))
      wrong.push((await client.send('GET', '/v1/', { headers: basic(id, 'wrong') })).status);
    expect(wrong).toEqual([401, 401, 401, 401, 429]);
  });

  it('streams opened at once by many accounts from one address are never refused for the login', async () => {
    // Every open checks the password (no cache): 5 accounts × 20 streams at once, the caps' limits.
    const { port } = await start({ account_cache_ttl_seconds: 0 });
    const client = clientFrom(ADDRESS, port, 1);
    clients.push(client);
    const ids = Array.from({ length: 5 }, (_, index) => `streamer-${index}`);
    for (const id of ids) await signUp(client, id);
    const streams = await Promise.all(
      Array.from({ length: 100 }, (_, index) => {
        const id = ids[index % ids.length] as string;
        return holdStream(`http://127.0.0.1:${port}`, ADDRESS, basic(id, `${id}-pw`));
      }),
    );
    try {
      expect(streams.map((stream) => stream.status).filter((status) => status !== 200)).toEqual([]);
    } finally {
      for (const stream of streams) stream.close();
    }
  });
});

// --- Two processes sharing their counters in Redis ----------------------------------------------

const redisReason = await redisUnavailable('accounts-login-race.test.ts (Redis block)');

describe.skipIf(redisReason !== undefined)(
  'a right password is never answered 429, counters in Redis (two processes)',
  { timeout: 60_000 },
  () => {
    const apps: FastifyInstance[] = [];
    const clients: Client[] = [];
    let closeStorage: (() => Promise<void>) | undefined;
    afterAll(async () => {
      for (const client of clients) client.close();
      for (const app of apps) await app.close();
      await closeStorage?.();
    });

    it('many accounts logging in at once through both processes, over the address allowance: 0 × 429', async () => {
      const storage = await createSqliteStorage();
      closeStorage = () => storage.close();
      const settings = testSettings({
        multiauth_policies: ['account'],
        account_create_principals: ['system.Everyone'],
        account_cache_ttl_seconds: 0,
        account_login_max_failures_per_ip: 4,
        account_create_max_per_address: 100_000,
        account_login_limiter_redis_url: REDIS_URL,
      });
      for (let index = 0; index < 2; index++) apps.push(await buildServer({ settings, storage, logger: false }));
      // An address of its own: counters outlive the run in Redis.
      const ports = await Promise.all(apps.map((app) => listen(app)));
      const [first, second] = ports.map((port) => clientFrom('127.0.0.9', port, 24)) as [Client, Client];
      clients.push(first, second);
      const ids = Array.from({ length: 12 }, () => `redis-${randomUUID()}`);
      for (const id of ids)
        expect((await first.send('PUT', `/v1/accounts/${id}`, { body: { data: { password: 'pw' } } })).status).toBe(
          201,
        );
      const answers = await Promise.all(
        Array.from({ length: 48 }, (_, index) =>
          (index % 2 === 0 ? first : second).send<Root>('GET', '/v1/', {
            headers: basic(ids[index % ids.length] as string, 'pw'),
          }),
        ),
      );
      expect(answers.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([]);
      expect(answers.every((answer) => answer.json.user?.id.startsWith('account:redis-'))).toBe(true);
    });
  },
);
