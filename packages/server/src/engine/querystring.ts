/**
 * Listing parameters (protocol-reference §7): `_since`, `_before`, `_to`, `_limit`, `_sort`,
 * `_fields`, `_token` and the filter grammar `<op>_<field>=<value>`. Produces storage filters
 * and sorts; every bad value is a 400 (errno 107), never a 500.
 */
import { invalidParameter } from '../errors.js';
import { findUnstorableString } from '../http/content.js';
import type { Filter, FilterOperator, Sort } from '../storage/types.js';
import { decodeToken, type PageToken } from './pagination.js';

export interface ListQuery {
  filters: Filter[];
  sorting: Sort[];
  /** `_fields` projection, or null for whole objects. */
  fields: string[] | null;
  /** `_limit` as requested (null when absent or 0). */
  requestedLimit: number | null;
  token: PageToken | null;
  /** A filter targets `last_modified`: tombstones are listed too (§5.4). */
  includeDeleted: boolean;
  /** `_to` was used: answer with a deprecation Alert. */
  usedDeprecatedTo: boolean;
  /** `_expected=<ts>`, a CDN cache-buster: the timestamp the caller knows of (null: absent or not one). */
  expected: number | null;
  /** The parameters as received, in order, for building Next-Page URLs. */
  params: ReadonlyArray<readonly [string, string]>;
}

// Tried in this order, so `contains_any_x` is contains_any on x (§7.1).
const OPERATOR_PATTERN = /^(lt|min|max|not|eq|gt|in|exclude|like|has|contains_any|contains)_([\p{L}\p{N}_.]+)$/u;
const FIELD_PATTERN = /^[\p{L}\p{N}_.]+$/u;
const SORT_ENTRY = /^([-+]?)([\p{L}\p{N}_.]+)$/u;
const MAX_TIMESTAMP = 2n ** 63n;
const EXPECTED_TIMESTAMP = /^"?\d{1,15}"?$/;

// What JSON.parse accepts, told apart without letting it throw: a failed parse costs ~7 µs
// (the error and its stack), and a query holds thousands of values (issue 36: most of the CPU
// of a worst allowed listing was spent in those exceptions).
const JSON_NUMBER = String.raw`-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?`;
const JSON_STRING = String.raw`"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"`;
const JSON_SCALAR = new RegExp(String.raw`^[ \t\n\r]*(?:${JSON_NUMBER}|true|false|null|${JSON_STRING})[ \t\n\r]*$`);
const JSON_COMPOUND = /^[ \t\n\r]*(?:\[[\s\S]*\]|\{[\s\S]*\})[ \t\n\r]*$/;

