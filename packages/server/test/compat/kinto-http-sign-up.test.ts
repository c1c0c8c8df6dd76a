/**
 * The published `kinto-http` client signing up the way its users do (issue 36 item 9): one
 * client, built with the new account's own Basic credentials, calls `createAccount()` — which
 * first reads `GET /` for the `accounts` capability, then `PUT /accounts/<id>`, both carrying
 * credentials of an account that does not exist yet — and then works as `account:<id>`. With
 * `account` the only Basic policy, as on the original server: the caller is anonymous until the
 * account exists. Embedded server on a port, real fetch.
 */
import { Buffer } from 'node:buffer';
import KintoClient from 'kinto-http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmbeddedTarget } from './embedded-target.js';

let remote: string;
let stop: () => Promise<void>;
const statuses: Array<[method: string, path: string, status: number]> = [];

beforeAll(async () => {
  ({ url: remote, stop } = await startEmbeddedTarget({
    multiauth_policies: ['account'],
    account_create_principals: ['system.Everyone'],
    // Small login allowances (all clients here share 127.0.0.1): the sign-ups must not use them up.
    account_login_max_failures: 5,
    account_login_max_failures_per_ip: 5,
  }));
}, 60_000);

afterAll(async () => {
  await stop?.();
});

function clientOf(id: string, password: string): KintoClient {
  const authorization = `Basic ${Buffer.from(`${id}:${password}`).toString('base64')}`;
  const fetchFunc = async (...[input, init]: Parameters<typeof fetch>): Promise<Response> => {
    const response = await fetch(input, init);
    statuses.push([init?.method ?? 'GET', new URL(String(input)).pathname, response.status]);
    return response;
  };
  return new KintoClient(remote, { headers: { Authorization: authorization }, fetchFunc });
}

it('a client carrying its own new credentials signs up with createAccount(), then is that account', async () => {
  for (const id of ['carrier-a@example.com', 'carrier-b', 'carrier-c', 'carrier-d', 'carrier-e']) {
    const client = clientOf(id, 'pw-1');
    statuses.length = 0;
    const created = (await client.createAccount(id, 'pw-1')) as {
      data: { id: string; password?: unknown };
      permissions: { write: string[] };
    };
    expect(statuses).toEqual([
      ['GET', '/v1/', 200],
      ['PUT', `/v1/accounts/${id}`, 201],
    ]);
    expect(created.data.id).toBe(id);
    expect(created.data).not.toHaveProperty('password');
    expect(created.permissions.write).toEqual([`account:${id}`]);

    // The same client, unchanged, is now the account.
    const info = await client.fetchServerInfo();
    expect(info.capabilities).toHaveProperty('accounts');
    const user = await client.fetchUser();
    expect(user?.id).toBe(`account:${id}`);
    const bucket = await client.createBucket(`shelf-${id.replace(/[^a-z-]/g, '')}`);
    expect(bucket.permissions.write).toContain(`account:${id}`);
  }
});

it('a client with a wrong password for an existing account is anonymous: it cannot take the account over', async () => {
  const stranger = clientOf('carrier-b', 'not-the-password');
  expect(await stranger.fetchUser()).toBeUndefined();
  await expect(stranger.createAccount('carrier-b', 'stolen')).rejects.toMatchObject({ response: { status: 401 } });
  expect(await clientOf('carrier-b', 'pw-1').fetchUser()).toMatchObject({ id: 'account:carrier-b' });
});
