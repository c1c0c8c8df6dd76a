/**
 * A partial replica's subset: the protocol's list filters (`{ done: false, min_priority: 3,
 * in_tag: ['a', 'b'] }`) as the query parameters every pull, count and id listing carries, and the
 * key the replica stores to tell a change of subset (which re-pulls the new subset and drops what
 * left it: sync/run.ts).
 */

export type FilterValue = string | number | boolean | null;

/** Filters by parameter name (`<operator>_<field>` or a bare field for equality). */
export type SubsetFilters = Record<string, FilterValue | FilterValue[]>;

/** A value as the server reads it back (JSON when it parses): a string that would parse is sent quoted. */
function encodeValue(value: FilterValue): string {
  if (typeof value !== 'string') return String(value);
  try {
    JSON.parse(value);
    return JSON.stringify(value);
  } catch {
    return value;
  }
}

/** The filters as query parameters; null when there are none (the whole collection). */
export function subsetQuery(filters: SubsetFilters | null | undefined): Record<string, string> | null {
  if (!filters) return null;
  const entries = Object.entries(filters)
    .filter(([name]) => !name.startsWith('_'))
    .map(([name, value]) => [name, Array.isArray(value) ? value.map(encodeValue).join(',') : encodeValue(value)]);
  return entries.length > 0 ? Object.fromEntries(entries) : null;
}

/** What the replica remembers of its subset (null: the whole collection). */
export function subsetKey(query: Record<string, string> | null): string | null {
  if (!query) return null;
  return JSON.stringify(Object.entries(query).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
