/**
 * The protocol's list parameters (§7): filters `<op>_<field>=<value>`, `_sort`, `_fields`, kept
 * in the console's URL exactly as the server reads them, so a filtered view is a link.
 */
import { type FilterOperator, parseFilterName } from '@quire/client/admin';

/** The protocol's filter operators, from the one list (`@quire/client/admin`). */
export type Operator = FilterOperator;

interface OperatorInfo {
  op: Operator;
  label: string;
  hint: string;
}

export const OPERATORS: OperatorInfo[] = [
  { op: 'eq', label: 'equals', hint: 'Exact JSON equality: 2 is a number, "2" a string' },
  { op: 'not', label: 'is not', hint: 'Anything but this value (missing fields match)' },
  { op: 'like', label: 'matches', hint: 'Case-insensitive text match; * is a wildcard, none means “contains”' },
  { op: 'lt', label: '<', hint: 'Less than' },
  { op: 'max', label: '≤', hint: 'At most' },
  { op: 'gt', label: '>', hint: 'Greater than' },
  { op: 'min', label: '≥', hint: 'At least' },
  { op: 'in', label: 'is one of', hint: 'Comma-separated values' },
  { op: 'exclude', label: 'is none of', hint: 'Comma-separated values' },
  { op: 'has', label: 'exists', hint: 'true: the field is present (even null); false: absent' },
  { op: 'contains', label: 'array contains', hint: 'The array holds all of these (a JSON value or list)' },
  { op: 'contains_any', label: 'array contains any', hint: 'The array holds at least one of these (a JSON list)' },
];

export interface Filter {
  field: string;
  op: Operator;
  value: string;
}

export interface ListQuery {
  filters: Filter[];
  /** `_sort` entries, e.g. `['-last_modified']` (empty: the server's default). */
  sort: string[];
  /** `_fields` (empty: every field). */
  fields: string[];
}

const FIELD = /^[\w.]+$/;

export function parseFilterParam(name: string, value: string): Filter | null {
  const parsed = parseFilterName(name);
  return parsed ? { field: parsed.field, op: parsed.operator, value } : null;
}

export function parseListQuery(params: URLSearchParams): ListQuery {
  const query: ListQuery = { filters: [], sort: [], fields: [] };
  for (const [name, value] of params) {
    if (name === '_sort')
      query.sort = value
        .split(',')
        .map((part) => part.trim())
        .filter(Boolean);
    else if (name === '_fields')
      query.fields = value
        .split(',')
        .map((part) => part.trim())
        .filter(Boolean);
    else if (name.startsWith('_')) continue;
    else {
      const filter = parseFilterParam(name, value);
      if (filter) query.filters.push(filter);
    }
  }
  return query;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The value as the server should read it. The server tries JSON first: `like` needs a string,
 * and ids are strings, so a number-looking text is quoted there; elsewhere what was typed is
 * sent as is (so `2` means the number, `"2"` the string, as in the protocol).
 */
export function filterValue(filter: Filter): string {
  const value = filter.value.trim();
  const needsString = filter.op === 'like' || (filter.field === 'id' && ['eq', 'not', 'like'].includes(filter.op));
  if (needsString && isJson(value) && typeof JSON.parse(value) !== 'string') return JSON.stringify(value);
  if (filter.field === 'id' && (filter.op === 'in' || filter.op === 'exclude')) {
    return value
      .split(',')
      .map((item) =>
        isJson(item.trim()) && typeof JSON.parse(item.trim()) !== 'string' ? JSON.stringify(item.trim()) : item.trim(),
      )
      .join(',');
  }
  return value;
}

function filterParamName(filter: Filter): string {
  return filter.op === 'eq' ? filter.field : `${filter.op}_${filter.field}`;
}

/** The query string for the server (and for the console's URL). */
export function toSearchParams(query: ListQuery): URLSearchParams {
  const params = new URLSearchParams();
  for (const filter of query.filters) {
    if (!FIELD.test(filter.field) || filter.value.trim() === '') continue;
    params.append(filterParamName(filter), filterValue(filter));
  }
  if (query.sort.length) params.set('_sort', query.sort.join(','));
  if (query.fields.length) params.set('_fields', query.fields.join(','));
  return params;
}

/** Clicking a column: ascending, then descending, then back to the default order. */
export function nextSort(current: string[], field: string): string[] {
  const [first] = current;
  if (first === field) return [`-${field}`];
  if (first === `-${field}`) return [];
  return [field];
}

export function sortDirection(current: string[], field: string): 'asc' | 'desc' | null {
  const [first] = current;
  if (first === field || first === `+${field}`) return 'asc';
  if (first === `-${field}`) return 'desc';
  return null;
}

/** A dotted path into an object: `person.name`. */
export function getPath(object: unknown, path: string): unknown {
  let value: unknown = object;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
