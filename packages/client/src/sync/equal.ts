/** Record equality for sync: same fields and values, whatever the key order; server fields ignored. */

const IGNORED = new Set(['last_modified', 'deleted']);

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => deepEqual(item, other[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && deepEqual(left[key], right[key]));
}

export function sameRecord(a: Record<string, unknown> | null | undefined, b: Record<string, unknown> | null | undefined): boolean {
  if (!a || !b) return false;
  const strip = (record: Record<string, unknown>) => Object.fromEntries(Object.entries(record).filter(([key]) => !IGNORED.has(key)));
  return deepEqual(strip(a), strip(b));
}

/** The record's app fields as pushed to the server (no `id`, no `last_modified`). */
export function payload(record: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, last_modified: _lm, ...fields } = record;
  return fields;
}
