/**
 * Issue 19 item 5: nobody may lock an account's owner out, and a mistyped password never becomes
 * another user. With `basicauth` on, a wrong password for an existing account answers 401 (that
 * policy would otherwise accept the pair as a new, empty identity); with `account` alone it is
 * anonymous, as a name that is no account (issue 36 item 9); failures are limited per
 * (account, client address) pair and per address, so an attacker's failures only ever block the
 * attacker. Real HTTP on loopback, clients on distinct addresses (127.0.0.2 = the owner's usual
 * address, 127.0.0.3 = an attacker), on both stores; the counters shared through Redis too.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { buildServer } from '../../src/app.js';
import type { Settings } from '../../src/config.js';
import { createSqliteStorage } from '../../src/storage/sqlite/sqlite-storage.js';
import { describeOnBackends } from '../helpers/backends.js';
import { basicAuth, testSettings } from '../helpers/embedded-server.js';
import { basic, clientFrom, listen, type Client } from '../helpers/from-address.js';
import { REDIS_URL, redisUnavailable } from '../helpers/redis.js';

const OWNER_ADDRESS = '127.0.0.2';
const ATTACKER_ADDRESS = '127.0.0.3';

const BOTH_POLICIES: Partial<Settings> = {
  multiauth_policies: ['account', 'basicauth'],
  account_create_principals: ['system.Everyone'],
};

/** `GET /` for an authenticated caller: who the server took it for. */
interface Root {
  user: { id: string };
}

/** A batch's answer: its sub-requests' statuses, and the bodies of the `GET /` among them. */
interface Batch {
  responses: Array<{ status: number; body: Partial<Root> }>;
}

