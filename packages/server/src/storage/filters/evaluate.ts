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
  return valueAt(object, path.split('.'));
}

/** `fieldValue` with the path split already (a filter or sort tried on many objects splits it once). */
function valueAt(object: Listable, segments: readonly string[]): unknown {
  let value: unknown = object;
  for (const segment of segments) {
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

type Primitive = string | number | boolean | null;

function isPrimitive(value: unknown): value is Primitive {
  return value === null || (typeof value !== 'object' && typeof value !== 'undefined');
}

/**
 * A list of a filter's values made ready for many lookups: its scalars in a Set (a scalar equals
 * another, as jsonb's `=` has it, exactly when JavaScript's Set finds it), containers aside.
 */
class ValueList {
  readonly scalars = new Set<Primitive>();
  readonly containers: unknown[] = [];

  constructor(values: readonly unknown[]) {
    for (const value of values) {
      if (isPrimitive(value)) this.scalars.add(value);
      else this.containers.push(value);
    }
  }

  /** One of the values equals `held`. */
  has(held: unknown): boolean {
    if (isPrimitive(held)) return this.scalars.has(held);
    return this.containers.some((candidate) => jsonEquals(held, candidate));
  }

  /** One of the values is in the array `held` (jsonb `held @> [value]`). */
  anyIn(held: readonly unknown[]): boolean {
    if (this.scalars.size > 0 && held.some((element) => isPrimitive(element) && this.scalars.has(element))) return true;
    return this.containers.some((candidate) => jsonContains(held, [candidate]));
  }

  /** Every value is in the array `held` (jsonb `held @> values`). */
  allIn(held: readonly unknown[]): boolean {
    if (this.scalars.size > 0) {
      const present = new Set(held.filter(isPrimitive));
      for (const scalar of this.scalars) if (!present.has(scalar)) return false;
    }
    return this.containers.length === 0 || jsonContains(held, this.containers);
  }
}

/** Whether an object missing the field matches: `not`, `exclude`, `gt`, `min` (missing sorts after every value),
 * `has` false. */
function matchesMissing({ operator, value }: Filter): boolean {
  return (
    operator === 'not' ||
    operator === 'exclude' ||
    operator === 'gt' ||
    operator === 'min' ||
    (operator === 'has' && !value)
  );
}

/** The test of a filter on a present field's value, its list values prepared once. */
function valueTest({ operator, value }: Filter): (held: unknown) => boolean {
  switch (operator) {
    case 'eq':
      return (held) => jsonEquals(held, value);
    case 'not':
      return (held) => !jsonEquals(held, value);
    case 'lt':
      return (held) => compareJson(held, value) < 0;
    case 'gt':
      return (held) => compareJson(held, value) > 0;
    case 'min':
      return (held) => compareJson(held, value) >= 0;
    case 'max':
      return (held) => compareJson(held, value) <= 0;
    case 'in': {
      const list = new ValueList(toArray(value));
      return (held) => list.has(held);
    }
    case 'exclude': {
      const list = new ValueList(toArray(value));
      return (held) => !list.has(held);
    }
    case 'like': {
      const pattern = String(value);
      return (held) => typeof held === 'string' && likeMatches(held, pattern);
    }
    case 'has':
      return () => Boolean(value);
    case 'contains': {
      const list = new ValueList(toArray(value));
      return (held) => Array.isArray(held) && list.allIn(held);
    }
    case 'contains_any': {
      const list = new ValueList(toArray(value));
      return (held) => Array.isArray(held) && list.anyIn(held);
    }
    default:
      throw new TypeError(`unknown filter operator ${JSON.stringify(operator satisfies never)}`);
  }
}

/**
 * A filter made ready to be tried on many objects (a listing, a stream's entries): its path split
 * and its values prepared once, so that each object costs its field and a lookup — linear in the
 * objects, whatever the length of an `in_` list.
 */
export function compileFilter(filter: Filter): (object: Listable) => boolean {
  const segments = filter.field.split('.');
  const missing = matchesMissing(filter);
  const test = valueTest(filter);
  return (object) => {
    const held = valueAt(object, segments);
    return held === undefined ? missing : test(held);
  };
}

/** All the filters made ready (see compileFilter): whether an object matches every one. */
export function compileFilters(filters: readonly Filter[]): (object: Listable) => boolean {
  const tests = filters.map(compileFilter);
  return (object) => tests.every((test) => test(object));
}

/**
 * Whether the object matches the filter. A missing field matches `not`, `exclude`, `gt` and
 * `min` (it sorts after every value) and `has` false, nothing else.
 */
export function matchesFilter(object: Listable, filter: Filter): boolean {
  return compileFilter(filter)(object);
}

export function matchesFilters(object: Listable, filters: readonly Filter[]): boolean {
  return compileFilters(filters)(object);
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

/** The sort key of an object by paths split once. */
const keyBy = (paths: readonly string[][]) => (object: Listable) => paths.map((path) => valueAt(object, path));

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
  // Each object's sort key read once, not at each comparison; each path split once.
  const matches = compileFilters(filters);
  const key = keyBy(sorting.map(({ field }) => field.split('.')));
  let keyed = objects.filter(matches).map((object) => ({ object, key: key(object) }));
  if (after !== undefined) {
    const last = sorting.map(({ field }) => (Object.hasOwn(after, field) ? after[field] : undefined));
    keyed = keyed.filter((item) => compareKeys(item.key, last, sorting) > 0);
  }
  keyed.sort((a, b) => compareKeys(a.key, b.key, sorting));
  const selected = keyed.map(({ object }) => object);
  return limit === undefined ? selected : selected.slice(0, limit);
}
