/**
 * §7.6 page size and §7.7 Next-Page / `_token` (keyset pagination), including plural DELETE.
 */
import { describe, expect, it } from 'vitest';
import type { ListBody } from '../harness/bodies.js';
import { createBucket, createCollectionFixture, createRecords, listAll } from '../harness/fixtures.js';
import { del, get, post, put } from '../harness/http.js';
import { expectETag, expectValidationError } from '../harness/matchers.js';
import { alice, createUser } from '../harness/users.js';

/** What the `_token` of a Next-Page URL holds (§7.7). */
interface PageToken {
  last_object: Record<string, unknown>;
  offset: number;
  nonce: string;
}

function decodeToken(nextPage: string): PageToken {
  const token = new URL(nextPage).searchParams.get('_token');
  expect(token).not.toBeNull();
  expect(token).toMatch(/^[A-Za-z0-9+/]+=*$/);
  return JSON.parse(Buffer.from(token as string, 'base64').toString('utf8'));
}

function idsOf(items: { id: string }[]): string[] {
  return items.map((r) => r.id);
}

describe('§7.7 Next-Page', () => {
  it('pages through with _limit; Next-Page is absolute; the last page has none (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    const recs = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }]);
    const first = await get<ListBody>(`${fx.records}?_limit=2`, { auth: alice });
    expect(first.status).toBe(200);
    expect(first.json.data).toEqual([recs[4], recs[3]]);
    const next = first.headers.get('next-page');
    expect(next).toMatch(/^https?:\/\//);
    const nextUrl = new URL(next as string);
    expect(nextUrl.pathname).toBe(`/v1${fx.records}`);
    expect(nextUrl.searchParams.get('_limit')).toBe('2');
    const second = await get<ListBody>(next as string, { auth: alice });
    expect(second.json.data).toEqual([recs[2], recs[1]]);
    const third = await get<ListBody>(second.headers.get('next-page') as string, { auth: alice });
    expect(third.json.data).toEqual([recs[0]]);
    expect(third.headers.get('next-page')).toBeNull();
  });

  it('sends no Next-Page when the last page is exactly full', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{}, {}, {}, {}]);
    const first = await get(`${fx.records}?_limit=2`, { auth: alice });
    const second = await get<ListBody>(first.headers.get('next-page') as string, { auth: alice });
    expect(second.json.data).toHaveLength(2);
    expect(second.headers.get('next-page')).toBeNull();
    const whole = await get<ListBody>(`${fx.records}?_limit=4`, { auth: alice });
    expect(whole.json.data).toHaveLength(4);
    expect(whole.headers.get('next-page')).toBeNull();
  });

  it('sends no Next-Page when _limit exceeds the count', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{}, {}]);
    const res = await get<ListBody>(`${fx.records}?_limit=10`, { auth: alice });
    expect(res.json.data).toHaveLength(2);
    expect(res.headers.get('next-page')).toBeNull();
  });

  it('keeps every original parameter in Next-Page (filters, _since, _sort, _fields, unknown _params)', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    const res = await get(`${fx.records}?gt_n=0&_sort=n&_fields=n&_since=0&_expected=42&_limit=2`, { auth: alice });
    const next = new URL(res.headers.get('next-page') as string);
    expect(next.searchParams.get('gt_n')).toBe('0');
    expect(next.searchParams.get('_sort')).toBe('n');
    expect(next.searchParams.get('_fields')).toBe('n');
    expect(next.searchParams.get('_since')).toBe('0');
    expect(next.searchParams.get('_expected')).toBe('42');
    expect(next.searchParams.get('_limit')).toBe('2');
    expect(next.searchParams.get('_token')).toBeTruthy();
    const page2 = await get<ListBody>(next.toString(), { auth: alice });
    expect(page2.json.data.map((r) => r.n)).toEqual([3, 4]);
    for (const item of page2.json.data) expect(Object.keys(item).sort()).toEqual(['id', 'last_modified', 'n']);
  });

  it('keeps the same list ETag on every page', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{}, {}, {}]);
    const { pages } = await listAll(`${fx.records}?_limit=1`, alice);
    expect(pages).toHaveLength(3);
    const etags = pages.map((p) => expectETag(p));
    expect(new Set(etags).size).toBe(1);
  });

  it('follows ascending and multi-field sorts with duplicate values without gaps or repeats', async () => {
    const fx = await createCollectionFixture(alice);
    const data = [
      { g: 1, n: 5 },
      { g: 2, n: 1 },
      { g: 1, n: 3 },
      { g: 2, n: 4 },
      { g: 1, n: 2 },
      { g: 3 },
      { g: 1, n: 3 },
    ];
    const recs = await createRecords(alice, fx, data);
    const { items: all } = await listAll(`${fx.records}?_sort=g,-n`, alice);
    for (const limit of [1, 2, 3]) {
      const { items } = await listAll(`${fx.records}?_sort=g,-n&_limit=${limit}`, alice);
      expect(idsOf(items), `limit ${limit}`).toEqual(idsOf(all));
    }
    expect(new Set(idsOf(all)).size).toBe(recs.length);
    const { items: byG } = await listAll(`${fx.records}?_sort=g&_limit=2`, alice);
    expect(new Set(idsOf(byG)).size).toBe(recs.length);
  });

  it('pages through tombstones with _since', async () => {
    const fx = await createCollectionFixture(alice);
    const recs = await createRecords(alice, fx, [{}, {}, {}, {}]);
    await del(fx.record(recs[1].id), { auth: alice });
    await del(fx.record(recs[2].id), { auth: alice });
    const { items } = await listAll(`${fx.records}?_since=0&_limit=1`, alice);
    expect(items).toHaveLength(4);
    expect(items.filter((i) => i.deleted === true)).toHaveLength(2);
  });

  it('paginates bucket lists too', async () => {
    const user = createUser();
    await createBucket(user);
    await createBucket(user);
    const res = await get<ListBody>('/buckets?_limit=1', { auth: user });
    expect(res.json.data).toHaveLength(1);
    expect(res.headers.get('next-page')).toMatch(/\/v1\/buckets\?/);
  });
});

