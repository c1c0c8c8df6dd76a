import { describe, expect, it } from 'vitest';
import { FILTER_OPERATORS, parseFilterName } from './filters.js';

describe('filter names', () => {
  it('reads each operator, longest match where prefixes overlap, and a bare field as eq', () => {
    for (const operator of FILTER_OPERATORS)
      expect(parseFilterName(`${operator}_a.b`)).toEqual({ operator, field: 'a.b' });
    expect(parseFilterName('contains_any_tags')).toEqual({ operator: 'contains_any', field: 'tags' });
    expect(parseFilterName('title')).toEqual({ operator: 'eq', field: 'title' });
    expect(parseFilterName('min_')).toEqual({ operator: 'eq', field: 'min_' });
    expect(parseFilterName('a b')).toBeNull();
  });
});
