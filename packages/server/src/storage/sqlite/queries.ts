/**
 * SQL for filters, sorting and keyset pagination in SQLite's dialect: the SQLite twin of
 * sql/queries.ts, with the same semantics (types.ts).
 *
 * Security rule: every value AND every field path is a bound parameter; a path is bound as a
 * JSON path (`$."a"."b"`) whose keys are quoted and escaped as JSON strings (jsonPaths), so a
 * hostile field name is just a key that matches nothing. Only fixed fragments are written into the SQL text.
 * (SQLite's path parser stops a quoted key at an escaped NUL, `\u0000`: a key containing NUL
 * may match a longer key. Harmless, and no such key is expected.)
 *
 * Values compare by a key of two SQL values, compared as a row value `(rank, value)`:
 * - rank: null 0 < string 1 < number 2 < boolean 3 < array 4 < object 5 (SQL NULL when the
 *   field is missing: a missing field then matches no comparison and sorts last ascending,
 *   first descending, with NULLS LAST / NULLS FIRST);
 * - value: the string (code point order, PostgreSQL's "C" collation), the number, 0/1 for
 *   false/true, 0 for null; for an array or an object, a blob in jsonb's order (jsonb.ts).
 * This is jsonb's order. Comparisons with a scalar, the common case, skip the key: they read the
 * value's type, then the value if its type has the rank of the scalar's (a JSON lookup costs
 * ~70 ns a row); `contains` of scalars looks each up among the elements in SQL; only arrays and
 * objects go through the JavaScript functions of jsonb.ts.
 *
 * `like` folds case as filters/like.ts says (Unicode simple lowercase), not as SQLite's LIKE
 * alone would (ASCII letters only, without ICU).
 */
import { isIndexablePath } from '../declared-indexes.js';
import { sqlLike } from '../filters/like.js';
import { type Comparison, compareNumbers, keysetCondition, sortingOrDefault } from '../keyset.js';
import { scopeWhere } from '../scope-where.js';
import type { Filter, ListOptions, Scope, Sort } from '../types.js';
import type { SqlValue } from './connection.js';
import {
  atPath,
  element,
  type FieldRef,
  isScalar,
  type JsonSql,
  jsonPaths,
  keyOf,
  OBJECT_COLUMNS,
  RANK_BY_TYPE,
  rankOf,
  type Scalar,
  sortKeyOf,
  typesOf,
} from './json-fields.js';
import { jsonbSortKey } from './jsonb.js';

/**
 * SQLite's LIKE costs (string length × the longest piece of the pattern between two `*`): it is
 * run for patterns whose pieces are at most this long, the linear `quire_like` for the others.
 */
const NATIVE_LIKE_MAX_PIECE = 32;
/** Nor past this many characters to fold by `replace()` before it (the Kelvin sign and İ of ASCII patterns). */
const NATIVE_LIKE_MAX_VARIANTS = 4;

/**
 * The URIs below `uri` (starting with `uri + '/'`) are the strings in [uri + '/', uri + '0')
 * in binary order ('0' follows '/'): a range the indexes serve, where LIKE would be
 * case-insensitive in SQLite and need escaping.
 */
export function belowRange(uri: string): [string, string] {
  return [`${uri}/`, `${uri}0`];
}

/** Whether `value` can be compared to the column natively (same result as the key, and indexed). */
function fitsColumn(ref: FieldRef, value: unknown): value is string | number {
  if (ref.column?.type === 'text') return typeof value === 'string';
  if (ref.column?.type === 'integer') return Number.isSafeInteger(value);
  return false;
}

export interface QueryBuilderOptions {
  /** The SQL of the JSON document fields are read from (default: the `data` column). */
  document?: string;
  /** The fields read from columns of the row (default: `id` and `last_modified` of the objects). */
  columns?: Readonly<Record<string, FieldRef>>;
  /** The fields with a declared index, read through the index's own expressions. */
  indexed?: ReadonlySet<string>;
}

/** Collects the named parameters of one statement and builds its conditions. */
export class QueryBuilder {
  readonly params: Record<string, SqlValue> = {};
  #count = 0;
  readonly #paths = new Map<string, string>();
  readonly #document: string;
  readonly #columns: Readonly<Record<string, FieldRef>>;
  readonly #indexed: ReadonlySet<string>;

