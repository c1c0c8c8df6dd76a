/**
 * protocol-reference §13.6: the quotas plugin's wire behaviour — a write that takes a bucket or a
 * collection past its number of objects or bytes gets 507 errno 121 with the original's
 * message, changes nothing (a batch is refused whole), and deleting objects gives their room
 * back (the counters follow deletes of records, collections and buckets).
 *
 * Needs the capability `quotas` and the limits of one bucket, which `GET /` does not tell:
 * `--quotas '<json>'` (or QUIRE_CONFORMANCE_QUOTAS), e.g.
 * `{"bucket":"conformance-quotas","bucket_max_items":4,"bucket_max_bytes":2500,`
 * `"max_bytes_per_item":1024,"collection_max_items":2}` (one line)
 * for a deployment configured with Kinto's `quotas.bucket_<bid>_max_items = 4`,
 * `quotas.bucket_<bid>_max_bytes = 2500`, `quotas.bucket_<bid>_max_bytes_per_item = 1024` and
 * `quotas.collection_<bid>_max_items = 2` (Quire: `quotas_buckets` / `quotas_collections`).
 * Each check runs when the limits it needs are given; the bucket is created and deleted by each.
 * Kinto removed the plugin in version 20: against 26.x the section is skipped (no capability).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { BatchBody, ListBody } from '../harness/bodies.js';
import { applicable, serverInfo } from '../harness/capabilities.js';
import { trackBucket } from '../harness/fixtures.js';
import { del, get, head, post, put } from '../harness/http.js';
import { expectApiError } from '../harness/matchers.js';
import { alice } from '../harness/users.js';

interface QuotaLimits {
  bucket: string;
  bucket_max_items?: number;
  bucket_max_bytes?: number;
  max_bytes_per_item?: number;
  collection_max_items?: number;
}

function readLimits(): QuotaLimits | null {
  const raw = process.env.QUIRE_CONFORMANCE_QUOTAS;
  if (!raw) return null;
  const parsed = JSON.parse(raw) as QuotaLimits;
  if (typeof parsed.bucket !== 'string' || !/^[a-zA-Z0-9][a-zA-Z0-9_-]*$/.test(parsed.bucket))
    throw new Error('conformance: QUIRE_CONFORMANCE_QUOTAS needs "bucket", a bucket id');
  return parsed;
}

const info = await serverInfo();
const offered = applicable(info.hasCapability('quotas'), 'quotas (§13.6)', 'capability quotas not offered');
const limits = offered ? readLimits() : null;
const configured =
  offered &&
  applicable(
    limits !== null,
    'quotas (§13.6) limits',
    'the limits are not given (--quotas / QUIRE_CONFORMANCE_QUOTAS)',
  );
const INSUFFICIENT = { error: 'Insufficient Storage' };
/** Whether the limit a check needs is given (a check that cannot run says why). */
const given = (name: Exclude<keyof QuotaLimits, 'bucket'>) =>
  configured && applicable(limits?.[name] !== undefined, `quotas (§13.6) ${name}`, `${name} not given in --quotas`);

const bucket = limits?.bucket ?? '';
const collectionPath = (collection: string) => `/buckets/${bucket}/collections/${collection}`;
const recordPath = (collection: string, id: string) => `${collectionPath(collection)}/records/${id}`;
const writeRecord = (collection: string, id: string, data: Record<string, unknown> = {}) =>
  put(recordPath(collection, id), { auth: alice, body: { data } });

async function created(collection: string, id: string, data: Record<string, unknown> = {}): Promise<void> {
  const res = await writeRecord(collection, id, data);
  expect(res.status, `PUT ${recordPath(collection, id)}: ${res.text.slice(0, 300)}`).toBe(201);
}

async function recordCount(collection: string): Promise<number> {
  const res = await head(`${collectionPath(collection)}/records`, { auth: alice });
  return Number(res.headers.get('total-objects') ?? res.headers.get('total-records'));
}

/** A fresh bucket with the configured limits, and collections `names` in it. */
async function freshBucket(...names: string[]): Promise<void> {
  await del(`/buckets/${bucket}`, { auth: alice });
  const res = await put(`/buckets/${bucket}`, { auth: alice, body: { data: {} } });
  expect(res.status, `PUT /buckets/${bucket}: ${res.text.slice(0, 300)} (is this bucket someone else's?)`).toBe(201);
  trackBucket(bucket, alice);
  for (const name of names)
    expect((await put(collectionPath(name), { auth: alice, body: { data: {} } })).status).toBe(201);
}

describe.runIf(offered)('§13.6 quotas: capability', () => {
  it('§11.1 capability `quotas` has a description and a url', () => {
    expect(info.capabilities.quotas).toMatchObject({ description: expect.any(String), url: expect.any(String) });
  });
});

