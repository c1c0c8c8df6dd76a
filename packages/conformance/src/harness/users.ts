/**
 * Identities. By default the suite relies on the `basicauth` policy: any `user:password` pair
 * authenticates and maps to a stable `basicauth:<hmac>` user id, so random pairs give distinct
 * identities. Each test file gets its own module instance, hence its own random `alice` and `bob`.
 *
 * Against a deployment without `basicauth`, the CLI passes real credentials (`--user`, or
 * accounts it created) as `QUIRE_CONFORMANCE_USERS` (JSON list of `{name, password}`): `alice`,
 * `bob` and then each `createUser()` take the next one; once they run out, `createUser()` falls
 * back to a random pair (which only authenticates with `basicauth`).
 */
import { randomUUID } from 'node:crypto';
import { basic, request } from './http.js';

export interface User {
  /** Basic Auth user name (`user-<uuid>`). */
  name: string;
  password: string;
  /** Ready-made `Authorization` header value. */
  authorization: string;
  /** Short label for messages. */
  label: string;
}

function givenCredentials(): { name: string; password: string }[] {
  const raw = process.env['QUIRE_CONFORMANCE_USERS'];
  if (!raw) return [];
  const parsed: unknown = JSON.parse(raw);
  if (!Array.isArray(parsed)) throw new Error('conformance: QUIRE_CONFORMANCE_USERS must be a JSON list');
  return parsed.map((u: { name?: unknown; password?: unknown }) => ({ name: String(u.name), password: String(u.password) }));
}

const pool = givenCredentials();
let nextGiven = 0;

/** True when the identities come from given credentials rather than random basicauth pairs. */
export function usesGivenCredentials(): boolean {
  return pool.length > 0;
}

/**
 * True when every identity is throwaway: random basicauth pairs, or accounts the CLI created
 * for this run (`QUIRE_CONFORMANCE_USERS_DISPOSABLE=1`). Only then may a check touch data that
 * belongs to the identity as a whole (its `default` bucket, `DELETE /buckets`).
 */
export function usesThrowawayIdentities(): boolean {
  return pool.length === 0 || process.env['QUIRE_CONFORMANCE_USERS_DISPOSABLE'] === '1';
}

export function createUser(label = 'user'): User {
  const given = pool[nextGiven];
  if (given) {
    nextGiven += 1;
    return { name: given.name, password: given.password, authorization: basic(given.name, given.password), label };
  }
  const name = `user-${randomUUID()}`;
  const password = `pw-${randomUUID()}`;
  return { name, password, authorization: basic(name, password), label };
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
    p = request('GET', '/', { auth: user }).then((res) => {
      const id: unknown = res.json?.user?.id;
      if (res.status !== 200 || typeof id !== 'string') {
        throw new Error(
          `conformance: GET / did not authenticate ${user.label} (status ${res.status}); ` +
            'the suite needs the basicauth policy or valid credentials (--user)',
        );
      }
      return id;
    });
    p.catch(() => ids.delete(user.authorization));
    ids.set(user.authorization, p);
  }
  return p;
}
