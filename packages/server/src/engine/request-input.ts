/**
 * The input a request carries in its URL, read once and bounded for every way in — a request
 * from the network (http/query-limits.ts, for every route) and a batch's sub-request
 * (views/batch-direct.ts; the router's hook for the others) alike: the path's length and
 * segments, then the query string's parameters, filters, lists, field paths, `_fields`, `_sort`
 * and `like_` patterns, each against its setting (engine/settings.ts, `INPUT_SETTINGS`). What
 * is past a limit is a 400 (errno 107) naming the setting, before any work is done for it. The
 * listing the parameters describe (§7) is parsed from them when first asked (querystring.ts).
 */
import { invalidParameter } from '../errors.js';
import { patternLength } from '../storage/filters/like.js';
import { filterOperation, type ListQuery, nativeValue, parseListQuery } from './querystring.js';
import type { InputSettings } from './settings.js';

/** A request's query string: its parameters in order, and the listing they ask for, parsed when first asked. */
export class RequestQuery {
  #listing: ListQuery | undefined;

  constructor(
    /** The query string as sent (without `?`). */
    readonly text: string,
    readonly params: ReadonlyArray<readonly [string, string]>,
  ) {}

  /** The listing parameters (§7), parsed on first use: a bad value is a 400 (errno 107). */
  get listing(): ListQuery {
    this.#listing ??= parseListQuery(this.params);
    return this.#listing;
  }

  /** The first value of `name`, or null. */
  get(name: string): string | null {
    for (const [key, value] of this.params) if (key === name) return value;
    return null;
  }
}

/** The path and query string of a request, checked against the input limits (400 past one). */
export function readInput(path: string, query: string, limits: InputSettings): RequestQuery {
  checkPath(path, limits);
  if (query === '') return new RequestQuery('', []);
  const params: Array<[string, string]> = [];
  for (const param of new URLSearchParams(query)) {
    params.push(param);
    if (params.length > limits.max_query_params)
      throw tooMany(null, `more than max_query_params (${limits.max_query_params}) parameters`);
  }
  let filters = 0;
  for (const [name, value] of params) {
    if (name === '_sort') checkSort(value, limits);
    else if (name === '_fields') checkFields(value, limits);
    else if (!name.startsWith('_')) {
      filters++;
      checkFilter(name, value, limits);
    }
  }
  if (filters > limits.max_query_filters)
    throw tooMany(null, `more than max_query_filters (${limits.max_query_filters}) filters`);
  return new RequestQuery(query, params);
}

function checkPath(path: string, limits: InputSettings): void {
  if (path.length > limits.max_path_bytes)
    throw invalidParameter('path', null, `path is longer than max_path_bytes (${limits.max_path_bytes} bytes)`);
  let segments = 0;
  for (let at = path.indexOf('/'); at !== -1; at = path.indexOf('/', at + 1)) segments++;
  if (segments > limits.max_path_segments) {
    throw invalidParameter('path', null, `path has more than max_path_segments (${limits.max_path_segments}) segments`);
  }
}

function checkSort(value: string, limits: InputSettings): void {
  const entries = value.split(',');
  if (entries.length > limits.max_query_sort_fields)
    throw tooMany('_sort', `_sort has more than max_query_sort_fields (${limits.max_query_sort_fields}) fields`);
  for (const entry of entries) checkField('_sort', entry.trim().replace(/^[-+]/, ''), limits);
}

function checkFields(value: string, limits: InputSettings): void {
  const fields = value.split(',');
  if (fields.length > limits.max_query_fields)
    throw tooMany('_fields', `_fields has more than max_query_fields (${limits.max_query_fields}) fields`);
  for (const field of fields) checkField('_fields', field.trim(), limits);
}

function checkFilter(name: string, value: string, limits: InputSettings): void {
  const { operator, field } = filterOperation(name);
  checkField(name, field, limits);
  switch (operator) {
    case 'in':
    case 'exclude':
      if (countOf(value, ',') + 1 > limits.max_query_list_length) throw longList(name, limits);
      break;
    case 'contains':
    case 'contains_any': {
      // A JSON array (or one value): parsed only when its commas could be past the limit.
      const max = limits.max_query_contains_length;
      if (countOf(value, ',') + 1 > max) {
        const parsed = nativeValue(value);
        if (Array.isArray(parsed) && parsed.length > max)
          throw tooMany(name, `${name} has more than max_query_contains_length (${max}) values`);
      }
      break;
    }
    case 'like': {
      const pattern = nativeValue(value);
      if (typeof pattern === 'string' && patternLength(pattern) > limits.max_query_like_length) {
        throw invalidParameter(
          'querystring',
          name,
          `${name} is longer than max_query_like_length (${limits.max_query_like_length} characters)`,
        );
      }
      break;
    }
  }
}

/** A field path of a filter, `_sort` or `_fields`: its length and its depth. */
function checkField(name: string, field: string, limits: InputSettings): void {
  if (field.length > limits.max_query_field_length) {
    throw invalidParameter(
      'querystring',
      name,
      `${name}: a field path is longer than max_query_field_length (${limits.max_query_field_length} characters)`,
    );
  }
  if (countOf(field, '.') + 1 > limits.max_query_field_depth) {
    throw invalidParameter(
      'querystring',
      name,
      `${name}: a field path has more than max_query_field_depth (${limits.max_query_field_depth}) segments`,
    );
  }
}

function longList(name: string, limits: InputSettings) {
  return tooMany(name, `${name} has more than max_query_list_length (${limits.max_query_list_length}) values`);
}

function tooMany(name: string | null, message: string) {
  return invalidParameter('querystring', name, message);
}

function countOf(text: string, char: string): number {
  let count = 0;
  for (let at = text.indexOf(char); at !== -1; at = text.indexOf(char, at + 1)) count++;
  return count;
}