/** JSON if it parses, the raw string otherwise (§7.2: `author=2` is a number, `author="2"` a string). */
export function nativeValue(raw: string): unknown {
  if (JSON_SCALAR.test(raw)) return JSON.parse(raw);
  if (!JSON_COMPOUND.test(raw)) return raw;
  // An array or object may still not parse: its error then skips the stack, the costly part.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

/** An integer in [0, 2^63], bare or in ETag form `"123"`. */
function parseTimestamp(name: string, raw: string): number {
  const text = raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2 ? raw.slice(1, -1) : raw;
  if (!/^\d+$/.test(text) || BigInt(text) > MAX_TIMESTAMP) {
    throw invalidParameter('querystring', name, `${JSON.stringify(raw)} is not a number`);
  }
  return Number(text);
}

function parseLastModifiedValue(name: string, value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  throw invalidParameter('querystring', name, `Invalid value for ${name}`);
}

/** The operator and field a filter parameter's name says (`like_title` → like on title). */
export function filterOperation(name: string): { operator: FilterOperator; field: string } {
  const match = OPERATOR_PATTERN.exec(name);
  if (match && FIELD_PATTERN.test(match[2] as string))
    return { operator: match[1] as FilterOperator, field: match[2] as string };
  // Kinto treats other names as plain equality on the whole name; they can match nothing
  // useful, but they must not be an error either.
  return { operator: 'eq', field: name };
}

function parseFilter(name: string, raw: string): Filter {
  const { operator, field } = filterOperation(name);

  if (operator === 'in' || operator === 'exclude') {
    // Split on commas first, then JSON-parse each piece; empty pieces are allowed (§7.2).
    let values = raw
      .split(',')
      .filter((piece) => piece !== '')
      .map(nativeValue);
    if (field === 'id' && values.some((value) => typeof value !== 'string')) {
      values = values.map((value) => (typeof value === 'string' ? value : JSON.stringify(value)));
    }
    if (field === 'last_modified') values = values.map((value) => parseLastModifiedValue(name, value));
    return { field, operator, value: values };
  }

  if (operator === 'has') {
    const value = nativeValue(raw);
    const present = !(value === false || value === 0 || value === 'false' || value === '0');
    return { field, operator, value: present };
  }

  if (operator === 'contains' || operator === 'contains_any') {
    if (field === 'id' || field === 'last_modified') {
      throw invalidParameter('querystring', name, `Invalid value for ${name}`);
    }
    const value = nativeValue(raw);
    return { field, operator, value: Array.isArray(value) ? value : [value] };
  }

  const value = nativeValue(raw);
  if (operator === 'like') {
    if (typeof value !== 'string') throw invalidParameter('querystring', name, `Invalid value for ${name}`);
    return { field, operator, value };
  }
  if (field === 'last_modified') return { field, operator, value: parseLastModifiedValue(name, value) };
  if (field === 'id' && typeof value !== 'string') {
    throw invalidParameter('querystring', name, `${raw} is not a string`);
  }
  return { field, operator, value };
}

function parseSort(raw: string): Sort[] {
  const sorting: Sort[] = [];
  for (const entry of raw.split(',')) {
    const match = SORT_ENTRY.exec(entry.trim());
    if (!match) continue; // Kinto silently drops malformed entries (§7.4).
    sorting.push({ field: match[2] as string, direction: match[1] === '-' ? -1 : 1 });
  }
  return sorting;
}

/**
 * Parses a listing's query parameters (or query string, without `?`); every Kinto resource
 * accepts any field name.
 */
export function parseListQuery(query: string | ReadonlyArray<readonly [string, string]>): ListQuery {
  const params = typeof query === 'string' ? [...new URLSearchParams(query)] : query;
  const filters: Filter[] = [];
  let sorting: Sort[] = [];
  let fields: string[] | null = null;
  let requestedLimit: number | null = null;
  let token: PageToken | null = null;
  let includeDeleted = false;
  let usedDeprecatedTo = false;
  let expected: number | null = null;

  for (const [name, raw] of params) {
    if (name.includes('\u0000') || raw.includes('\u0000')) {
      throw invalidParameter('querystring', name.replaceAll('\u0000', ''), 'Invalid character 0x00');
    }
    switch (name) {
      case '_since':
      case '_before':
      case '_to': {
        includeDeleted = true;
        if (name === '_to') usedDeprecatedTo = true;
        // `null` is documented as "ignored"; like Kinto's own test, it still lists tombstones (§17).
        if (raw === 'null') break;
        const value = parseTimestamp(name, raw);
        filters.push({ field: 'last_modified', operator: name === '_since' ? 'gt' : 'lt', value });
        break;
      }
      case '_limit': {
        if (!/^\d+$/.test(raw))
          throw invalidParameter('querystring', '_limit', `${JSON.stringify(raw)} is not a number`);
        const limit = Number(raw);
        requestedLimit = limit > 0 ? limit : null;
        break;
      }
      case '_sort':
        sorting = parseSort(raw);
        break;
      case '_fields':
        fields = raw
          .split(',')
          .map((field) => field.trim())
          .filter(Boolean);
        break;
      case '_token':
        token = raw === '' ? null : decodeToken(raw);
        break;
      case '_expected':
        // Never a filter or an error (clients send what they read, quoted or not); only its cache effect.
        expected = EXPECTED_TIMESTAMP.test(raw) ? Number(raw.replaceAll('"', '')) : null;
        break;
      default: {
        // Every other `_xxx` is reserved and ignored.
        if (name.startsWith('_')) break;
        const filter = parseFilter(name, raw);
        // `"\u0000"`, `"\ud800"`: nothing stored can hold them, and PostgreSQL refuses them as values.
        const unstorable = findUnstorableString(filter.value);
        if (unstorable) throw invalidParameter('querystring', name, unstorable);
        if (filter.field === 'last_modified') includeDeleted = true;
        filters.push(filter);
      }
    }
  }

  // `-last_modified` ends every order, so pagination has a unique tie-breaker (§7.4).
  if (!sorting.some((sort) => sort.field === 'last_modified')) sorting.push({ field: 'last_modified', direction: -1 });

  return { filters, sorting, fields, requestedLimit, token, includeDeleted, usedDeprecatedTo, expected, params };
}

/**
 * `_fields` projection (§7.5): keeps the listed (possibly dotted) fields plus `id` and
 * `last_modified`. Unlike Kinto, tombstones keep `deleted: true` — a sync client must always
 * be able to tell a deletion from a sparse record.
 */
export function projectFields(object: Record<string, unknown>, fields: string[]): Record<string, unknown> {
  return compileProjection(fields)(object);
}

/** The fields of a projection as a tree of their segments; `whole`: the value there is kept as it is. */
interface FieldTree {
  whole: boolean;
  children: Map<string, FieldTree>;
}

/**
 * `projectFields` made ready for many objects (a page): the paths split once, into a tree, so
 * that each object costs the fields asked, not the paths × their segments. A field and one of
 * its sub-fields (`a`, `a.b`) keep `a` whole.
 */
export function compileProjection(
  fields: readonly string[],
): (object: Record<string, unknown>) => Record<string, unknown> {
  const root: FieldTree = { whole: false, children: new Map() };
  for (const path of ['id', 'last_modified', ...fields]) {
    let node = root;
    for (const part of path.split('.')) {
      let child = node.children.get(part);
      if (!child) {
        child = { whole: false, children: new Map() };
        node.children.set(part, child);
      }
      node = child;
    }
    node.whole = true;
  }
  return (object) => {
    const result = project(object, root) ?? {};
    if (object.deleted === true) result.deleted = true;
    return { ...result };
  };
}

/** The fields of `tree` in `object` (null when none is there); nested objects without prototype. */
function project(object: Record<string, unknown>, tree: FieldTree): Record<string, unknown> | null {
  let result: Record<string, unknown> | null = null;
  for (const [key, child] of tree.children) {
    if (!Object.hasOwn(object, key)) continue;
    const value = object[key];
    let kept: unknown;
    if (child.whole) kept = value;
    else if (value !== null && typeof value === 'object' && !Array.isArray(value))
      kept = project(value as Record<string, unknown>, child) ?? undefined;
    if (kept === undefined) continue;
    result ??= Object.create(null) as Record<string, unknown>;
    result[key] = kept;
  }
  return result;
}
