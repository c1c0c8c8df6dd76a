/**
 * The compiled `_fields` projection and filters (linear in the objects, whatever the size of
 * the query) give what the plain definitions give: the projection of §7.5 path by path, the
 * filters' list operators value by value (jsonb `=` and `@>`), on generated objects and queries.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileFilter } from '../storage/filters/evaluate.js';
import { jsonContains, jsonEquals } from '../storage/filters/json-order.js';
import type { Filter } from '../storage/types.js';
import { projectFields } from './querystring.js';

/** §7.5 path by path: each listed field copied at its path, intermediate objects created. */
function projectOneByOne(object: Record<string, unknown>, fields: string[]): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const path of ['id', 'last_modified', ...fields]) {
    let value: unknown = object;
    for (const part of path.split('.')) {
      const holds = value !== null && typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, part);
      value = holds ? (value as Record<string, unknown>)[part] : undefined;
    }
    if (value === undefined) continue;
    const parts = path.split('.');
    let target = result;
    for (const part of parts.slice(0, -1)) {
      const next = target[part];
      if (next === null || typeof next !== 'object' || Array.isArray(next)) target[part] = {};
      target = target[part] as Record<string, unknown>;
    }
    target[parts.at(-1)!] = value;
  }
  if (object.deleted === true) result.deleted = true;
  return result;
}

const key = fc.constantFrom('a', 'b', 'c', '0', 'id', 'last_modified', 'deleted');
const value = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false, 0, 1, 2, 'a', 'b', ''),
    fc.array(tie('json'), { maxLength: 3 }),
    fc.dictionary(key, tie('json'), { maxKeys: 4 }),
  ),
})).json;
const objects = fc.dictionary(key, value, { maxKeys: 6 });
const paths = fc.array(
  fc.array(key, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('.')),
  {
    maxLength: 6,
  },
);

describe('the compiled projection and filters', () => {
  it('projects as §7.5 does path by path (a field and its sub-field keep the field whole)', () => {
    fc.assert(
      fc.property(objects, paths, (object, fields) => {
        // Whole fields first, as the path-by-path definition leaves them whatever the order.
        const reference = projectOneByOne(
          object,
          [...fields].sort((x, y) => x.length - y.length),
        );
        expect(JSON.parse(JSON.stringify(projectFields(object, fields)))).toEqual(
          JSON.parse(JSON.stringify(reference)),
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('tries in_, exclude_, contains_ and contains_any_ lists as value by value', () => {
    const operators = fc.constantFrom('in', 'exclude', 'contains', 'contains_any') as fc.Arbitrary<
      'in' | 'exclude' | 'contains' | 'contains_any'
    >;
    fc.assert(
      fc.property(objects, key, operators, fc.array(value, { maxLength: 6 }), (object, field, operator, list) => {
        const held = (object as Record<string, unknown>)[field];
        const any = (test: (candidate: unknown) => boolean) => list.some(test);
        let expected: boolean;
        if (held === undefined) expected = operator === 'exclude';
        else if (operator === 'in') expected = any((candidate) => jsonEquals(held, candidate));
        else if (operator === 'exclude') expected = !any((candidate) => jsonEquals(held, candidate));
        else if (operator === 'contains') expected = Array.isArray(held) && jsonContains(held, list);
        else expected = Array.isArray(held) && any((candidate) => jsonContains(held, [candidate]));
        const filter: Filter = { field, operator, value: list };
        expect(compileFilter(filter)(object)).toBe(expected);
      }),
      { numRuns: 3000 },
    );
  });
});