describe.runIf(configured)('§13.6 quotas: limits', () => {
  beforeEach(() => freshBucket('c1', 'c2', 'c3'));

  it.runIf(given('collection_max_items'))(
    'a collection past its number of objects: 507 errno 121, nothing stored; a delete frees a place',
    async () => {
      const max = limits!.collection_max_items!;
      for (let i = 0; i < max; i++) await created('c1', `r${i}`);
      const refused = await writeRecord('c1', 'over');
      expectApiError(refused, 507, 121, {
        ...INSUFFICIENT,
        message: `Collection maximum number of objects exceeded (${max + 1} > ${max} objects).`,
      });
      expect((await get(recordPath('c1', 'over'), { auth: alice })).status).toBe(404);
      expect(await recordCount('c1')).toBe(max);
      // An update is no new object; a deletion frees its place; a plural DELETE frees them all.
      expect((await writeRecord('c1', 'r0', { updated: true })).status).toBe(200);
      expect((await del(recordPath('c1', 'r0'), { auth: alice })).status).toBe(200);
      await created('c1', 'again');
      expect((await del(`${collectionPath('c1')}/records`, { auth: alice })).status).toBe(200);
      for (let i = 0; i < max; i++) await created('c1', `after${i}`);
      expectApiError(await writeRecord('c1', 'over'), 507, 121, INSUFFICIENT);
    },
  );

  it.runIf(given('bucket_max_items'))(
    'a bucket past its number of records: 507 errno 121; deleting a collection gives its records back',
    async () => {
      const max = limits!.bucket_max_items!;
      const perCollection = limits!.collection_max_items ?? max;
      const names = ['c1', 'c2', 'c3'];
      const where: string[] = [];
      if (max > 2 * perCollection)
        throw new Error('conformance: --quotas: bucket_max_items must fit in two collections of collection_max_items');
      for (let i = 0; i < max; i++) {
        const collection = names[Math.floor(i / perCollection)]!;
        await created(collection, `r${i}`);
        where.push(collection);
      }
      const target = names.find((name) => where.filter((c) => c === name).length < perCollection) ?? 'c3';
      const refused = await writeRecord(target, 'over');
      expectApiError(refused, 507, 121, {
        ...INSUFFICIENT,
        message: `Bucket maximum number of objects exceeded (${max + 1} > ${max} objects).`,
      });
      expect((await del(collectionPath(where[0]!), { auth: alice })).status).toBe(200);
      await created(target, 'over');
    },
  );

  it.runIf(given('max_bytes_per_item'))('an object past the bytes per object: 507 errno 121', async () => {
    const max = limits!.max_bytes_per_item!;
    const refused = await writeRecord('c1', 'big', { text: 'x'.repeat(max) });
    const body = expectApiError(refused, 507, 121, INSUFFICIENT);
    // The original's message, its missing parenthesis included.
    expect(body.message).toMatch(new RegExp(`^Maximum bytes per object exceeded \\(\\d+ > ${max} Bytes\\.$`));
    await created('c1', 'small', { text: 'x'.repeat(Math.floor(max / 4)) });
  });

  it.runIf(given('bucket_max_bytes'))(
    'a bucket past its total bytes: 507 errno 121; a delete gives the bytes back',
    async () => {
      const max = limits!.bucket_max_bytes!;
      const perItem = limits!.max_bytes_per_item ?? max;
      const itemCap = limits!.collection_max_items ?? Number.POSITIVE_INFINITY;
      // Records of about a third of the bytes (under the per-object limit), spread so that no
      // count limit is reached first.
      const text = 'x'.repeat(Math.min(Math.floor(max / 3), perItem - 100));
      const names = ['c1', 'c2', 'c3'];
      let stored = 0;
      let refused: Awaited<ReturnType<typeof writeRecord>> | undefined;
      for (let i = 0; i < 9 && !refused; i++) {
        const res = await writeRecord(names[Math.floor(i / Math.min(itemCap, 3))] ?? 'c3', `r${i}`, { text });
        if (res.status === 201) stored++;
        else refused = res;
      }
      expect(refused, 'the bucket never ran out of bytes').toBeDefined();
      const body = expectApiError(refused!, 507, 121, INSUFFICIENT);
      expect(body.message).toMatch(new RegExp(`^Bucket maximum total size exceeded \\(\\d+ > ${max} Bytes\\)\\. ?$`));
      expect(stored).toBeGreaterThan(0);
      expect((await del(recordPath('c1', 'r0'), { auth: alice })).status).toBe(200);
      await created('c1', 'back', { text: 'x'.repeat(10) });
    },
  );

  it.runIf(given('collection_max_items'))('a batch that would pass a limit is refused whole', async () => {
    const max = limits!.collection_max_items!;
    const requests = Array.from({ length: max + 1 }, (_, i) => ({
      method: 'PUT',
      path: recordPath('c1', `b${i}`),
      body: { data: { i } },
    }));
    const res = await post<BatchBody>('/batch', { auth: alice, body: { requests } });
    // A 507 inside a batch fails the whole batch (like a 5xx), not one sub-response.
    expect(res.status).toBe(507);
    expect(await recordCount('c1')).toBe(0);
    const ok = await post<BatchBody>('/batch', { auth: alice, body: { requests: requests.slice(0, max) } });
    expect(ok.status).toBe(200);
    expect(ok.json.responses.map((response) => response.status)).toEqual(requests.slice(0, max).map(() => 201));
    const listed = await get<ListBody>(`${collectionPath('c1')}/records`, { auth: alice });
    expect(listed.json.data).toHaveLength(max);
  });
});