describeOnBackends('account lock-out (issue 19.5)', { timeout: 60_000 }, ({ serverWith }) => {
  const clients: Client[] = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  async function start(
    overrides: Partial<Settings> = {},
  ): Promise<{ owner: Client; attacker: Client; app: FastifyInstance }> {
    const app = await serverWith({ ...BOTH_POLICIES, ...overrides });
    const port = await listen(app);
    const owner = clientFrom(OWNER_ADDRESS, port);
    const attacker = clientFrom(ATTACKER_ADDRESS, port);
    clients.push(owner, attacker);
    return { owner, attacker, app };
  }

  async function signUp(client: Client, id: string, password: string): Promise<void> {
    const created = await client.send('PUT', `/v1/accounts/${id}`, { body: { data: { password } } });
    expect(created.status).toBe(201);
  }

  it('a wrong password for an existing account is 401, never another (empty) Basic Auth user', async () => {
    const { owner } = await start();
    await signUp(owner, 'ann', 'right');

    const root = await owner.send('GET', '/v1/', { headers: basic('ann', 'mistyped') });
    expect(root.status).toBe(401);
    expect(root.json).toMatchObject({ code: 401, errno: 104, error: 'Unauthorized' });
    expect(root.headers['www-authenticate']).toMatch(/^Basic /);
    // A write with the mistyped password creates nothing under a stranger's identity.
    const write = await owner.send('PUT', '/v1/buckets/ann-notes', {
      headers: basic('ann', 'mistyped'),
      body: { data: {} },
    });
    expect(write.status).toBe(401);

    // Names that are no account still are Basic Auth identities, and the right password logs in.
    expect(
      (await owner.send<Root>('GET', '/v1/', { headers: basic('not-an-account', 'whatever') })).json.user.id,
    ).toMatch(/^basicauth:/);
    expect((await owner.send<Root>('GET', '/v1/', { headers: basic('ann', 'right') })).json.user.id).toBe(
      'account:ann',
    );
  });

  it("ten wrong passwords from another address do not lock the owner out of the owner's usual address", async () => {
    const { owner, attacker } = await start();
    await signUp(owner, 'bea', 'right');
    expect((await owner.send<Root>('GET', '/v1/', { headers: basic('bea', 'right') })).json.user.id).toBe(
      'account:bea',
    );

    const statuses: number[] = [];
    for (let attempt = 0; attempt < 12; attempt++) {
      statuses.push((await attacker.send('GET', '/v1/', { headers: basic('bea', `guess-${attempt}`) })).status);
    }
    // The attacker sees every failure: 401, then 429 once its (account, address) pair is used up.
    expect(statuses).toEqual([...Array(10).fill(401), 429, 429]);
    // Over the limit, the attacker's address is refused even the right password (no oracle).
    const blocked = await attacker.send('GET', '/v1/', { headers: basic('bea', 'right') });
    expect(blocked.status).toBe(429);
    expect(blocked.json).toMatchObject({ errno: 117 });
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);

    // The owner, from the usual address, is not affected (cached password or not).
    const mine = await owner.send<Root>('GET', '/v1/', { headers: basic('bea', 'right') });
    expect(mine.status).toBe(200);
    expect(mine.json.user.id).toBe('account:bea');
    const written = await owner.send('PUT', '/v1/buckets/bea-notes', {
      headers: basic('bea', 'right'),
      body: { data: {} },
    });
    expect(written.status).toBe(201);
  });

  it('the owner logs in while an attacker hammers from another address at the same time', async () => {
    const { owner, attacker } = await start({ account_cache_ttl_seconds: 0 });
    await signUp(owner, 'cid', 'right');
    const hammering = (async () => {
      const seen: number[] = [];
      for (let attempt = 0; attempt < 20; attempt++)
        seen.push((await attacker.send('GET', '/v1/', { headers: basic('cid', `guess-${attempt}`) })).status);
      return seen;
    })();
    const logins: number[] = [];
    for (let round = 0; round < 5; round++)
      logins.push((await owner.send('GET', '/v1/buckets', { headers: basic('cid', 'right') })).status);
    const seen = await hammering;
    expect(logins).toEqual([200, 200, 200, 200, 200]);
    expect(seen.every((status) => status === 401 || status === 429)).toBe(true);
    expect(seen.at(-1)).toBe(429);
  });

  it('guesses sent in parallel get no more password checks than the limit allows', async () => {
    const { owner, app } = await start({ account_login_max_failures: 5, account_cache_ttl_seconds: 0 });
    await signUp(owner, 'pat', 'right');
    const parallel = clientFrom(ATTACKER_ADDRESS, (app.server.address() as { port: number }).port, 20);
    clients.push(parallel);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        parallel.send('GET', '/v1/', { headers: basic('pat', `guess-${index}`) }),
      ),
    );
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([...Array(5).fill(401), ...Array(15).fill(429)]);
    expect((await owner.send<Root>('GET', '/v1/', { headers: basic('pat', 'right') })).json.user.id).toBe(
      'account:pat',
    );
  });

  it('one address cannot try many accounts: a ceiling per address, whatever the account', async () => {
    const { owner, attacker } = await start({ account_login_max_failures: 10, account_login_max_failures_per_ip: 4 });
    for (const id of ['dan', 'eve', 'fay', 'gus', 'hub']) await signUp(owner, id, 'right');
    const statuses: number[] = [];
    for (const id of ['dan', 'eve', 'fay', 'gus', 'hub'])
      statuses.push((await attacker.send('GET', '/v1/', { headers: basic(id, 'wrong') })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
    // Every owner still logs in from elsewhere.
    for (const id of ['dan', 'hub'])
      expect((await owner.send<Root>('GET', '/v1/', { headers: basic(id, 'right') })).json.user.id).toBe(
        `account:${id}`,
      );
  });

  it('guesses sent as batch sub-requests are limited too, and never block the owner’s batches', async () => {
    const { owner, attacker } = await start({ account_login_max_failures: 3, account_cache_ttl_seconds: 0 });
    await signUp(owner, 'ida', 'right');
    // An anonymous batch whose sub-requests each carry a guess.
    const guesses = Array.from({ length: 6 }, (_, index) => ({
      method: 'GET',
      path: '/',
      headers: basic('ida', `guess-${index}`),
    }));
    const batch = await attacker.send<Batch>('POST', '/v1/batch', { body: { requests: guesses } });
    expect(batch.status).toBe(200);
    expect(batch.json.responses.map((response) => response.status)).toEqual([401, 401, 401, 429, 429, 429]);
    // The owner's batch (credentials on the batch, inherited by its sub-requests) goes through.
    const mine = await owner.send<Batch>('POST', '/v1/batch', {
      headers: basic('ida', 'right'),
      body: {
        requests: [
          { method: 'GET', path: '/' },
          { method: 'PUT', path: '/buckets/ida-notes', body: { data: {} } },
        ],
      },
    });
    expect(mine.status).toBe(200);
    expect(mine.json.responses.map((response) => response.status)).toEqual([200, 201]);
    expect(mine.json.responses[0]?.body.user?.id).toBe('account:ida');
    // Further guesses stay refused.
    const again = await attacker.send<Batch>('POST', '/v1/batch', {
      body: { requests: [{ method: 'GET', path: '/', headers: basic('ida', 'guess-7') }] },
    });
    expect(again.json.responses[0]?.status).toBe(429);
  });

  it('with `account` alone, unknown names and wrong passwords are both anonymous and both counted', async () => {
    const { owner, attacker } = await start({ multiauth_policies: ['account'], account_login_max_failures_per_ip: 3 });
    await signUp(owner, 'jo', 'right');
    const answers: Array<{ status: number; user: unknown }> = [];
    for (const id of ['jo', 'nobody-1', 'jo', 'nobody-2']) {
      const answer = await attacker.send<Partial<Root>>('GET', '/v1/', { headers: basic(id, 'wrong') });
      answers.push({ status: answer.status, user: answer.json.user });
    }
    // The same answer for both (issue 36 item 9: both were 401 before), until the limit.
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    expect(answers.slice(0, 3).every((answer) => answer.user === undefined)).toBe(true);
    // A write with a wrong password is an anonymous write: refused, nothing lands anywhere.
    const write = await owner.send('PUT', '/v1/buckets/jo-notes', {
      headers: basic('jo', 'mistyped'),
      body: { data: {} },
    });
    expect(write.status).toBe(401);
    expect((await owner.send<Root>('GET', '/v1/', { headers: basic('jo', 'right') })).json.user.id).toBe('account:jo');
  });

  it('an IPv6 client is limited per /64 network (one host holds a whole /64)', async () => {
    const app = await serverWith({ ...BOTH_POLICIES, account_login_max_failures_per_ip: 3 });
    for (const id of ['kai', 'lea', 'max', 'ned']) {
      expect(
        (await app.inject({ method: 'PUT', url: `/v1/accounts/${id}`, payload: { data: { password: 'right' } } }))
          .statusCode,
      ).toBe(201);
    }
    // Injected: loopback has a single IPv6 address, and a /64 is what a host may use.
    const from = (remoteAddress: string, id: string, password: string) =>
      app.inject({ method: 'GET', url: '/v1/', headers: basicAuth(id, password), remoteAddress });
    const statuses: number[] = [];
    for (const [index, id] of ['kai', 'lea', 'max', 'ned'].entries())
      statuses.push((await from(`2001:db8:1:2::${index + 1}`, id, 'wrong')).statusCode);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await from('2001:db8:1:3::1', 'ned', 'right')).json().user.id).toBe('account:ned');
  });
});

