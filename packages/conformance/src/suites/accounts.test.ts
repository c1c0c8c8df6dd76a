/**
 * protocol-reference §13.2 (accounts plugin) with §9.1 (user id `account:<id>`) and §9.2
 * (permissions): sign-up, login, password change, deletion, listing. Accounts get random ids
 * (e-mail shaped, so that they also fit a server that validates accounts by e-mail).
 *
 * Needs the capability `accounts` and sign-up open to anonymous callers
 * (`account_create_principals` with system.Everyone); the checks that log in also need
 * accounts usable at once (`validation_enabled` false). Administrator checks run when
 * `--accounts-admin <id>:<password>` (`QUIRE_CONFORMANCE_ACCOUNTS_ADMIN`) names an account of
 * `account_write_principals`.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AuthenticatedRootBody, ListBody, RootBody } from '../harness/bodies.js';
import { applicable, serverInfo } from '../harness/capabilities.js';
import { basic, del, get, patch, post, put, SkipSignal, type HttpResponse } from '../harness/http.js';
import { expectApiError, expectTombstone, expectValidationError } from '../harness/matchers.js';

const info = await serverInfo();
const capability = info.capabilities.accounts;
const offered = applicable(capability !== undefined, 'accounts (§13.2)', 'capability accounts not offered');
const usableAtOnce =
  offered &&
  applicable(
    capability?.validation_enabled !== true,
    'accounts login (§13.2)',
    'accounts need e-mail validation before they can log in',
  );
const adminCredentials = process.env.QUIRE_CONFORMANCE_ACCOUNTS_ADMIN ?? '';
const hasAdmin =
  usableAtOnce &&
  applicable(
    adminCredentials.includes(':'),
    'accounts administrators (§13.2)',
    'no administrator account given: --accounts-admin id:password (QUIRE_CONFORMANCE_ACCOUNTS_ADMIN)',
  );
const admin = (() => {
  const colon = adminCredentials.indexOf(':');
  return {
    id: adminCredentials.slice(0, colon),
    authorization: basic(adminCredentials.slice(0, colon), adminCredentials.slice(colon + 1)),
  };
})();

interface Account {
  id: string;
  password: string;
  authorization: string;
}

function newAccountId(): string {
  return `acc-${randomUUID()}@example.com`;
}

function path(id: string): string {
  return `/accounts/${encodeURIComponent(id)}`;
}

function skipUnlessCreated(res: HttpResponse): void {
  if (res.status === 401 || res.status === 403)
    throw new SkipSignal(`anonymous sign-up refused (${res.status}): account_create_principals lacks system.Everyone`);
}

/** Signs up anonymously with PUT (the documented way). */
async function signUp(extra: Record<string, unknown> = {}): Promise<Account> {
  const id = newAccountId();
  const password = `pw-${randomUUID()}`;
  const res = await put(path(id), { body: { data: { password, ...extra } } });
  skipUnlessCreated(res);
  expect(res.status, res.text).toBe(201);
  return { id, password, authorization: basic(id, password) };
}

/**
 * The user `GET /` names; undefined when anonymous, or refused (Kinto answers wrong credentials
 * as anonymous, a server may refuse them with 401).
 */
async function whoAmI(authorization: string): Promise<string | undefined> {
  const res = await get<RootBody>('/', { auth: authorization });
  if (res.status === 401) {
    expectApiError(res, 401, 104);
    return undefined;
  }
  expect(res.status).toBe(200);
  return res.json.user?.id;
}

