/**
 * Identities. By default the suite relies on the `basicauth` policy: any `user:password` pair
 * authenticates and maps to a stable `basicauth:<hmac>` user id, so random pairs give distinct
 * identities. Each test file gets its own module instance, hence its own random `alice` and `bob`.
 *
 * Against a deployment without `basicauth`, the CLI either
 * - passes real credentials (`--user`) as `QUIRE_CONFORMANCE_USERS` (JSON list of
 *   `{name, password}`): `alice`, `bob` and then each `createUser()` take the next one; once
 *   they run out, `createUser()` gives a random pair, which a check can use only where
 *   `basicauth` is offered (else it is skipped, saying how many identities were given); or
 * - asks for throwaway accounts (`--create-accounts`, `QUIRE_CONFORMANCE_CREATE_ACCOUNTS=1`):
 *   every `createUser()` is a new account, created by the first request that uses it
 *   (identities.ts), so a file has exactly as many accounts as its checks use.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { RootBody } from './bodies.js';
import { basic, type Identity, request } from './http.js';
import { registerBasicAuthPair, registerStandIn, registerThrowawayAccount } from './identities.js';

export interface User extends Identity {
  /** Basic Auth user name (`user-<uuid>`, or the account id). */
  name: string;
  password: string;
  /** Short label for messages. */
  label: string;
}

function givenCredentials(): { name: string; password: string }[] {
  const raw = process.env.QUIRE_CONFORMANCE_USERS;
  if (!raw) return [];
  const parsed: unknown = JSON.parse(raw);
  if (!Array.isArray(parsed)) throw new Error('conformance: QUIRE_CONFORMANCE_USERS must be a JSON list');
  return parsed.map((u: { name?: unknown; password?: unknown }) => ({
    name: String(u.name),
    password: String(u.password),
  }));
}

const pool = givenCredentials();
let nextGiven = 0;
/** Throwaway accounts, created on first use (given credentials take precedence). */
const createAccounts = pool.length === 0 && process.env.QUIRE_CONFORMANCE_CREATE_ACCOUNTS === '1';

/** True when the identities come from given credentials rather than random basicauth pairs. */
export function usesGivenCredentials(): boolean {
  return pool.length > 0;
}

/** True when the identities are throwaway accounts created by the run (`--create-accounts`). */
export function usesCreatedAccounts(): boolean {
  return createAccounts;
}

/**
 * True when every identity is throwaway: random basicauth pairs, or accounts created for this
 * run (`--create-accounts`; also given credentials flagged `QUIRE_CONFORMANCE_USERS_DISPOSABLE=1`).
 * Only then may a check touch data that belongs to the identity as a whole (its `default`
 * bucket, `DELETE /buckets`).
 */
export function usesThrowawayIdentities(): boolean {
  return pool.length === 0 || process.env.QUIRE_CONFORMANCE_USERS_DISPOSABLE === '1';
}

export function createUser(label = 'user'): User {
  const given = pool[nextGiven];
  if (given) {
    nextGiven += 1;
    return { name: given.name, password: given.password, authorization: basic(given.name, given.password), label };
  }
  if (createAccounts) {
    const name = `conf-${randomBytes(8).toString('hex')}`;
    const password = `pw-${randomBytes(12).toString('hex')}`;
    const authorization = basic(name, password);
    registerThrowawayAccount(name, password, authorization);
    return { name, password, authorization, label };
  }
  const name = `user-${randomUUID()}`;
  const password = `pw-${randomUUID()}`;
  const authorization = basic(name, password);
  if (pool.length > 0) registerStandIn(authorization, pool.length);
  else registerBasicAuthPair(authorization);
  return { name, password, authorization, label };
}

export const alice: User = createUser('alice');
export const bob: User = createUser('bob');
/** No Authorization header at all. */
export const anonymous = null;

const ids = new Map<string, Promise<string>>();

/** The server-side user id (e.g. `basicauth:<64 hex>`), read from `GET /` → `user.id`. */
export function userId(user: User): Promise<string> {
  let p = ids.get(user.authorization);
  if (!p) {
    p = request<RootBody | undefined>('GET', '/', { auth: user }).then((res) => {
      const id: unknown = res.json?.user?.id;
      if (res.status !== 200 || typeof id !== 'string') {
        throw new Error(
          `conformance: GET / did not authenticate ${user.label} (status ${res.status}); ` +
            'the suite needs the basicauth policy, valid credentials (--user) or --create-accounts',
        );
      }
      return id;
    });
    p.catch(() => ids.delete(user.authorization));
    ids.set(user.authorization, p);
  }
  return p;
}
