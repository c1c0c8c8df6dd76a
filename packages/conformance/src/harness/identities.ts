/**
 * What an identity needs before a request may use it, keyed by its `Authorization` value, so that
 * http.ts can make every identity of a request ready (the header's and those of batch
 * sub-requests) without knowing where it came from:
 *
 * - a throwaway account (`--create-accounts`): created on first use (`PUT /accounts/<id>`,
 *   journalled before, deleted after the file and at the end of the run): each test file
 *   creates exactly the accounts its checks use, however many that is;
 * - a random Basic Auth pair: usable only when the deployment offers the `basicauth`
 *   capability, else the check is skipped with the reason;
 * - a stand-in for a missing given user (`--user` gave fewer identities than a check uses):
 *   a random Basic Auth pair where `basicauth` is offered, else the check is skipped with the
 *   reason (how many identities were given).
 *
 * Kept free of http.ts (which imports it): it speaks to the server with plain fetch.
 */
import { baseUrl, writerBaseUrl } from './config.js';
import { awaitReplica } from './replica.js';
import { SkipSignal } from './skip.js';
import { trackAccount } from './tracking.js';

type Entry =
  | { kind: 'account'; name: string; password: string; authorization: string; created?: Promise<void> }
  | { kind: 'basicauth' }
  | { kind: 'stand-in'; given: number };

const entries = new Map<string, Entry>();

/** A throwaway account, created by the first request that uses `authorization`. */
export function registerThrowawayAccount(name: string, password: string, authorization: string): void {
  entries.set(authorization, { kind: 'account', name, password, authorization });
}

/** A random Basic Auth pair: needs the `basicauth` capability. */
export function registerBasicAuthPair(authorization: string): void {
  entries.set(authorization, { kind: 'basicauth' });
}

/** A random pair standing in for a user the `given` credentials did not provide. */
export function registerStandIn(authorization: string, given: number): void {
  entries.set(authorization, { kind: 'stand-in', given });
}

let basicauth: Promise<boolean> | undefined;

/** Whether `GET /` announces the `basicauth` capability (when unknown: assumed, the check then says more). */
function basicauthOffered(): Promise<boolean> {
  basicauth ??= fetch(`${baseUrl()}/`)
    .then((res) => res.json())
    .then((root: { capabilities?: Record<string, unknown> }) => Object.hasOwn(root?.capabilities ?? {}, 'basicauth'))
    .catch(() => true);
  return basicauth;
}

async function createAccount(entry: Extract<Entry, { kind: 'account' }>): Promise<void> {
  // Journalled first: a worker killed during the PUT still leaves the CLI a line to delete.
  trackAccount(entry.name, entry.authorization);
  const path = `/accounts/${encodeURIComponent(entry.name)}`;
  let res: Response;
  try {
    res = await fetch(`${writerBaseUrl() ?? baseUrl()}${path}`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ data: { password: entry.password } }),
    });
  } catch (error) {
    throw new Error(`conformance: could not create the throwaway account ${entry.name}: ${(error as Error).message}`);
  }
  const text = await res.text();
  if (res.status !== 201) {
    throw new Error(
      `conformance: could not create the throwaway account ${entry.name}: PUT /accounts/${entry.name} answered ` +
        `${res.status} ${text.slice(0, 300)}`,
    );
  }
  if (writerBaseUrl()) {
    const body = JSON.parse(text) as unknown;
    await awaitReplica([
      { method: 'PUT', path, status: res.status, body, etag: 0, authorization: entry.authorization },
    ]);
  }
}

/**
 * Makes every identity among `authorizations` usable: creates the throwaway accounts not created
 * yet, and throws a `SkipSignal` (with the reason) for an identity the deployment cannot have.
 */
export async function prepareIdentities(authorizations: Iterable<string | null | undefined>): Promise<void> {
  const waits: Promise<void>[] = [];
  for (const authorization of new Set(authorizations)) {
    if (!authorization) continue;
    const entry = entries.get(authorization);
    if (!entry) continue;
    if (entry.kind === 'account') {
      if (!entry.created) {
        if (process.env.QUIRE_CONFORMANCE_READ_ONLY === '1')
          throw new SkipSignal('read-only mode: this check needs a throwaway account, whose creation writes');
        entry.created = createAccount(entry);
        // A failed creation is retried by the next request that needs the account.
        entry.created.catch(() => {
          entry.created = undefined;
        });
      }
      waits.push(entry.created);
    } else if (!(await basicauthOffered())) {
      throw new SkipSignal(
        entry.kind === 'stand-in'
          ? `needs more identities than the ${entry.given} given (--user): give more, or use --create-accounts`
          : 'needs identities: the deployment offers no basicauth capability (give --user twice or more, ' +
              'or --create-accounts)',
      );
    }
  }
  await Promise.all(waits);
}
