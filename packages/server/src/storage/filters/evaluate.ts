/**
 * The reference filter engine: what a listing's filters, sorting and keyset continuation select
 * (storage/types.ts states it; PostgreSQL jsonb is where it comes from), computed in memory.
 *
 * It is the meaning both SQL backends must have — the shared storage suite runs generated
 * objects × generated filters and sorts through each and through this, and compares — and the
 * change monitor's listing (changes/entries.ts), whose entries are built per request, not
 * stored. Pure: no I/O, no settings; every operator in time linear in the object's field and the
 * filter's value (`like`: see like.ts).
 */
import type { Filter, Sort } from '../types.js';
import { compareJson, jsonContains, jsonEquals } from './json-order.js';
import { likeMatches } from './like.js';

/** An object as listings see it: `id`, `last_modified` and its fields (a tombstone: `deleted: true`). */
export type Listable = object;

/** PostgreSQL's int4 range, what `#>` reads an array index in. */
const INDEX_LIMIT = 2 ** 31;

/**
 * The value at a dotted path, as PostgreSQL's `data #> '{a,b}'` reads it: a segment is a key of
 * an object, or of an array an index (a whole number; negative ones count from the end); the
 * value is undefined where the path leads nowhere.
 */
export function fieldValue(object: Listable, path: string): unknown {
  let value: unknown = object;
  for (const segment of path.split('.')) {
    if (Array.isArray(value)) {
      if (!/^-?\d+$/.test(segment)) return undefined;
      let index = Number(segment);
      if (Math.abs(index) >= INDEX_LIMIT) return undefined;
      if (index < 0) index += value.length;
      if (index < 0 || index >= value.length) return undefined;
      value = value[index];
    } else if (value !== null && typeof value === 'object' && Object.hasOwn(value, segment)) {
      value = (value as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
  }
  return value;
}

function toArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

/**
 * Whether the object matches the filter. A missing field matches `not`, `exclude`, `gt` and
 * `min` (it sorts after every value) and `has` false, nothing else.
 */
export function matchesFilter(object: Listable, { field, operator, value }: Filter): boolean {
  const held = fieldValue(object, field);
  if (held === undefined)
    return (
      operator === 'not' ||
      operator === 'exclude' ||
      operator === 'gt' ||
      operator === 'min' ||
      (operator === 'has' && !value)
    );
  switch (operator) {
    case 'eq':
      return jsonEquals(held, value);
    case 'not':
      return !jsonEquals(held, value);
    case 'lt':
      return compareJson(held, value) < 0;
    case 'gt':
      return compareJson(held, value) > 0;
    case 'min':
      return compareJson(held, value) >= 0;
    case 'max':
      return compareJson(held, value) <= 0;
    case 'in':
      return toArray(value).some((candidate) => jsonEquals(held, candidate));
    case 'exclude':
      return !toArray(value).some((candidate) => jsonEquals(held, candidate));
    case 'like':
      return typeof held === 'string' && likeMatches(held, String(value));
    case 'has':
      return Boolean(value);
    case 'contains':
      return Array.isArray(held) && jsonContains(held, toArray(value));
    case 'contains_any':
      return Array.isArray(held) && toArray(value).some((candidate) => jsonContains(held, [candidate]));
    default:
      throw new TypeError(`unknown filter operator ${JSON.stringify(operator satisfies never)}`);
  }
}

export function matchesFilters(object: Listable, filters: readonly Filter[]): boolean {
  return filters.every((filter) => matchesFilter(object, filter));
}

/** Two values of a sort field: missing (undefined) after every value, then `direction`. */
function compareSortValues(a: unknown, b: unknown, direction: 1 | -1): number {
  if (a === undefined || b === undefined) return a === b ? 0 : (a === undefined ? 1 : -1) * direction;
  return compareJson(a, b) * direction;
}

/** Two objects' sort keys (their sort fields' values, in `sorting` order). */
function compareKeys(a: readonly unknown[], b: readonly unknown[], sorting: readonly Sort[]): number {
  for (let i = 0; i < sorting.length; i++) {
    const order = compareSortValues(a[i], b[i], sorting[i]!.direction);
    if (order !== 0) return order;
  }
  return 0;
}

const sortKey = (object: Listable, sorting: readonly Sort[]): unknown[] =>
  sorting.map(({ field }) => fieldValue(object, field));

/** Objects in `sorting` order: ascending puts missing fields last, descending first. */
export function compareObjects(a: Listable, b: Listable, sorting: readonly Sort[]): number {
  return compareKeys(sortKey(a, sorting), sortKey(b, sorting), sorting);
}

/**
 * Keyset continuation: whether the object comes strictly after `after` in `sorting` order;
 * `after` holds the sort fields' values of the last object of a page, a key absent where that
 * object lacked the field (storage/types.ts `ListOptions.after`).
 */
export function isAfter(object: Listable, after: Record<string, unknown>, sorting: readonly Sort[]): boolean {
  const last = sorting.map(({ field }) => (Object.hasOwn(after, field) ? after[field] : undefined));
  return compareKeys(sortKey(object, sorting), last, sorting) > 0;
}

export interface Selection {
  filters?: readonly Filter[];
  sorting?: readonly Sort[];
  after?: Record<string, unknown>;
  limit?: number;
}

/** The objects a listing selects, in order: filtered, sorted, after `after`, at most `limit`. */
export function selectObjects<T extends Listable>(
  objects: readonly T[],
  { filters = [], sorting = [], after, limit }: Selection,
): T[] {
  // Each object's sort key read once, not at each comparison.
  let keyed = objects
    .filter((object) => matchesFilters(object, filters))
    .map((object) => ({ object, key: sortKey(object, sorting) }));
  if (after !== undefined) {
    const last = sorting.map(({ field }) => (Object.hasOwn(after, field) ? after[field] : undefined));
    keyed = keyed.filter(({ key }) => compareKeys(key, last, sorting) > 0);
  }
  keyed.sort((a, b) => compareKeys(a.key, b.key, sorting));
  const selected = keyed.map(({ object }) => object);
  return limit === undefined ? selected : selected.slice(0, limit);
}
