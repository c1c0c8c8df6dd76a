/**
 * §7.4 sorting: directions, multiple fields, nested paths, default order, the -last_modified
 * tie-breaker, missing fields and the JSON type rank.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ListBody } from '../harness/bodies.js';
import {
  createBucket,
  createCollection,
  createCollectionFixture,
  type CollectionFixture,
} from '../harness/fixtures.js';
import { get, put } from '../harness/http.js';
import { alice } from '../harness/users.js';

// Created in this order, so last_modified increases from p1 to p6.
const DATASET: [string, Record<string, unknown>][] = [
  ['p1', { g: 'x', n: 3, person: { age: 30 }, v: 'b', b: true }],
  ['p2', { g: 'y', n: 1, person: { age: 20 }, v: 2, b: false }],
  ['p3', { g: 'x', n: 2, v: null }],
  ['p4', { g: 'y', n: 5, person: { age: 40 }, v: [1], b: true }],
  ['p5', { n: 4, person: { age: 10 }, v: {} }],
  ['p6', { g: 'x', n: 0, v: 'a', b: false }],
];

let fx: CollectionFixture;

beforeAll(async () => {
  fx = await createCollectionFixture(alice);
  for (const [id, data] of DATASET) {
    const res = await put(fx.record(id), { auth: alice, body: { data } });
    if (res.status !== 201) throw new Error(`seed ${id}: ${res.status} ${res.text}`);
  }
});

async function order(query: string): Promise<string[]> {
  const res = await get<ListBody>(`${fx.records}${query}`, { auth: alice });
  expect(res.status, `${query}: ${res.text}`).toBe(200);
  return res.json.data.map((r) => r.id);
}

describe.concurrent('§7.4 sorting', () => {
  it('defaults to -last_modified (1.4)', async () => {
    expect(await order('')).toEqual(['p6', 'p5', 'p4', 'p3', 'p2', 'p1']);
  });

  it('sorts ascending by a field, with or without +', async () => {
    expect(await order('?_sort=n')).toEqual(['p6', 'p2', 'p3', 'p1', 'p5', 'p4']);
    expect(await order('?_sort=%2Bn')).toEqual(['p6', 'p2', 'p3', 'p1', 'p5', 'p4']);
  });

  it('sorts descending with -', async () => {
    expect(await order('?_sort=-n')).toEqual(['p4', 'p5', 'p1', 'p3', 'p2', 'p6']);
  });

  it('sorts by several fields', async () => {
    expect(await order('?_sort=g,-n')).toEqual(['p1', 'p3', 'p6', 'p4', 'p2', 'p5']);
    expect(await order('?_sort=-g,n')).toEqual(['p5', 'p2', 'p4', 'p6', 'p3', 'p1']);
  });

  it('breaks ties with -last_modified', async () => {
    expect(await order('?_sort=g')).toEqual(['p6', 'p3', 'p1', 'p4', 'p2', 'p5']);
  });

  it('sorts by last_modified and id explicitly', async () => {
    expect(await order('?_sort=last_modified')).toEqual(['p1', 'p2', 'p3', 'p4', 'p5', 'p6']);
    expect(await order('?_sort=id')).toEqual(['p1', 'p2', 'p3', 'p4', 'p5', 'p6']);
    expect(await order('?_sort=-id')).toEqual(['p6', 'p5', 'p4', 'p3', 'p2', 'p1']);
  });

  it('sorts by nested paths (1.9); missing fields last ascending, first descending', async () => {
    expect(await order('?_sort=person.age')).toEqual(['p5', 'p2', 'p1', 'p4', 'p6', 'p3']);
    expect(await order('?_sort=-person.age')).toEqual(['p6', 'p3', 'p4', 'p1', 'p2', 'p5']);
  });

  it('orders mixed types by rank null < string < number < boolean < array < object', async () => {
    expect(await order('?_sort=v')).toEqual(['p3', 'p6', 'p1', 'p2', 'p4', 'p5']);
    expect(await order('?_sort=-v')).toEqual(['p5', 'p4', 'p2', 'p1', 'p6', 'p3']);
  });

  it('puts false before true ascending (DOC≠CODE: docs say true first)', async () => {
    expect(await order('?_sort=b')).toEqual(['p6', 'p2', 'p4', 'p1', 'p5', 'p3']);
  });

  it('silently drops entries that are not [-+]?[\\w.]+', async () => {
    expect(await order('?_sort=n,$bad')).toEqual(['p6', 'p2', 'p3', 'p1', 'p5', 'p4']);
    expect(await order('?_sort=')).toEqual(['p6', 'p5', 'p4', 'p3', 'p2', 'p1']);
  });

  it('combines with filters', async () => {
    expect(await order('?g=x&_sort=n')).toEqual(['p6', 'p3', 'p1']);
  });
});

describe('§7.4 sorting other plural endpoints', () => {
  it('sorts collections by id and by an attribute', async () => {
    const bucket = await createBucket(alice);
    await createCollection(alice, bucket, { id: 'b', data: { rank: 1 } });
    await createCollection(alice, bucket, { id: 'c', data: { rank: 3 } });
    await createCollection(alice, bucket, { id: 'a', data: { rank: 2 } });
    const byId = await get<ListBody>(`/buckets/${bucket}/collections?_sort=id`, { auth: alice });
    expect(byId.json.data.map((c) => c.id)).toEqual(['a', 'b', 'c']);
    const byRank = await get<ListBody>(`/buckets/${bucket}/collections?_sort=-rank`, { auth: alice });
    expect(byRank.json.data.map((c) => c.id)).toEqual(['c', 'a', 'b']);
  });
});