describe('§7.7 _token', () => {
  it('is standard base64 of JSON {last_object, offset, nonce} with the sort fields of the last item', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const def = await get<ListBody>(`${fx.records}?_limit=2`, { auth: alice });
    const t1 = decodeToken(def.headers.get('next-page') as string);
    expect(t1.last_object).toEqual({ last_modified: def.json.data[1]!.last_modified });
    expect(Number.isInteger(t1.offset)).toBe(true);
    expect(t1.nonce).toMatch(/^pagination-token-[0-9a-f-]{36}$/);
    const sorted = await get<ListBody>(`${fx.records}?_limit=2&_sort=n`, { auth: alice });
    const t2 = decodeToken(sorted.headers.get('next-page') as string);
    expect(t2.last_object).toEqual({ n: 2, last_modified: sorted.json.data[1]!.last_modified });
  });

  it('leaves out of last_object the sort fields missing from the last item', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{ n: 1 }, {}, {}]);
    const res = await get<ListBody>(`${fx.records}?_limit=1&_sort=-n`, { auth: alice });
    // Missing fields come first in descending order: the first item has no n.
    expect(res.json.data[0]).not.toHaveProperty('n');
    const token = decodeToken(res.headers.get('next-page') as string);
    expect(Object.keys(token.last_object)).toEqual(['last_modified']);
  });

  it('GET tokens are reusable', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{}, {}, {}]);
    const first = await get(`${fx.records}?_limit=1`, { auth: alice });
    const next = first.headers.get('next-page') as string;
    const a = await get(next, { auth: alice });
    const b = await get(next, { auth: alice });
    expect(a.status).toBe(200);
    expect(b.json.data).toEqual(a.json.data);
  });

  it('answers 400 "_token has invalid content" to a malformed token (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    const res = await get(`${fx.records}?_token=abc`, { auth: alice });
    const body = expectValidationError(
      res,
      { location: 'querystring', name: null, description: '_token has invalid content' },
      400,
      'querystring: _token has invalid content',
    );
    expect(body.details).toHaveLength(1);
  });

  it('answers 400 to tokens that decode to something other than the expected object', async () => {
    const fx = await createCollectionFixture(alice);
    const b64 = (v: string) => encodeURIComponent(Buffer.from(v).toString('base64'));
    for (const raw of [
      'not json',
      '[1,2]',
      '"str"',
      '{}',
      '{"last_object": 1, "offset": 1, "nonce": "x"}',
      '{"offset": 1, "nonce": "x"}',
    ]) {
      const res = await get(`${fx.records}?_token=${b64(raw)}`, { auth: alice });
      expectValidationError(res, { location: 'querystring', description: '_token has invalid content' });
    }
  });
});

describe('§7.6 _limit', () => {
  it('answers 400 to a non-numeric or negative _limit (wire example for abc)', async () => {
    const fx = await createCollectionFixture(alice);
    const abc = await get(`${fx.records}?_limit=abc`, { auth: alice });
    expectValidationError(abc, { location: 'querystring', name: '_limit' }, 400);
    const negative = await get(`${fx.records}?_limit=-1`, { auth: alice });
    expectValidationError(negative, { location: 'querystring', name: '_limit' });
  });

  it(
    'refuses a fractional or null _limit (400), or reads it as its integer part / as absent (the original does): ' +
      'both accepted',
    async () => {
      // §7.6 wants an integer. The original parses the value as JSON, then truncates a number
      // (1.5 → 1, 1e2 → 100) and reads null as "no _limit": lenient, harmless, allowed. A server
      // that accepts such a value must page by its integer part, or not at all.
      const fx = await createCollectionFixture(alice);
      await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }]);
      for (const [value, pageSize] of [
        ['1.5', 1],
        ['1e2', 3],
        ['null', 3],
      ] as const) {
        const res = await get(`${fx.records}?_limit=${value}`, { auth: alice });
        if (res.status === 400) {
          expectValidationError(res, { location: 'querystring', name: '_limit' });
          continue;
        }
        expect(res.status, `_limit=${value}: ${res.text.slice(0, 300)}`).toBe(200);
        expect(res.json.data, `_limit=${value}`).toHaveLength(pageSize);
        expect(res.headers.get('next-page') !== null, `_limit=${value}: Next-Page`).toBe(pageSize < 3);
      }
    },
  );

  it('treats _limit=0 as no limit given', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{}, {}, {}]);
    const res = await get<ListBody>(`${fx.records}?_limit=0`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data).toHaveLength(3);
    expect(res.headers.get('next-page')).toBeNull();
  });
});

