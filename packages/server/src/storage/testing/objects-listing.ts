/**
 * The objects facet's listings: sorts by JSON type rank, keyset pagination, JSON text. Filters
 * are in object-filters.ts.
 */
import { expect } from 'vitest';
import type { Filter, Scope, Sort, Storage } from '../types.js';
import { fieldValue, selectObjects } from '../filters/evaluate.js';
import { continuationOf, ids, paginate, randomScope, seedObjects, type Suite } from './context.js';

export function describeObjectListings(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  let scope: Scope;
  suite.beforeEach((current) => ({ storage, scope } = current));
  /** Creates objects `{ id: data }` in order (so increasing timestamps). */
  const seed = (objects: Record<string, Record<string, unknown>>, target = scope) =>
    seedObjects(storage, target, objects);

  section('sorting', () => {
    const asc = (field: string): Sort => ({ field, direction: 1 });
    const desc = (field: string): Sort => ({ field, direction: -1 });
    async function order(...sorting: Sort[]): Promise<string[]> {
      return ids(await storage.read((session) => session.objects.list(scope, { sorting })));
    }

    test('ascending puts missing fields last, descending first', async () => {
      await seed({ m: {}, b: { n: 2 }, a: { n: 1 }, c: { n: 3 } });
      expect(await order(asc('n'), desc('last_modified'))).toEqual(['a', 'b', 'c', 'm']);
      expect(await order(desc('n'), desc('last_modified'))).toEqual(['m', 'c', 'b', 'a']);
    });

    test('values of mixed types sort by type rank', async () => {
      const values: Record<string, unknown> = {
        object: { a: 1 },
        true: true,
        number: 1,
        array: [0],
        string: 'a',
        null: null,
        emptyArray: [],
        false: false,
        emptyObject: {},
      };
      for (const [id, v] of Object.entries(values))
        await storage.transaction((session) => session.objects.create(scope, id, { v }));
      await storage.transaction((session) => session.objects.create(scope, 'missing', {}));
      const ranked = [
        'null',
        'string',
        'number',
        'false',
        'true',
        'emptyArray',
        'array',
        'emptyObject',
        'object',
        'missing',
      ];
      expect(await order(asc('v'), asc('last_modified'))).toEqual(ranked);
      expect(await order(desc('v'), asc('last_modified'))).toEqual(['missing', ...ranked.slice(0, -1).reverse()]);
    });

    test('several fields sort lexicographically, and the last one breaks ties', async () => {
      await seed({ a: { g: 1, s: 'b' }, b: { g: 2, s: 'a' }, c: { g: 1, s: 'a' }, d: { g: 1, s: 'a' }, e: { s: 'a' } });
      expect(await order(asc('g'), asc('s'), asc('last_modified'))).toEqual(['c', 'd', 'a', 'b', 'e']);
      expect(await order(asc('g'), desc('s'), desc('last_modified'))).toEqual(['a', 'd', 'c', 'b', 'e']);
      expect(await order(asc('s'), desc('g'), desc('last_modified'))).toEqual(['e', 'b', 'd', 'c', 'a']);
    });

    test('nested fields sort by dotted path', async () => {
      await seed({ a: { p: { age: 30 } }, b: { p: { age: 20 } }, c: { p: {} }, d: { p: { age: 25 } } });
      expect(await order(asc('p.age'), asc('last_modified'))).toEqual(['b', 'd', 'a', 'c']);
      expect(await order(desc('p.age'), asc('last_modified'))).toEqual(['c', 'a', 'd', 'b']);
    });

    test('id and last_modified sort by the object id and timestamp', async () => {
      await seed({ b: {}, c: {}, a: {} });
      expect(await order(asc('id'))).toEqual(['a', 'b', 'c']);
      expect(await order(desc('id'))).toEqual(['c', 'b', 'a']);
      expect(await order(asc('last_modified'))).toEqual(['b', 'c', 'a']);
      expect(await order(desc('last_modified'))).toEqual(['a', 'c', 'b']);
    });

    test('limit keeps the first objects in order', async () => {
      await seed({ a: { n: 3 }, b: { n: 1 }, c: { n: 2 } });
      expect(
        ids(
          await storage.read((session) =>
            session.objects.list(scope, { sorting: [asc('n'), asc('last_modified')], limit: 2 }),
          ),
        ),
      ).toEqual(['b', 'c']);
    });
  });

  section('pagination', () => {
    test('a filter on data fields gives the same pages past the newest objects a bounded walk reads', async () => {
      // The SQL stores walk the newest 2,000 objects of a scope for a page filtered on data, then
      // read the whole scope (sql/listing.ts listFromNewest): both ways, the reference's answer.
      const big = randomScope();
      const objects = Array.from({ length: 2_600 }, (_, i) => ({
        id: `r${String(i).padStart(4, '0')}`,
        data: { k: i % 400 === 3 ? 'rare' : 'common', n: i, ...(i < 5 ? { old: true } : {}) },
      }));
      await storage.transaction((session) => session.objects.insertMany(big, objects));
      const all = await storage.read((session) => session.objects.list(big));
      const filtersCases: Filter[][] = [
        [{ field: 'k', operator: 'eq', value: 'rare' }],
        [{ field: 'old', operator: 'eq', value: true }],
        [{ field: 'k', operator: 'eq', value: 'none' }],
        [{ field: 'n', operator: 'lt', value: 10 }],
        [{ field: 'k', operator: 'eq', value: 'common' }],
      ];
      const sortings: Sort[][] = [
        [{ field: 'last_modified', direction: -1 }],
        [{ field: 'last_modified', direction: 1 }],
        [{ field: 'id', direction: 1 }],
      ];
      for (const filters of filtersCases) {
        for (const sorting of sortings) {
          const expected = ids(selectObjects(all, { filters, sorting }));
          const pages = await paginate(storage, big, { filters, sorting, limit: expected.length > 20 ? 700 : 3 });
          expect(ids(pages.flat()), JSON.stringify({ filters, sorting })).toEqual(expected);
        }
      }
    }, 120_000);

    const orders: Record<string, Sort[]> = {
      'newest first': [{ field: 'last_modified', direction: -1 }],
      'oldest first': [{ field: 'last_modified', direction: 1 }],
      'field ascending': [
        { field: 'title', direction: 1 },
        { field: 'last_modified', direction: -1 },
      ],
      'field descending': [
        { field: 'title', direction: -1 },
        { field: 'last_modified', direction: 1 },
      ],
      'mixed types and missing values': [
        { field: 'mixed', direction: 1 },
        { field: 'last_modified', direction: -1 },
      ],
      'mixed types and missing values, descending': [
        { field: 'mixed', direction: -1 },
        { field: 'last_modified', direction: 1 },
      ],
      'nested fields with duplicates': [
        { field: 'p.group', direction: 1 },
        { field: 'p.rank', direction: -1 },
        { field: 'last_modified', direction: 1 },
      ],
      'by id': [{ field: 'id', direction: 1 }],
    };
    const mixed = [null, 'b', 'a', 2, 1, true, false, [1], { x: 1 }, undefined];

    async function seedVaried(count: number): Promise<void> {
      await storage.transaction(async (session) => {
        for (let i = 0; i < count; i++) {
          const data: Record<string, unknown> = {
            title: `t${i % 7}`,
            p: i % 5 === 0 ? {} : { group: i % 3, ...(i % 4 === 0 ? {} : { rank: i % 2 }) },
          };
          if (mixed[i % mixed.length] !== undefined) data.mixed = mixed[i % mixed.length];
          await session.objects.create(scope, `id${String(i).padStart(3, '0')}`, data);
        }
      });
    }

    for (const [label, sorting] of Object.entries(orders)) {
      test(`pages cover the full list exactly, ${label}`, async () => {
        await seedVaried(43);
        const full = await storage.read((session) => session.objects.list(scope, { sorting }));
        expect(full).toHaveLength(43);
        for (const limit of [1, 5, 43]) {
          const pages = await paginate(storage, scope, { sorting, limit });
          expect(ids(pages.flat())).toEqual(ids(full));
        }
      });
    }

    test('pages combine with filters', async () => {
      await seedVaried(30);
      const sorting: Sort[] = [
        { field: 'title', direction: 1 },
        { field: 'last_modified', direction: 1 },
      ];
      const filters: Filter[] = [{ field: 'title', operator: 'not', value: 't3' }];
      const full = await storage.read((session) => session.objects.list(scope, { sorting, filters }));
      const pages = await paginate(storage, scope, { sorting, filters, limit: 4 });
      expect(ids(pages.flat())).toEqual(ids(full));
      expect(full.every((object) => fieldValue(object, 'title') !== 't3')).toBe(true);
    });

    test('newest-first pages neither repeat nor skip objects while others are inserted', async () => {
      await seedVaried(20);
      const sorting: Sort[] = [{ field: 'last_modified', direction: -1 }];
      const initial = ids(await storage.read((session) => session.objects.list(scope, { sorting })));
      const seen: string[] = [];
      let after: Record<string, unknown> | undefined;
      let inserted = 0;
      for (;;) {
        const page = await storage.read((session) =>
          session.objects.list(scope, { sorting, limit: 3, ...(after ? { after } : {}) }),
        );
        seen.push(...ids(page));
        if (page.length < 3) break;
        after = continuationOf(page.at(-1)!, sorting);
        await Promise.all([
          storage.transaction((session) => session.objects.create(scope, `new${inserted++}`, {})),
          storage.transaction((session) => session.objects.create(scope, `new${inserted++}`, {})),
        ]);
      }
      expect(seen).toEqual(initial);
    });

    test('pages over a _since poll include tombstones once', async () => {
      await seedVaried(12);
      const since = await storage.read((session) => session.objects.timestamp(scope));
      for (const id of ['id001', 'id004', 'id007'])
        await storage.transaction((session) => session.objects.delete(scope, id));
      for (const id of ['id002', 'id005'])
        await storage.transaction((session) => session.objects.update(scope, id, { changed: true }));
      const sorting: Sort[] = [{ field: 'last_modified', direction: -1 }];
      const filters: Filter[] = [{ field: 'last_modified', operator: 'gt', value: since }];
      const pages = await paginate(storage, scope, { sorting, filters, includeDeleted: true, limit: 2 });
      expect(ids(pages.flat())).toEqual(['id005', 'id002', 'id007', 'id004', 'id001']);
    });
  });

  section('as JSON text', () => {
    test(
      'listJson gives each object of list as its wire text: empty data, strings to escape, nesting, numbers, ' +
        'tombstones',
      async () => {
        await seed({
          empty: {},
          escaped: { title: 'quote " backslash \\ tab \t é 😀 \u2028', 'key with "quotes"': 1 },
          nested: {
            deep: { a: [1, { b: null }], c: { '': true } },
            n: -12.5,
            big: 1e300,
            small: 5e-324,
            int: 9007199254740991,
          },
        });
        await storage.transaction((session) => session.objects.delete(scope, 'empty'));
        const options = { includeDeleted: true, sorting: [{ field: 'id', direction: 1 as const }] };
        const [listed, texts] = await storage.read(
          async (session) =>
            [await session.objects.list(scope, options), await session.objects.listJson(scope, options)] as const,
        );
        expect(ids(listed)).toEqual(['empty', 'escaped', 'nested']);
        expect(texts.map((each) => JSON.parse(each.json) as unknown)).toEqual(listed);
        expect(texts.map(({ id, last_modified, deleted }) => ({ id, last_modified, deleted }))).toEqual(
          listed.map((object) => ({
            id: object.id,
            last_modified: object.last_modified,
            deleted: 'deleted' in object,
          })),
        );
        // Each is one JSON object with the two fields once (the stored data never holds them).
        for (const { json } of texts) expect(json.match(/"last_modified":/g)).toHaveLength(1);
      },
    );
  });
}