  constructor({ document = 'data', columns = OBJECT_COLUMNS, indexed = new Set() }: QueryBuilderOptions = {}) {
    this.#document = document;
    this.#columns = columns;
    this.#indexed = indexed;
  }

  /** Binds a value and returns its placeholder. */
  bind(value: SqlValue): string {
    const name = `p${++this.#count}`;
    this.params[name] = value;
    return `@${name}`;
  }

  /** Binds a JSON value as text. */
  bindJson(value: unknown): string {
    return this.bind(JSON.stringify(value ?? null));
  }

  field(field: string): FieldRef {
    const column = Object.hasOwn(this.#columns, field) ? this.#columns[field] : undefined;
    if (column) return column;
    if (this.#indexed.has(field) && isIndexablePath(field)) {
      // The one exception to bound paths: SQLite matches an index expression only to the same
      // expression, never through a parameter, so a declared field's path is written as its
      // index has it. Its segments are letters, digits, `_` and `-` and do not start with a digit
      // (isIndexablePath, checked again here): one JSON path, whose literal is plain.
      const [path] = jsonPaths(field);
      const value = atPath(this.#document, `'${path}'`);
      const json = `(${this.#document} -> '${path}')`;
      const ordered = `(CASE WHEN ${json} IS NULL THEN x'ff' ELSE quire_jsonb_key(${json}) END)`;
      return { value, key: keyOf(value), elements: `json_each(${this.#document}, '${path}')`, ordered };
    }
    let path = this.#paths.get(field);
    if (path === undefined) {
      const candidates = jsonPaths(field).map((candidate) => this.bind(candidate));
      // The one of the candidate paths that exists (the last, when none does).
      const last = candidates.pop()!;
      const tries = candidates.map(
        (candidate) => `WHEN json_type(${this.#document}, ${candidate}) IS NOT NULL THEN ${candidate}`,
      );
      path = tries.length === 0 ? last : `(CASE ${tries.join(' ')} ELSE ${last} END)`;
      this.#paths.set(field, path);
    }
    const value = atPath(this.#document, path);
    return { value, key: keyOf(value), elements: `json_each(${this.#document}, ${path})` };
  }

  /** The key of a JSON value given by the caller. */
  #keyOfValue(value: unknown): [string, string] {
    if (value === null || value === undefined) return ['0', '0'];
    if (typeof value === 'string') return ['1', this.bind(value)];
    if (typeof value === 'number') return ['2', this.bind(value)];
    if (typeof value === 'boolean') return ['3', value ? '1' : '0'];
    return [Array.isArray(value) ? '4' : '5', this.bind(jsonbSortKey(JSON.stringify(value)))];
  }

  /** `WHERE` conditions selecting the scope's objects matching the options (../scope-where.ts). */
  where(scope: Scope, options: ListOptions): string {
    return scopeWhere(this, scope, options);
  }

  filter({ field, operator, value }: Filter): string {
    const ref = this.field(field);
    switch (operator) {
      case 'eq':
        return this.#compare(ref, '=', value, false);
      case 'not':
        return this.#compare(ref, '<>', value, true);
      case 'lt':
        return this.#compare(ref, '<', value, false);
      case 'max':
        return this.#compare(ref, '<=', value, false);
      case 'gt':
        return this.#compare(ref, '>', value, true);
      case 'min':
        return this.#compare(ref, '>=', value, true);
      case 'in':
        return this.#inList(ref, toArray(value));
      case 'exclude':
        return `NOT ${this.#inList(ref, toArray(value))}`;
      case 'like': {
        if (ref.column) return ref.column.type === 'text' ? this.#like(ref.column.sql, String(value)).sql : 'FALSE';
        const { sql, native } = this.#like(ref.value!.atom, String(value));
        const isText = `${ref.value!.type} = 'text'`;
        // SQLite's LIKE before the type test, as most rows fail it; the type first before a call into JavaScript.
        return native ? `(${sql} AND ${isText})` : `(${isText} AND ${sql})`;
      }
      case 'has':
        if (!ref.value) return value ? 'TRUE' : 'FALSE';
        return `${ref.value.type} IS ${value ? 'NOT NULL' : 'NULL'}`;
      case 'contains': {
        if (!ref.value || !ref.elements) return 'FALSE';
        const wanted = unique(toArray(value));
        const isArray = `${ref.value.type} = 'array'`;
        if (wanted.every(isScalar)) {
          // One lookup among the field's elements per wanted value.
          const each = wanted.map(
            (one) => `EXISTS (SELECT 1 FROM ${ref.elements} AS held WHERE ${this.#equalsScalar(element('held'), one)})`,
          );
          return `(${[isArray, ...each].join(' AND ')})`;
        }
        return `(${isArray} AND quire_jsonb_contains(${ref.value.json}, ${this.bindJson(wanted)}, 0))`;
      }
      case 'contains_any': {
        if (!ref.value || !ref.elements) return 'FALSE';
        const wanted = toArray(value);
        const isArray = `${ref.value.type} = 'array'`;
        if (wanted.every(isScalar))
          return (
            `(${isArray} AND EXISTS (SELECT 1 FROM ${ref.elements} AS held` +
            ` WHERE ${this.#inScalars(element('held'), wanted)}))`
          );
        return `(${isArray} AND quire_jsonb_contains(${ref.value.json}, ${this.bindJson(wanted)}, 1))`;
      }
      default:
        throw new TypeError(`unknown filter operator ${JSON.stringify(operator satisfies never)}`);
    }
  }

  /**
   * A string matching a `like` pattern (filters/like.ts): SQLite's LIKE, which folds ASCII
   * letters, after `replace()` folds the other characters the pattern needs, when that is cheap;
   * else the reference matcher itself.
   */
  #like(text: string, value: string): { sql: string; native: boolean } {
    const { pattern, from, to } = sqlLike(value);
    const variants = [...from];
    if (
      variants.length > NATIVE_LIKE_MAX_VARIANTS ||
      value.split('*').some((piece) => piece.length > NATIVE_LIKE_MAX_PIECE)
    ) {
      return { sql: `quire_like(${text}, ${this.bind(value)})`, native: false };
    }
    const targets = [...to];
    const folded = variants.reduce(
      (sql, variant, index) => `replace(${sql}, ${this.bind(variant)}, ${this.bind(targets[index]!)})`,
      text,
    );
    return { sql: `${folded} LIKE ${this.bind(pattern)} ESCAPE '\\'`, native: true };
  }

  /** `ORDER BY` list; missing fields last ascending, first descending. */
  orderBy(sorting: Sort[] | undefined): string {
    return sortingOrDefault(sorting)
      .map(({ field, direction }) => {
        const ref = this.field(field);
        if (ref.column) return `${ref.column.sql} ${direction === 1 ? 'ASC' : 'DESC'}`;
        if (ref.ordered) return `${ref.ordered} ${direction === 1 ? 'ASC' : 'DESC'}`;
        const [rank, value] = ref.value ? sortKeyOf(ref.value) : ref.key;
        return direction === 1 ? `${rank} ASC NULLS LAST, ${value} ASC` : `${rank} DESC NULLS FIRST, ${value} DESC`;
      })
      .join(', ');
  }

  /** Keyset continuation: rows strictly after `after` in `sorting` order (see keyset.ts). */
  after(sorting: Sort[], after: Record<string, unknown>): string {
    return keysetCondition(
      sorting,
      (sort) => this.#same(sort, after),
      (sort) => this.#beyond(sort, after),
    );
  }

  #same({ field }: Sort, after: Record<string, unknown>): string {
    const ref = this.field(field);
    const value = Object.hasOwn(after, field) ? after[field] : undefined;
    if (value === undefined) return ref.value ? `${ref.value.type} IS NULL` : 'FALSE';
    return this.#compare(ref, '=', value, false);
  }