describe.runIf(offered)('§13.2 accounts: capability and sign-up', () => {
  it('§11.1 GET / lists the capability accounts with description, url and validation_enabled', () => {
    expect(capability).toEqual(expect.objectContaining({ description: expect.any(String), url: expect.any(String) }));
    if ('validation_enabled' in (capability ?? {})) expect(typeof capability?.validation_enabled).toBe('boolean');
  });

  it('§13.2 PUT /accounts/<id> signs up anonymously: 201, the account is its own writer', async () => {
    const id = newAccountId();
    const password = `pw-${randomUUID()}`;
    const res = await put(path(id), { body: { data: { password } } });
    skipUnlessCreated(res);
    expect(res.status).toBe(201);
    expect(res.json.data).toEqual(expect.objectContaining({ id, last_modified: expect.any(Number) }));
    expect(res.json.permissions.write).toEqual([`account:${id}`]);
    // The password is never sent back in clear (Kinto sends a hash; Quire nothing).
    expect(res.json.data.password).not.toBe(password);
    expect(res.headers.get('etag')).toBe(`"${res.json.data.last_modified}"`);
  });

  it('§13.2 POST /accounts with data.id signs up too (201)', async () => {
    const id = newAccountId();
    const res = await post('/accounts', { body: { data: { id, password: 'secret-1' } } });
    skipUnlessCreated(res);
    expect(res.status).toBe(201);
    expect(res.json.data.id).toBe(id);
    expect(res.json.permissions.write).toEqual([`account:${id}`]);
  });

  it('§13.2 POST /accounts without data.id is a 400', async () => {
    const res = await post('/accounts', { body: { data: { password: 'secret-1' } } });
    expectValidationError(res, { location: 'body' });
  });

  it('§13.2 sign-up without a password is a 400', async () => {
    const res = await put(path(newAccountId()), { body: { data: {} } });
    if (res.status === 401 || res.status === 403) throw new SkipSignal('anonymous sign-up refused');
    expectValidationError(res, { location: 'body' });
  });

  it('§4.2 account ids follow ^[a-zA-Z0-9][+.@a-zA-Z0-9_-]*$ (else 400 "Invalid object id")', async () => {
    const res = await put(`/accounts/${encodeURIComponent('-bad id')}`, { body: { data: { password: 'x' } } });
    if (res.status === 401 || res.status === 403) throw new SkipSignal('anonymous sign-up refused');
    expectValidationError(res);
  });

  it('§2 anonymous POST of an existing account id is refused (401, wire example)', async () => {
    const account = await signUp();
    const res = await post('/accounts', { body: { data: { id: account.id, password: 'again' } } });
    expect([401, 403]).toContain(res.status);
  });

  it('§13.2 anonymous GET /accounts is a 401', async () => {
    const res = await get('/accounts');
    expect(res.status).toBe(401);
  });
});

