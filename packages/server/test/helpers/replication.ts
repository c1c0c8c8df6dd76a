/**
 * What the tests of readers on a hot standby share: a private primary and its streaming standby
 * for the file (made before its tests, removed after; `reason` says why not where they cannot
 * start), and a JSON call that reads the ETag as a number.
 */
import { afterAll, beforeAll } from 'vitest';
import { type PrivatePostgres, startPrivatePostgres } from './private-postgres.js';

export interface Replication {
  readonly primary: PrivatePostgres;
  readonly standby: PrivatePostgres;
  /** Why they did not start (the tests skip with it), or undefined. */
  readonly reason: string | undefined;
}

export function useReplication(file: string): Replication {
  let primary: PrivatePostgres | undefined;
  let standby: PrivatePostgres | undefined;
  let reason: string | undefined;
  beforeAll(async () => {
    const started = await startPrivatePostgres(file);
    if (typeof started === 'string') {
      reason = started;
      return;
    }
    primary = started;
    const replica = await primary.standby();
    if (typeof replica === 'string') reason = replica;
    else standby = replica;
  }, 180_000);
  afterAll(async () => {
    await standby?.destroy();
    await primary?.destroy();
  });
  return {
    get primary() {
      return primary!;
    },
    get standby() {
      return standby!;
    },
    get reason() {
      return reason;
    },
  };
}

export interface Change {
  id: string;
  last_modified: number;
  deleted?: boolean;
}

/** `method path` on a server's API (`base` ends in `/v1/`): status, ETag as a number, body. */
export async function callApi(
  base: string,
  auth: Record<string, string>,
  method: string,
  path: string,
  body?: unknown,
) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...auth, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    etag: Number((response.headers.get('etag') ?? '0').replaceAll('"', '')),
    body: (text ? JSON.parse(text) : {}) as { data: Change & Change[] },
  };
}
