/**
 * §7.5 `_fields` partial responses (1.2, nested 1.4) on lists and single objects.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ListBody } from '../harness/bodies.js';
import { createCollectionFixture, type CollectionFixture } from '../harness/fixtures.js';
import { del, get, put } from '../harness/http.js';
import { alice } from '../harness/users.js';

let fx: CollectionFixture;
const stored: Record<string, { id: string; last_modified: number }> = {};

beforeAll(async () => {
  fx = await createCollectionFixture(alice);
  const items: [string, Record<string, unknown>][] = [
    ['r1', { title: 'First', n: 1, address: { street: 'Main', city: 'Paris', geo: { lat: 1, lon: 2 } } }],
    ['r2', { title: 'Second', n: 2, address: { city: 'Berlin' } }],
    ['r3', { n: 3 }],
  ];
  for (const [id, data] of items) {
    const res = await put(fx.record(id), { auth: alice, body: { data } });
    if (res.status !== 201) throw new Error(`seed ${id}: ${res.status}`);
    stored[id] = res.json.data;
  }
});

function lm(id: string): number {
  return (stored[id] as { last_modified: number }).last_modified;
}

describe.concurrent('§7.5 _fields on lists', () => {
  it('projects on the given field, always adding id and last_modified (wire example)', async () => {
    const res = await get<ListBody>(`${fx.records}?_fields=title&_sort=id`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual([
      { id: 'r1', title: 'First', last_modified: lm('r1') },
      { id: 'r2', title: 'Second', last_modified: lm('r2') },
      { id: 'r3', last_modified: lm('r3') },
    ]);
  });

  it('takes several comma-separated fields', async () => {
    const res = await get<ListBody>(`${fx.records}?_fields=title,n&_sort=id`, { auth: alice });
    expect(res.json.data[0]).toEqual({ id: 'r1', title: 'First', n: 1, last_modified: lm('r1') });
    expect(res.json.data[2]).toEqual({ id: 'r3', n: 3, last_modified: lm('r3') });
  });

  it('projects on nested paths, keeping the enclosing objects', async () => {
    const res = await get<ListBody>(`${fx.records}?_fields=address.city&_sort=id`, { auth: alice });
    expect(res.json.data).toEqual([
      { id: 'r1', address: { city: 'Paris' }, last_modified: lm('r1') },
      { id: 'r2', address: { city: 'Berlin' }, last_modified: lm('r2') },
      { id: 'r3', last_modified: lm('r3') },
    ]);
  });

  it('merges several nested paths of the same object', async () => {
    const res = await get<ListBody>(`${fx.records}?_fields=address.street,address.geo.lat&id=r1`, { auth: alice });
    expect(res.json.data).toEqual([
      { id: 'r1', address: { street: 'Main', geo: { lat: 1 } }, last_modified: lm('r1') },
    ]);
  });

  it('returns a whole sub-object when its parent path is given', async () => {
    const res = await get<ListBody>(`${fx.records}?_fields=address&id=r2`, { auth: alice });
    expect(res.json.data).toEqual([{ id: 'r2', address: { city: 'Berlin' }, last_modified: lm('r2') }]);
  });

  it('does not change the list ETag', async () => {
    const plain = await get(fx.records, { auth: alice });
    const partial = await get(`${fx.records}?_fields=n`, { auth: alice });
    expect(partial.headers.get('etag')).toBe(plain.headers.get('etag'));
  });
});

describe('§7.5 _fields on single objects and tombstones', () => {
  it('projects a single record', async () => {
    const res = await get(`${fx.record('r1')}?_fields=title,address.geo`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({
      id: 'r1',
      title: 'First',
      address: { geo: { lat: 1, lon: 2 } },
      last_modified: lm('r1'),
    });
  });

  it('projects buckets and collections lists too', async () => {
    const res = await get<ListBody>(`/buckets/${fx.bucket}/collections?_fields=id`, { auth: alice });
    expect(res.status).toBe(200);
    for (const item of res.json.data) expect(Object.keys(item).sort()).toEqual(['id', 'last_modified']);
  });

  it(
    'keeps id and last_modified of tombstones; deleted is kept when listed (the original drops it otherwise: ' +
      'accepted both ways)',
    async () => {
      const own = await createCollectionFixture(alice);
      await put(own.record('x'), { auth: alice, body: { data: { title: 'x' } } });
      const tomb = (await del(own.record('x'), { auth: alice })).json.data;
      const listed = await get<ListBody>(`${own.records}?_since=0&_fields=title,deleted`, { auth: alice });
      expect(listed.json.data).toEqual([{ id: 'x', last_modified: tomb.last_modified, deleted: true }]);
      const unlisted = await get<ListBody>(`${own.records}?_since=0&_fields=title`, { auth: alice });
      const item = unlisted.json.data[0]!;
      expect(item.id).toBe('x');
      expect(item.last_modified).toBe(tomb.last_modified);
      expect(item).not.toHaveProperty('title');
      if ('deleted' in item) expect(item.deleted).toBe(true);
    },
  );
});
