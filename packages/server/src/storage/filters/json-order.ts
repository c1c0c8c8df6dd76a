/**
 * How JSON values compare and contain each other in filters and sorts: PostgreSQL jsonb's order
 * and `@>`, in JavaScript. The reference the SQL of both backends is checked against
 * (storage/testing/generated-listings.ts), and the SQLite store's own functions (sqlite/jsonb.ts).
 *
 * Order: by type rank null < string < number < boolean < array < object, then within the type:
 * strings by code point (PostgreSQL under the "C" or "C.UTF-8" collation: UTF-8 bytes), numbers
 * by value, false < true; the longer array is the greater, then element by element; the object
 * with more keys is the greater, then key, value, key… in jsonb's key order (by UTF-8 length,
 * then bytes), whatever the order they were written in.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function typeRank(value: unknown): number {
  if (value === null) return 0;
  switch (typeof value) {
    case 'string':
      return 1;
    case 'number':
      return 2;
    case 'boolean':
      return 3;
    default:
      return Array.isArray(value) ? 4 : 5;
  }
}

/**
 * Strings by code point. JavaScript's `<` compares UTF-16 units, which puts U+10000 and above
 * (surrogate pairs, D800–DFFF) before U+E000–U+FFFF: at the first differing unit, both in that
 * range, surrogates are moved above.
 */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length - b.length < 0 ? -1 : a.length === b.length ? 0 : 1;
}

/** jsonb's key order: by UTF-8 length, then by bytes (code points). */
function compareKeys(a: string, b: string): number {
  return Buffer.byteLength(a, 'utf8') - Buffer.byteLength(b, 'utf8') || compareStrings(a, b);
}

/** The keys of an object in jsonb's key order. */
export function jsonbKeys(object: Record<string, unknown>): string[] {
  return Object.keys(object).sort(compareKeys);
}

/** jsonb's order of two JSON values: negative, 0 (equal, as jsonb `=`) or positive. */
export function compareJson(a: unknown, b: unknown): number {
  const rank = typeRank(a) - typeRank(b);
  if (rank !== 0) return rank;
  if (typeof a === 'string') return compareStrings(a, b as string);
  if (typeof a === 'number') return a < (b as number) ? -1 : a > (b as number) ? 1 : 0;
  if (typeof a === 'boolean') return Number(a) - Number(b);
  if (a === null) return 0;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    if (a.length !== other.length) return a.length - other.length;
    for (let i = 0; i < a.length; i++) {
      const order = compareJson(a[i], other[i]);
      if (order !== 0) return order;
    }
    return 0;
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const leftKeys = jsonbKeys(left);
  const rightKeys = jsonbKeys(right);
  if (leftKeys.length !== rightKeys.length) return leftKeys.length - rightKeys.length;
  for (let i = 0; i < leftKeys.length; i++) {
    const order = compareStrings(leftKeys[i]!, rightKeys[i]!) || compareJson(left[leftKeys[i]!], right[rightKeys[i]!]);
    if (order !== 0) return order;
  }
  return 0;
}

export function jsonEquals(a: unknown, b: unknown): boolean {
  return compareJson(a, b) === 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * jsonb's `container @> wanted` between containers: every element of a wanted array is in the
 * array (a scalar equal to one of its elements, a container contained in one of them); every
 * key of a wanted object is in the object with a value equal (scalars) or contained (containers).
 */
export function jsonContains(container: unknown, wanted: unknown): boolean {
  if (Array.isArray(container)) {
    return (
      Array.isArray(wanted) &&
      wanted.every((element) => container.some((candidate) => containsOrEquals(candidate, element)))
    );
  }
  if (isObject(container)) {
    return (
      isObject(wanted) &&
      Object.keys(wanted).every((key) => Object.hasOwn(container, key) && containsOrEquals(container[key], wanted[key]))
    );
  }
  return false;
}

function containsOrEquals(candidate: unknown, wanted: unknown): boolean {
  if (wanted !== null && typeof wanted === 'object') return jsonContains(candidate, wanted);
  return candidate !== null && typeof candidate === 'object' ? false : jsonEquals(candidate, wanted);
}
