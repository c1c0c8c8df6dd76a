/**
 * What both SQL dialects share about sorting, comparisons and keyset pagination; each dialect
 * only says how one field compares (`same`, `beyond`) in its own SQL.
 */
import type { Sort } from './types.js';

/** The comparison operators the query builders write. */
export type Comparison = '=' | '<>' | '<' | '>' | '<=' | '>=';

/** Whether `a op b` holds for two numbers (type ranks, known when the SQL is written). */
export function compareNumbers(a: number, op: Comparison, b: number): boolean {
  switch (op) {
    case '=':
      return a === b;
    case '<>':
      return a !== b;
    case '<':
      return a < b;
    case '>':
      return a > b;
    case '<=':
      return a <= b;
    case '>=':
      return a >= b;
  }
}

/** Callers end their sorting with last_modified; without one, newest first (Kinto's default). */
export function sortingOrDefault(sorting: Sort[] | undefined): Sort[] {
  return sorting && sorting.length > 0 ? sorting : [{ field: 'last_modified', direction: -1 }];
}

/**
 * Keyset continuation: rows strictly after `after` in `sorting` order, i.e.
 * OR over k of (f1 same as v1 AND … AND f(k-1) same as v(k-1) AND fk beyond vk),
 * where a key absent from `after` means the last row lacked that field. A part that can never
 * hold is 'FALSE', and drops its branch.
 */
export function keysetCondition(sorting: Sort[], same: (sort: Sort) => string, beyond: (sort: Sort) => string): string {
  const branches: string[] = [];
  for (let k = 0; k < sorting.length; k++) {
    const past = beyond(sorting[k]!);
    if (past === 'FALSE') continue;
    const equal = sorting.slice(0, k).map(same);
    if (equal.includes('FALSE')) continue;
    branches.push(`(${[...equal, past].join(' AND ')})`);
  }
  return branches.length > 0 ? `(${branches.join(' OR ')})` : 'FALSE';
}
