/** The objects facet's listing filters: PostgreSQL jsonb semantics are the reference (types.ts `Filter`). */
import { beforeEach, expect } from 'vitest';
import type { Filter, Scope, Sort, Storage } from '../types.js';
import { selectObjects } from '../filters/evaluate.js';
import { ids, randomScope, seedObjects, type Suite } from './context.js';

export function describeObjectFilters(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  let scope: Scope;
  suite.beforeEach((current) => ({ storage, scope } = current));
  /** Creates objects `{ id: data }` in order (so increasing timestamps). */
  const seed = (objects: Record<string, Record<string, unknown>>, target = scope) =>
    seedObjects(storage, target, objects);

  section('filters', () => {
    // One object per case; `e` has no field at all.
    const data: Record<string, Record<string, unknown>> = {
      a: { title: 'Alpha', n: 1, tags: ['x', 'y'], person: { name: 'Ann', age: 30 }, flag: true },
      b: { title: 'beta', n: 2, tags: ['y'], person: { name: 'Bob' }, nullable: null },
      c: { title: 'Gamma 50%_off', n: 10, tags: [], flag: false, obj: { k: [1, 2] } },
      d: { title: 7, n: '10', tags: 'x' },
      e: {},
    };
    async function match(...filters: Filter[]): Promise<string[]> {
      const sorting: Sort[] = [{ field: 'id', direction: 1 }];
      const [listed, all] = await storage.read(async (session) => [
        await session.objects.list(scope, { filters, sorting }),
        await session.objects.list(scope),
      ]);
      // The reference engine says the same on every hand-picked case (generated-listings.ts: on generated ones).
      expect(ids(listed), `reference engine, ${JSON.stringify(filters)}`).toEqual(
        ids(selectObjects(all, { filters, sorting })),
      );
      return ids(listed);
    }
    beforeEach(async () => {
      await seed(data);
    });

    test('eq compares whole JSON values, type included', async () => {
      expect(await match({ field: 'n', operator: 'eq', value: 10 })).toEqual(['c']);
      expect(await match({ field: 'n', operator: 'eq', value: '10' })).toEqual(['d']);
      expect(await match({ field: 'title', operator: 'eq', value: 'beta' })).toEqual(['b']);
      expect(await match({ field: 'flag', operator: 'eq', value: false })).toEqual(['c']);
      expect(await match({ field: 'nullable', operator: 'eq', value: null })).toEqual(['b']);
      expect(await match({ field: 'tags', operator: 'eq', value: ['x', 'y'] })).toEqual(['a']);
      expect(await match({ field: 'tags', operator: 'eq', value: ['y', 'x'] })).toEqual([]);
      expect(await match({ field: 'obj', operator: 'eq', value: { k: [1, 2] } })).toEqual(['c']);
    });

    test('not matches objects lacking the field', async () => {
      expect(await match({ field: 'n', operator: 'not', value: 10 })).toEqual(['a', 'b', 'd', 'e']);
      expect(await match({ field: 'flag', operator: 'not', value: true })).toEqual(['b', 'c', 'd', 'e']);
    });

    test('lt and max never match a missing field; gt and min always do', async () => {
      // d's "10" is a string, and strings rank below numbers.
      expect(await match({ field: 'n', operator: 'lt', value: 10 })).toEqual(['a', 'b', 'd']);
      expect(await match({ field: 'n', operator: 'max', value: 10 })).toEqual(['a', 'b', 'c', 'd']);
      expect(await match({ field: 'n', operator: 'gt', value: 1 })).toEqual(['b', 'c', 'e']);
      expect(await match({ field: 'n', operator: 'min', value: 2 })).toEqual(['b', 'c', 'e']);
    });

    test('comparisons rank types null < string < number < boolean < array < object', async () => {
      const ranked = randomScope();
      const values: Record<string, unknown> = {
        null: null,
        string: 'z',
        number: 3,
        false: false,
        true: true,
        array: [],
        object: {},
      };
      for (const [id, v] of Object.entries(values))
        await storage.transaction((session) => session.objects.create(ranked, id, { v }));
      await storage.transaction((session) => session.objects.create(ranked, 'missing', {}));
      const inRank = async (filter: Filter) =>
        ids(
          await storage.read((session) =>
            session.objects.list(ranked, { filters: [filter], sorting: [{ field: 'v', direction: 1 }] }),
          ),
        );
      expect(await inRank({ field: 'v', operator: 'gt', value: 3 })).toEqual([
        'false',
        'true',
        'array',
        'object',
        'missing',
      ]);
      expect(await inRank({ field: 'v', operator: 'lt', value: 3 })).toEqual(['null', 'string']);
      expect(await inRank({ field: 'v', operator: 'min', value: 'a' })).toEqual([
        'string',
        'number',
        'false',
        'true',
        'array',
        'object',
        'missing',
      ]);
      expect(await inRank({ field: 'v', operator: 'max', value: null })).toEqual(['null']);
      expect(await inRank({ field: 'v', operator: 'lt', value: [] })).toEqual([
        'null',
        'string',
        'number',
        'false',
        'true',
      ]);
    });

    test('in and exclude take a list of JSON values', async () => {
      expect(await match({ field: 'n', operator: 'in', value: [1, '10', 99] })).toEqual(['a', 'd']);
      expect(await match({ field: 'n', operator: 'in', value: [] })).toEqual([]);
      expect(await match({ field: 'nullable', operator: 'in', value: [null] })).toEqual(['b']);
      expect(await match({ field: 'n', operator: 'exclude', value: [1, '10'] })).toEqual(['b', 'c', 'e']);
      expect(await match({ field: 'n', operator: 'exclude', value: [] })).toEqual(['a', 'b', 'c', 'd', 'e']);
    });

    test('like is case-insensitive, * is its only wildcard, and it matches strings only', async () => {
      expect(await match({ field: 'title', operator: 'like', value: 'ET' })).toEqual(['b']);
      expect(await match({ field: 'title', operator: 'like', value: 'a*' })).toEqual(['a']);
      expect(await match({ field: 'title', operator: 'like', value: '*A' })).toEqual(['a', 'b']);
      expect(await match({ field: 'title', operator: 'like', value: 'g*off' })).toEqual(['c']);
      expect(await match({ field: 'title', operator: 'like', value: '7' })).toEqual([]);
      expect(await match({ field: 'n', operator: 'like', value: '1' })).toEqual(['d']);
    });

    test('like treats %, _ and backslash literally', async () => {
      expect(await match({ field: 'title', operator: 'like', value: '50%_off' })).toEqual(['c']);
      expect(await match({ field: 'title', operator: 'like', value: '%' })).toEqual(['c']);
      expect(await match({ field: 'title', operator: 'like', value: 'b_ta' })).toEqual([]);
      expect(await match({ field: 'title', operator: 'like', value: 'a%a' })).toEqual([]);
      await storage.transaction((session) => session.objects.create(scope, 'slash', { title: 'back\\slash' }));
      expect(await match({ field: 'title', operator: 'like', value: 'k\\s' })).toEqual(['slash']);
      expect(await match({ field: 'title', operator: 'like', value: '\\' })).toEqual(['slash']);
    });

    test('like folds case beyond ASCII, whatever the database locale (Unicode simple lowercase)', async () => {
      const folded = randomScope();
      const titles: Record<string, string> = {
        emile: 'Émile',
        kelvin: '\u212Aelvin',
        istanbul: 'İstanbul',
        odos: 'ΟΔΟΣ',
        strasse: 'STRAẞE',
        plain: 'kiosk',
      };
      for (const [id, title] of Object.entries(titles))
        await storage.transaction((session) => session.objects.create(folded, id, { title }));
      const like = async (value: string) =>
        ids(
          await storage.read((session) =>
            session.objects.list(folded, {
              filters: [{ field: 'title', operator: 'like', value }],
              sorting: [{ field: 'id', direction: 1 }],
            }),
          ),
        );
      expect(await like('émi')).toEqual(['emile']);
      expect(await like('ÉMILE')).toEqual(['emile']);
      expect(await like('k*')).toEqual(['kelvin', 'plain']);
      expect(await like('ist*')).toEqual(['istanbul']);
      expect(await like('*σ')).toEqual(['odos']);
      expect(await like('straße')).toEqual(['strasse']);
      // Only simple mappings: ß is not "ss", the dotless ı not i.
      expect(await like('strasse')).toEqual([]);
      expect(await like('\u0131stanbul')).toEqual([]);
    });

    test('has tells present (a stored null counts) from missing', async () => {
      expect(await match({ field: 'nullable', operator: 'has', value: true })).toEqual(['b']);
      expect(await match({ field: 'flag', operator: 'has', value: true })).toEqual(['a', 'c']);
      expect(await match({ field: 'flag', operator: 'has', value: false })).toEqual(['b', 'd', 'e']);
    });

    test('contains and contains_any match array fields only', async () => {
      expect(await match({ field: 'tags', operator: 'contains', value: ['y'] })).toEqual(['a', 'b']);
      expect(await match({ field: 'tags', operator: 'contains', value: ['x', 'y'] })).toEqual(['a']);
      expect(await match({ field: 'tags', operator: 'contains', value: ['x'] })).toEqual(['a']);
      expect(await match({ field: 'tags', operator: 'contains_any', value: ['x', 'zzz'] })).toEqual(['a']);
      expect(await match({ field: 'tags', operator: 'contains_any', value: ['y', 'x'] })).toEqual(['a', 'b']);
      expect(await match({ field: 'tags', operator: 'contains_any', value: [] })).toEqual([]);
      expect(await match({ field: 'title', operator: 'contains', value: ['Alpha'] })).toEqual([]);
    });

    test('dotted paths address nested fields', async () => {
      expect(await match({ field: 'person.name', operator: 'eq', value: 'Bob' })).toEqual(['b']);
      expect(await match({ field: 'person.age', operator: 'min', value: 18 })).toEqual(['a', 'b', 'c', 'd', 'e']);
      expect(await match({ field: 'person.age', operator: 'lt', value: 40 })).toEqual(['a']);
      expect(await match({ field: 'person.name', operator: 'has', value: true })).toEqual(['a', 'b']);
      expect(await match({ field: 'obj.k', operator: 'contains', value: [2] })).toEqual(['c']);
      expect(await match({ field: 'title.length', operator: 'has', value: true })).toEqual([]);
    });

    test('filters on id use the object id', async () => {
      expect(await match({ field: 'id', operator: 'eq', value: 'c' })).toEqual(['c']);
      expect(await match({ field: 'id', operator: 'in', value: ['a', 'e', 'zz'] })).toEqual(['a', 'e']);
      expect(await match({ field: 'id', operator: 'exclude', value: ['a', 'e'] })).toEqual(['b', 'c', 'd']);
      expect(await match({ field: 'id', operator: 'gt', value: 'c' })).toEqual(['d', 'e']);
      expect(await match({ field: 'id', operator: 'like', value: 'B' })).toEqual(['b']);
      expect(await match({ field: 'id', operator: 'not', value: 'a' })).toEqual(['b', 'c', 'd', 'e']);
    });

    test('filters on last_modified use the object timestamp', async () => {
      const all = await storage.read((session) =>
        session.objects.list(scope, { sorting: [{ field: 'last_modified', direction: 1 }] }),
      );
      const stamp = (id: string) => all.find((object) => object.id === id)!.last_modified;
      expect(await match({ field: 'last_modified', operator: 'gt', value: stamp('c') })).toEqual(['d', 'e']);
      expect(await match({ field: 'last_modified', operator: 'lt', value: stamp('b') })).toEqual(['a']);
      expect(await match({ field: 'last_modified', operator: 'eq', value: stamp('b') })).toEqual(['b']);
      expect(await match({ field: 'last_modified', operator: 'in', value: [stamp('a'), stamp('d')] })).toEqual([
        'a',
        'd',
      ]);
      expect(await match({ field: 'last_modified', operator: 'min', value: stamp('e') })).toEqual(['e']);
    });

    test('several filters must all match', async () => {
      expect(
        await match({ field: 'n', operator: 'gt', value: 1 }, { field: 'tags', operator: 'contains', value: ['y'] }),
      ).toEqual(['b']);
    });

    test('filters apply to tombstones too when they are included', async () => {
      await storage.transaction((session) => session.objects.delete(scope, 'a'));
      const filters: Filter[] = [{ field: 'id', operator: 'in', value: ['a', 'b'] }];
      expect(
        ids(
          await storage.read((session) =>
            session.objects.list(scope, { filters, includeDeleted: true, sorting: [{ field: 'id', direction: 1 }] }),
          ),
        ),
      ).toEqual(['a', 'b']);
      expect(await storage.read((session) => session.objects.count(scope, filters))).toBe(1);
    });
  });
}