describe.runIf(usableAtOnce)('§13.2 / §9.1 accounts: login and own account', () => {
  it('§9.1 Basic Auth with the account id and password gives user id account:<id>', async () => {
    const account = await signUp();
    const res = await get<AuthenticatedRootBody>('/', { auth: account.authorization });
    expect(res.json.user.id).toBe(`account:${account.id}`);
    expect(res.json.user.principals).toEqual(
      expect.arrayContaining([`account:${account.id}`, 'system.Everyone', 'system.Authenticated']),
    );
  });

  it('§9.1 a wrong password does not authenticate as the account (401, anonymous or another policy)', async () => {
    const account = await signUp();
    expect(await whoAmI(basic(account.id, 'wrong'))).not.toBe(`account:${account.id}`);
    const res = await get(path(account.id), { auth: basic(account.id, 'wrong') });
    expect([401, 403]).toContain(res.status);
  });

  it('§13.2 the owner reads its account (with its permissions)', async () => {
    const account = await signUp();
    const res = await get(path(account.id), { auth: account.authorization });
    expect(res.status).toBe(200);
    expect(res.json.data.id).toBe(account.id);
    expect(res.json.permissions.write).toContain(`account:${account.id}`);
  });

  it('§13.2 GET /accounts lists only the caller’s own account', async () => {
    const account = await signUp();
    await signUp();
    const res = await get<ListBody>('/accounts', { auth: account.authorization });
    expect(res.status).toBe(200);
    expect(res.json.data.map((item) => item.id)).toEqual([account.id]);
  });

  it('§13.2 PUT by the owner changes the password: the old one stops working, the new one works', async () => {
    const account = await signUp();
    expect(await whoAmI(account.authorization)).toBe(`account:${account.id}`);
    const res = await put(path(account.id), {
      auth: account.authorization,
      body: { data: { password: 'new-password' } },
    });
    expect(res.status).toBe(200);
    expect(res.json.permissions.write).toEqual([`account:${account.id}`]);
    expect(await whoAmI(account.authorization)).not.toBe(`account:${account.id}`);
    expect(await whoAmI(basic(account.id, 'new-password'))).toBe(`account:${account.id}`);
  });

  it('§13.2 PATCH by the owner changes the password and keeps other fields', async () => {
    const account = await signUp({ nickname: 'ann' });
    const res = await patch(path(account.id), {
      auth: account.authorization,
      body: { data: { password: 'patched-password' } },
    });
    expect(res.status).toBe(200);
    expect(res.json.data.nickname).toBe('ann');
    expect(await whoAmI(basic(account.id, 'patched-password'))).toBe(`account:${account.id}`);
    expect(await whoAmI(account.authorization)).not.toBe(`account:${account.id}`);
  });

  it('§13.2 PATCH without a password keeps the current one', async () => {
    const account = await signUp();
    const res = await patch(path(account.id), { auth: account.authorization, body: { data: { nickname: 'bo' } } });
    expect(res.status).toBe(200);
    expect(await whoAmI(account.authorization)).toBe(`account:${account.id}`);
  });

  it('§13.2 a user cannot create an account for another id (400 "Username and account ID do not match.")', async () => {
    const account = await signUp();
    const res = await put(path(newAccountId()), { auth: account.authorization, body: { data: { password: 'x' } } });
    const body = expectValidationError(res, { location: 'body' });
    expect(body.message).toContain('Username and account ID do not match.');
  });

  it('§9.2 a user can neither read nor change another account (403)', async () => {
    const [owner, other] = await Promise.all([signUp(), signUp()]);
    expectApiError(await get(path(owner.id), { auth: other.authorization }), 403, 121);
    expectApiError(
      await put(path(owner.id), { auth: other.authorization, body: { data: { password: 'stolen' } } }),
      403,
      121,
    );
    expectApiError(await del(path(owner.id), { auth: other.authorization }), 403, 121);
    expect(await whoAmI(owner.authorization)).toBe(`account:${owner.id}`);
  });

  it('§13.2 DELETE by the owner removes the account: tombstone, then no more login', async () => {
    const account = await signUp();
    expect(await whoAmI(account.authorization)).toBe(`account:${account.id}`);
    const res = await del(path(account.id), { auth: account.authorization });
    expect(res.status).toBe(200);
    expectTombstone(res.json.data, account.id);
    expect(await whoAmI(account.authorization)).not.toBe(`account:${account.id}`);
  });
});

describe.runIf(hasAdmin)('§13.2 accounts: administrators (account_write_principals)', () => {
  it('§13.2 an administrator lists every account', async () => {
    const [one, two] = await Promise.all([signUp(), signUp()]);
    const res = await get<ListBody>(`/accounts?in_id=${encodeURIComponent(`${one.id},${two.id}`)}`, {
      auth: admin.authorization,
    });
    expect(res.status).toBe(200);
    expect(res.json.data.map((item) => item.id).sort()).toEqual([one.id, two.id].sort());
  });

  it('§13.2 an administrator creates an account for someone else; the account is its own writer', async () => {
    const id = newAccountId();
    const res = await put(path(id), { auth: admin.authorization, body: { data: { password: 'given-by-admin' } } });
    expect(res.status).toBe(201);
    expect(res.json.permissions.write).toEqual([`account:${id}`]);
    expect(await whoAmI(basic(id, 'given-by-admin'))).toBe(`account:${id}`);
  });

  it('§13.2 an administrator reads, changes the password of and deletes another account', async () => {
    const account = await signUp();
    expect((await get(path(account.id), { auth: admin.authorization })).status).toBe(200);
    const changed = await patch(path(account.id), {
      auth: admin.authorization,
      body: { data: { password: 'reset-by-admin' } },
    });
    expect(changed.status).toBe(200);
    expect(await whoAmI(basic(account.id, 'reset-by-admin'))).toBe(`account:${account.id}`);
    const deleted = await del(path(account.id), { auth: admin.authorization });
    expect(deleted.status).toBe(200);
    expectApiError(await get(path(account.id), { auth: admin.authorization }), 404, 110);
  });
});
