/**
 * Per-test fixtures with random ids. Every bucket created through here is deleted after the
 * test file (afterAll), whether its tests passed or not; a bucket delete cascades (§2).
 *
 * Rule for every suite: never grant a *bucket* permission to system.Everyone or
 * system.Authenticated. Such a bucket would show up in every user's `GET /buckets` (and be
 * deleted by anyone's `DELETE /buckets`) while other files run in parallel. Share at the
 * collection level, or with explicit user ids, instead.
 */
import { randomBytes } from 'node:crypto';
import { afterAll } from 'vitest';
import type { KintoObject, ListBody } from './bodies.js';
import { request, type HttpResponse } from './http.js';
import { drainTracked, drainTrackedAccounts, track } from './tracking.js';
import type { User } from './users.js';

/** A random id matching the id regex of §4.2: `<prefix>-<12 hex>`. */
export function randomId(prefix = 'conf'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

/** Remembers a bucket created by other means (batch, raw PUT) so that cleanup deletes it. */
export function trackBucket(id: string, user: User): void {
  track(id, user.authorization);
}

/**
 * Deletes every bucket tracked so far (http.ts tracks the ones it sees created, too), then the
 * throwaway accounts the file created (their buckets first: deleting them needs the accounts).
 */
export async function cleanup(): Promise<void> {
  await Promise.all(
    drainTracked().map(({ id, authorization }) =>
      request('DELETE', `/buckets/${encodeURIComponent(id)}`, { auth: authorization }).catch(() => undefined),
    ),
  );
  await Promise.all(
    drainTrackedAccounts().map(({ account, authorization }) =>
      request('DELETE', `/accounts/${encodeURIComponent(account)}`, { auth: authorization }).catch(() => undefined),
    ),
  );
}

try {
  afterAll(cleanup);
} catch {
  // Imported outside a vitest test file (library use): callers run cleanup() themselves.
}

function fail(what: string, res: HttpResponse): never {
  throw new Error(`fixture: ${what} failed with ${res.status}: ${res.text.slice(0, 300)}`);
}

interface CreateOptions {
  id?: string;
  data?: Record<string, unknown>;
  permissions?: Record<string, string[]>;
}

function body(id: string, o: CreateOptions): Record<string, unknown> {
  const b: Record<string, unknown> = { data: { ...(o.data ?? {}), id } };
  if (o.permissions) b.permissions = o.permissions;
  return b;
}

/** PUT a bucket with a random `conf-…` id (recorded for cleanup); returns the id. */
export async function createBucket(user: User, o: CreateOptions = {}): Promise<string> {
  const id = o.id ?? randomId();
  trackBucket(id, user);
  const res = await request('PUT', `/buckets/${id}`, { auth: user, body: body(id, o) });
  if (res.status !== 201) fail(`PUT /buckets/${id}`, res);
  return id;
}

export async function createCollection(user: User, bucket: string, o: CreateOptions = {}): Promise<string> {
  const id = o.id ?? randomId('col');
  const res = await request('PUT', `/buckets/${bucket}/collections/${id}`, { auth: user, body: body(id, o) });
  if (res.status !== 201) fail(`PUT collection ${id}`, res);
  return id;
}

export async function createGroup(user: User, bucket: string, o: CreateOptions = {}): Promise<string> {
  const id = o.id ?? randomId('grp');
  const res = await request('PUT', `/buckets/${bucket}/groups/${id}`, { auth: user, body: body(id, o) });
  if (res.status !== 201) fail(`PUT group ${id}`, res);
  return id;
}

/** POSTs a record (or PUTs it when `data.id` is given); returns the created record (`data`). */
export async function createRecord(
  user: User,
  bucket: string,
  collection: string,
  data: Record<string, unknown> = {},
  permissions?: Record<string, string[]>,
): Promise<KintoObject> {
  const payload: Record<string, unknown> = { data };
  if (permissions) payload.permissions = permissions;
  const res = await request('POST', `/buckets/${bucket}/collections/${collection}/records`, {
    auth: user,
    body: payload,
  });
  if (res.status !== 201) fail('POST record', res);
  return res.json.data;
}

export interface CollectionFixture {
  bucket: string;
  collection: string;
  /** `/buckets/<b>/collections/<c>` */
  path: string;
  /** `/buckets/<b>/collections/<c>/records` */
  records: string;
  record(id: string): string;
}

/** A fresh bucket + collection owned by `user`. */
export async function createCollectionFixture(
  user: User,
  o: { bucket?: CreateOptions; collection?: CreateOptions } = {},
): Promise<CollectionFixture> {
  const bucket = await createBucket(user, o.bucket);
  const collection = await createCollection(user, bucket, o.collection);
  const path = `/buckets/${bucket}/collections/${collection}`;
  return {
    bucket,
    collection,
    path,
    records: `${path}/records`,
    record: (id) => `${path}/records/${encodeURIComponent(id)}`,
  };
}

/** One stored record per item given: a tuple as long as a literal list of items. */
type CreatedRecords<Items extends readonly unknown[]> = { -readonly [K in keyof Items]: KintoObject };

/**
 * Creates the given records in order, one request each (so their timestamps increase in that
 * order), and returns them as stored.
 */
export async function createRecords<const Items extends readonly Record<string, unknown>[]>(
  user: User,
  fx: CollectionFixture,
  items: Items,
): Promise<CreatedRecords<Items>> {
  const out: KintoObject[] = [];
  for (const item of items) out.push(await createRecord(user, fx.bucket, fx.collection, item));
  // One per item, in their order.
  return out as CreatedRecords<Items>;
}

/** GETs a list and every Next-Page after it; returns the concatenated items and the responses. */
export async function listAll<Item = KintoObject>(
  path: string,
  user: User | null,
  headers: Record<string, string> = {},
): Promise<{ items: Item[]; pages: HttpResponse<ListBody<Item>>[] }> {
  const pages: HttpResponse<ListBody<Item>>[] = [];
  const items: Item[] = [];
  let next: string | null = path;
  while (next) {
    const res: HttpResponse<ListBody<Item>> = await request<ListBody<Item>>('GET', next, { auth: user, headers });
    if (res.status !== 200) fail(`GET ${next}`, res);
    pages.push(res);
    items.push(...res.json.data);
    next = res.headers.get('next-page');
    if (pages.length > 1000) throw new Error('fixture: too many pages');
  }
  return { items, pages };
}
