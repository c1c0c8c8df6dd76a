/**
 * Issue 36 items 7 and 9, the sign-up side. An open sign-up minted accounts in milliseconds: it
 * is now limited per client address (`account_create_max_per_address`, 429 errno 117 with
 * `Retry-After`; administrators are not). And a published client signs up while already
 * carrying the new account's credentials: with `account` alone the original takes credentials
 * that do not log in as anonymous, so that sign-up succeeds (it was 401, then 429); redirects
 * are answered whatever the credentials. Real HTTP from distinct loopback addresses, both stores.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, expect, it } from 'vitest';
import type { Settings } from '../../src/config.js';
import { describeOnBackends } from '../helpers/backends.js';
import { basic, clientFrom, listen, type Client } from '../helpers/from-address.js';

interface Root {
  user?: { id: string };
}

interface Batch {
  responses: Array<{ status: number; body: { errno?: number } }>;
}

describeOnBackends('sign-up (issue 36.7, 36.9)', { timeout: 60_000 }, ({ serverWith }) => {
  const clients: Client[] = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  async function start(
    overrides: Partial<Settings>,
  ): Promise<{ app: FastifyInstance; from: (address: string) => Client }> {
    const app = await serverWith({ account_create_principals: ['system.Everyone'], ...overrides });
    const port = await listen(app);
    return {
      app,
      from: (address) => {
        const client = clientFrom(address, port);
        clients.push(client);
        return client;
      },
    };
  }

  const signUp = (client: Client, id: string, headers: Record<string, string> = {}) =>
    client.send('PUT', `/v1/accounts/${id}`, { headers, body: { data: { password: 'pw' } } });

  it('limits sign-ups per address (429 errno 117, Retry-After, none made), not elsewhere nor for admins', async () => {
    const { from } = await start({
      multiauth_policies: ['account', 'basicauth'],
      account_write_principals: ['account:admin'],
      account_create_max_per_address: 3,
    });
    const admin = from('127.0.0.9');
    expect((await signUp(admin, 'admin')).status).toBe(201);
    const asAdmin = basic('admin', 'pw');

    const minter = from('127.0.0.2');
    const statuses: number[] = [];
    for (let index = 0; index < 3; index++) statuses.push((await signUp(minter, `mint-${index}`)).status);
    expect(statuses).toEqual([201, 201, 201]);
    const refused = await signUp(minter, 'mint-3');
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({
      code: 429,
      errno: 117,
      error: 'Too Many Requests',
      message: 'Too many accounts created from this address, retry later.',
    });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await admin.send('GET', '/v1/accounts/mint-3', { headers: asAdmin })).status).toBe(404);
    // By POST and inside a batch too.
    expect(
      (await minter.send('POST', '/v1/accounts', { body: { data: { id: 'mint-4', password: 'pw' } } })).status,
    ).toBe(429);
    const batch = await minter.send<Batch>('POST', '/v1/batch', {
      body: {
        requests: [5, 6].map((index) => ({
          method: 'PUT',
          path: `/accounts/mint-${index}`,
          body: { data: { password: 'pw' } },
        })),
      },
    });
    expect(batch.json.responses.map((response) => [response.status, response.body.errno])).toEqual([
      [429, 117],
      [429, 117],
    ]);
    const listed = await admin.send<{ data: Array<{ id: string }> }>('GET', '/v1/accounts', { headers: asAdmin });
    expect(listed.json.data.map((account) => account.id).sort()).toEqual(['admin', 'mint-0', 'mint-1', 'mint-2']);

    // Another address signs up; an administrator creates accounts from the limited address.
    expect((await signUp(from('127.0.0.3'), 'elsewhere')).status).toBe(201);
    for (const id of ['made-1', 'made-2', 'made-3']) expect((await signUp(minter, id, asAdmin)).status).toBe(201);
  });

  it('with `account` alone, a client carrying its new credentials signs up (201), again and again', async () => {
    // Small login allowances: the credentials sent before each sign-up must not use them up.
    const { from } = await start({
      multiauth_policies: ['account'],
      account_login_max_failures: 2,
      account_login_max_failures_per_ip: 3,
    });
    const client = from('127.0.0.2');
    for (let index = 0; index < 6; index++) {
      const id = `carrier-${index}`;
      const own = basic(id, 'pw');
      // What a published client does first: `GET /` with its credentials (capabilities), anonymous.
      const before = await client.send<Root>('GET', '/v1/', { headers: own });
      expect(before.status).toBe(200);
      expect(before.json.user).toBeUndefined();
      const created = await signUp(client, id, own);
      expect(created.status).toBe(201);
      expect(created.json).toMatchObject({ data: { id }, permissions: { write: [`account:${id}`] } });
      expect((await client.send<Root>('GET', '/v1/', { headers: own })).json.user?.id).toBe(`account:${id}`);
    }
    // Signing up again over an existing account with its own credentials is an update of it.
    expect((await signUp(client, 'carrier-0', basic('carrier-0', 'pw'))).status).toBe(200);
    // Someone else's credentials for an existing account do not let a stranger take it over.
    const taken = await signUp(from('127.0.0.3'), 'carrier-1', basic('carrier-1', 'not-the-password'));
    expect(taken.status).toBe(401);
    expect((await client.send<Root>('GET', '/v1/', { headers: basic('carrier-1', 'pw') })).json.user?.id).toBe(
      'account:carrier-1',
    );
  });

  it('redirects and unknown URLs are answered whatever the credentials', async () => {
    for (const policies of [['account'], ['account', 'basicauth']]) {
      const { from } = await start({ multiauth_policies: policies });
      const client = from('127.0.0.2');
      // One store for the file's tests: names of their own.
      const owner = `owner-${policies.length}`;
      expect((await signUp(client, owner)).status).toBe(201);
      for (const headers of [basic('nobody', 'x'), basic(owner, 'wrong')]) {
        const redirected = await client.send('GET', '/buckets?_limit=1', { headers });
        expect(redirected.status).toBe(307);
        expect(redirected.headers.location).toMatch(/\/v1\/buckets\?_limit=1$/);
        expect((await client.send('GET', '/v1', { headers })).status).toBe(307);
        expect((await client.send('GET', '/v1/buckets/', { headers })).status).toBe(307);
        expect((await client.send('GET', '/v1/no-such-thing', { headers })).json).toMatchObject({ errno: 111 });
        expect((await client.send('GET', '/v2/', { headers })).json).toMatchObject({ errno: 116 });
      }
    }
  });

  it('with `basicauth` after `account`: an unknown name is a Basic Auth user, a wrong password is 401', async () => {
    const { from } = await start({ multiauth_policies: ['account', 'basicauth'] });
    const client = from('127.0.0.2');
    expect((await signUp(client, 'owner')).status).toBe(201);
    expect((await client.send<Root>('GET', '/v1/', { headers: basic('newcomer', 'pw') })).json.user?.id).toMatch(
      /^basicauth:/,
    );
    const wrong = await client.send('GET', '/v1/', { headers: basic('owner', 'wrong') });
    expect(wrong.status).toBe(401);
    expect(wrong.json).toMatchObject({ errno: 104 });
    // As in the original: that Basic Auth user is not the account it names (400), the client
    // signs up without credentials.
    const mismatched = await signUp(client, 'newcomer', basic('newcomer', 'pw'));
    expect(mismatched.status).toBe(400);
    expect(JSON.stringify(mismatched.json)).toContain('Username and account ID do not match.');
    expect((await signUp(client, 'newcomer')).status).toBe(201);
  });
});