describe('§7.7 keyset continuation', () => {
  it('is stable under concurrent inserts: later pages of a -last_modified scan do not show new items', async () => {
    const fx = await createCollectionFixture(alice);
    const recs = await createRecords(alice, fx, [{ i: 0 }, { i: 1 }, { i: 2 }, { i: 3 }, { i: 4 }]);
    const first = await get<ListBody>(`${fx.records}?_limit=2`, { auth: alice });
    const inserted = await post(fx.records, { auth: alice, body: { data: { i: 'new' } } });
    expect(inserted.status).toBe(201);
    const seen = [...first.json.data];
    let next = first.headers.get('next-page');
    while (next) {
      const page = await get<ListBody>(next, { auth: alice });
      seen.push(...page.json.data);
      next = page.headers.get('next-page');
    }
    expect(idsOf(seen).sort()).toEqual(idsOf(recs).sort());
  });

  it('does not repeat or skip an item updated between pages of an ascending sort on another field', async () => {
    const fx = await createCollectionFixture(alice);
    const recs = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    const first = await get<ListBody>(`${fx.records}?_limit=2&_sort=n`, { auth: alice });
    expect(first.json.data.map((r) => r.n)).toEqual([1, 2]);
    // Touch an already-seen item: its last_modified becomes the newest, its n is unchanged.
    expect((await put(fx.record(recs[0].id), { auth: alice, body: { data: { n: 1, touched: true } } })).status).toBe(
      200,
    );
    const rest = await listAll(first.headers.get('next-page') as string, alice);
    expect(rest.items.map((r) => r.n)).toEqual([3, 4]);
  });
});

describe('§7.7 plural DELETE pagination', () => {
  it('deletes one page at a time with Next-Page; its token is single-use', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{}, {}, {}, {}, {}]);
    const first = await del<ListBody>(`${fx.records}?_limit=2`, { auth: alice });
    expect(first.status).toBe(200);
    expect(first.json.data).toHaveLength(2);
    const next = first.headers.get('next-page');
    expect(next).toMatch(/^https?:\/\//);
    expect((await get<ListBody>(fx.records, { auth: alice })).json.data).toHaveLength(3);
    const second = await del<ListBody>(next as string, { auth: alice });
    expect(second.status).toBe(200);
    expect(second.json.data).toHaveLength(2);
    const reused = await del(next as string, { auth: alice });
    expectValidationError(reused, { location: 'querystring', description: '_token was already used or has expired.' });
    const third = await del<ListBody>(second.headers.get('next-page') as string, { auth: alice });
    expect(third.json.data).toHaveLength(1);
    expect(third.headers.get('next-page')).toBeNull();
    expect((await get<ListBody>(fx.records, { auth: alice })).json.data).toEqual([]);
  });

  it('honours filters and _sort when paginating a DELETE', async () => {
    const fx = await createCollectionFixture(alice);
    const recs = await createRecords(alice, fx, [
      { n: 1, k: 'x' },
      { n: 2, k: 'x' },
      { n: 3, k: 'y' },
      { n: 4, k: 'x' },
    ]);
    const res = await del<ListBody>(`${fx.records}?k=x&_sort=n&_limit=2`, { auth: alice });
    expect(res.json.data.map((t) => t.id)).toEqual([recs[0].id, recs[1].id]);
    const rest = await del<ListBody>(res.headers.get('next-page') as string, { auth: alice });
    expect(rest.json.data.map((t) => t.id)).toEqual([recs[3].id]);
    const left = await get<ListBody>(fx.records, { auth: alice });
    expect(idsOf(left.json.data)).toEqual([recs[2].id]);
  });
});

describe('§7.7 pagination with put-created ids', () => {
  it('sorts and pages by id', async () => {
    const fx = await createCollectionFixture(alice);
    for (const id of ['e', 'a', 'd', 'b', 'c']) await put(fx.record(id), { auth: alice, body: { data: {} } });
    const { items } = await listAll(`${fx.records}?_sort=id&_limit=2`, alice);
    expect(idsOf(items)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });
});