  #beyond({ field, direction }: Sort, after: Record<string, unknown>): string {
    const ref = this.field(field);
    const value = Object.hasOwn(after, field) ? after[field] : undefined;
    if (direction === 1) {
      // Ascending, missing last: after a missing value comes nothing; after a value come
      // greater values, then the missing ones.
      if (value === undefined) return 'FALSE';
      return this.#compare(ref, '>', value, true);
    }
    // Descending, missing first: after a missing value comes every present one.
    if (value === undefined) return ref.value ? `${ref.value.type} IS NOT NULL` : 'TRUE';
    return this.#compare(ref, '<', value, false);
  }

  /**
   * The field compared to `value`, by column when the value has the column's type (uses the
   * indexes), else by key; `missing` is the result for an object lacking the field.
   */
  #compare(ref: FieldRef, op: Comparison, value: unknown, missing: boolean): string {
    if (fitsColumn(ref, value)) return `${ref.column!.sql} ${op} ${this.bind(value)}`;
    // A declared field: missing ranks after every value, so it matches `>`, `>=` and `<>` (the
    // callers' `missing` is then true) and nothing else, in one condition an index range serves.
    if (ref.ordered) return `${ref.ordered} ${op} ${this.bind(jsonbSortKey(JSON.stringify(value ?? null)))}`;
    if (ref.value && isScalar(value)) {
      if (op === '=') return this.#equalsScalar(ref.value, value);
      return this.#compareScalar(ref.value, op, value, missing);
    }
    const condition = `(${ref.key.join(', ')}) ${op} (${this.#keyOfValue(value).join(', ')})`;
    return ref.value && missing ? `(${ref.value.type} IS NULL OR ${condition})` : condition;
  }

  /**
   * A JSON value compared to a scalar, reading the value once or twice rather than building its
   * key: a value of another rank compares by rank (known here), one of the same rank by value.
   */
  #compareScalar(json: JsonSql, op: Comparison, value: Scalar, missing: boolean): string {
    const rank = rankOf(value);
    const same = value === null ? String(compareNumbers(0, op, 0)) : `${json.atom} ${op} ${this.#atomOf(value)}`;
    // The value's own types first: most rows have them (each WHEN is a string comparison).
    const branches = [...RANK_BY_TYPE]
      .sort(([, a], [, b]) => Number(b === rank) - Number(a === rank))
      .map(
        ([type, typeRank]) =>
          `WHEN '${type}' THEN ${typeRank === rank ? same : String(compareNumbers(typeRank, op, rank))}`,
      );
    return `(CASE ${json.type} ${branches.join(' ')} ELSE ${String(missing)} END)`;
  }

  /** A JSON value equal to a scalar: the value test first, as most rows fail it. */
  #equalsScalar(json: JsonSql, value: Scalar): string {
    if (value === null) return `${json.type} = 'null'`;
    if (typeof value === 'boolean') return `${json.type} = '${value}'`;
    return `(${json.atom} = ${this.bind(value)} AND ${json.type} IN (${typesOf(rankOf(value))}))`;
  }

  /** A JSON value among scalars (never NULL: false for a missing value). */
  #inScalars(json: JsonSql, values: Scalar[]): string {
    const strings = values.filter((value) => typeof value === 'string');
    const numbers = values.filter((value) => typeof value === 'number');
    const constants = [true, false, null].filter((constant) => values.includes(constant));
    // Terms ORed rather than a CASE by type: SQLite then builds each list once per statement.
    const terms: string[] = [];
    if (strings.length > 0)
      terms.push(
        `(${json.atom} IN (SELECT value FROM json_each(${this.bindJson(strings)})) AND ${json.type} = 'text')`,
      );
    if (numbers.length > 0)
      terms.push(
        `(${json.atom} IN (SELECT value FROM json_each(${this.bindJson(numbers)}))` +
          ` AND ${json.type} IN (${typesOf(2)}))`,
      );
    if (constants.length > 0)
      terms.push(`${json.type} IN (${constants.map((constant) => `'${String(constant)}'`).join(', ')})`);
    return terms.length > 0 ? `coalesce(${terms.join(' OR ')}, FALSE)` : 'FALSE';
  }

  /** The field among `values` (never NULL: false for a missing field). */
  #inList(ref: FieldRef, values: unknown[]): string {
    if (ref.column && values.every((value) => fitsColumn(ref, value))) {
      return `(${ref.column.sql} IN (SELECT value FROM json_each(${this.bindJson(values)})))`;
    }
    if (ref.value && values.every(isScalar)) return this.#inScalars(ref.value, values);
    const candidates =
      `SELECT ${keyOf(element('candidate')).join(', ')}` + ` FROM json_each(${this.bindJson(values)}) AS candidate`;
    return `coalesce((${ref.key.join(', ')}) IN (${candidates}), FALSE)`;
  }

  /** A scalar as SQL: booleans are 0/1, as `json_extract` gives them. */
  #atomOf(value: string | number | boolean): string {
    return typeof value === 'boolean' ? (value ? '1' : '0') : this.bind(value);
  }
}

/** Distinct JSON values (by their JSON text). */
function unique(values: unknown[]): unknown[] {
  return [...new Map(values.map((value) => [JSON.stringify(value), value])).values()];
}

function toArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}