// --- Counters shared by the processes of a deployment (Redis) -----------------------------------

const redisReason = await redisUnavailable('accounts-lockout.test.ts (Redis block)');

describe.skipIf(redisReason !== undefined)(
  'account lock-out with the counters in Redis (two processes)',
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

    it('failures seen by either process lock only the attacker’s pair; the owner logs in on both', async () => {
      const storage = await createSqliteStorage();
      closeStorage = () => storage.close();
      const settings = testSettings({
        ...BOTH_POLICIES,
        account_login_max_failures: 4,
        account_login_max_failures_per_ip: 1000,
        // Sign-ups are counted in Redis too, and outlive the run there.
        account_create_max_per_address: 100_000,
        account_login_limiter_redis_url: REDIS_URL,
      });
      for (let index = 0; index < 2; index++) apps.push(await buildServer({ settings, storage, logger: false }));
      const [first, second] = (await Promise.all(
        apps.map(async (app) => {
          const port = await listen(app);
          const pair = { owner: clientFrom(OWNER_ADDRESS, port), attacker: clientFrom(ATTACKER_ADDRESS, port) };
          clients.push(pair.owner, pair.attacker);
          return pair;
        }),
      )) as [{ owner: Client; attacker: Client }, { owner: Client; attacker: Client }];

      // Counters outlive the run in Redis: a fresh account id each time.
      const id = `redis-${randomUUID()}`;
      expect(
        (await first.owner.send('PUT', `/v1/accounts/${id}`, { body: { data: { password: 'right' } } })).status,
      ).toBe(201);
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 5; attempt++) {
        const process = attempt % 2 === 0 ? first : second;
        statuses.push((await process.attacker.send('GET', '/v1/', { headers: basic(id, `guess-${attempt}`) })).status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 429]);
      for (const process of [first, second]) {
        expect((await process.attacker.send('GET', '/v1/', { headers: basic(id, 'right') })).status).toBe(429);
        expect((await process.owner.send<Root>('GET', '/v1/', { headers: basic(id, 'right') })).json.user.id).toBe(
          `account:${id}`,
        );
      }
    });
  },
);
