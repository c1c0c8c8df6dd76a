/**
 * Identities. The suite relies on the `basicauth` policy: any `user:password` pair authenticates
 * and maps to a stable `basicauth:<hmac>` user id, so random pairs give distinct identities.
 * Each test file gets its own module instance, hence its own random `alice` and `bob`.
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

export function createUser(label = 'user'): User {
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
            'the suite needs the basicauth policy',
        );
      }
      return id;
    });
    p.catch(() => ids.delete(user.authorization));
    ids.set(user.authorization, p);
  }
  return p;
}
