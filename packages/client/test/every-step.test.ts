/**
 * Interruption at every step of a sync. A sync that pulls several pages, pushes several batches,
 * pulls again and checks permissions is cut at its k-th request, for every k — either before the
 * request reaches the server, or after the server processed it but before its response arrived
 * (the worst case: the server committed a batch we never heard about). A clean sync afterwards
 * must converge with nothing lost and nothing duplicated.
 */
import { describe, expect, inject, it } from 'vitest';
import { type FetchLike, NetworkError } from '../src/index.js';
import { createCollection, makeClient, raw, seed, uniqueName } from './support/server.js';

const url = inject('quireUrl');

type Item = { n: number; by?: string };

/** Sets up a synced replica with pending local changes and concurrent server changes. */
async function scenario(fetchFn: FetchLike) {
  const bucket = uniqueName('s');
  await createCollection(url, bucket, 'items');
  await seed(url, bucket, 'items', 45, (i) => ({ id: `r${String(i).padStart(2, '0')}`, n: i }));
  const client = makeClient(url, { fetch: fetchFn });
  const items = client.bucket(bucket).collection<Item>('items', { pageSize: 20, strategy: 'server-wins' });
  await items.sync();
  // Another writer: updates r00-r09, creates s0-s4.
  const requests = [];
  for (let i = 0; i < 10; i++)
    requests.push({
      method: 'PATCH',
      path: `/buckets/${bucket}/collections/items/records/r0${i}`,
      body: { data: { by: 'server' } },
    });
  for (let i = 0; i < 5; i++)
    requests.push({
      method: 'PUT',
      path: `/buckets/${bucket}/collections/items/records/s${i}`,
      body: { data: { n: 100 + i } },
    });
  await raw(url, 'POST', '/batch', { requests });
  // This replica: creates l0-l19, updates r20-r29, deletes r40-r44.
  for (let i = 0; i < 20; i++) await items.create({ id: `l${i}`, n: 200 + i });
  for (let i = 20; i < 30; i++) await items.update(`r${i}`, { n: i, by: 'local' });
  for (let i = 40; i < 45; i++) await items.delete(`r${i}`);
  return { bucket, client, items };
}

async function verify(
  bucket: string,
  items: { list(): Promise<Record<string, unknown>[]>; pending(): Promise<number> },
) {
  const remote = (await raw(url, 'GET', `/buckets/${bucket}/collections/items/records?_sort=id&_limit=1000`)).body
    .data as Record<string, unknown>[];
  const local = (await items.list()).sort((a, b) => String(a.id).localeCompare(String(b.id)));
  expect(local).toEqual(remote);
  expect(remote).toHaveLength(45 + 5 + 20 - 5);
  const byId = new Map(remote.map((record) => [record.id, record]));
  for (let i = 0; i < 10; i++) expect(byId.get(`r0${i}`)?.by).toBe('server');
  for (let i = 20; i < 30; i++) expect(byId.get(`r${i}`)?.by).toBe('local');
  for (let i = 0; i < 20; i++) expect(byId.get(`l${i}`)?.n).toBe(200 + i);
  for (let i = 40; i < 45; i++) expect(byId.has(`r${i}`)).toBe(false);
  expect(await items.pending()).toBe(0);
}

describe('a sync interrupted at any request resumes without loss or duplicates', async () => {
  // Count the requests of an uninterrupted run of the same scenario.
  let steps = 0;
  let counting = false;
  const counter: FetchLike = (input, init) => {
    if (counting) steps++;
    return fetch(input, init);
  };
  const probe = await scenario(counter);
  counting = true;
  const clean = await probe.items.sync();
  counting = false;

  it('the uninterrupted run converges and spans pulls, batches and checks', async () => {
    expect(clean).toMatchObject({ ok: true, pushed: 35 });
    await verify(probe.bucket, probe.items);
    expect(steps).toBeGreaterThanOrEqual(8);
    await probe.client.close();
  });

  for (const when of ['before the server', 'after the server'] as const) {
    for (let step = 1; step <= steps; step++) {
      it(`request ${step} of ${steps} cut ${when}`, async () => {
        let armed = false;
        let seen = 0;
        let cut = '';
        const faulty: FetchLike = async (input, init) => {
          if (armed && ++seen === step) {
            armed = false;
            cut = `${init.method} ${new URL(input).pathname}`;
            if (when === 'after the server') await (await fetch(input, init)).arrayBuffer();
            throw new TypeError('connection reset');
          }
          return fetch(input, init);
        };
        const { bucket, client, items } = await scenario(faulty);
        armed = true;
        const error = await items.sync().then(
          () => null,
          (e: unknown) => e,
        );
        expect(cut).not.toBe('');
        // Only the progress count (a HEAD) is best-effort: losing it does not fail the sync.
        if (error === null) expect(cut).toMatch(/^HEAD /);
        else expect(error).toBeInstanceOf(NetworkError);
        const result = await items.sync();
        expect(result.errors).toEqual([]);
        await verify(bucket, items);
        await client.close();
      });
    }
  }
});
