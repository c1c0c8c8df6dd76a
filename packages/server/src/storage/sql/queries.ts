/**
 * SQL for filters, sorting and keyset pagination over the `objects` table.
 *
 * Security rule: every value AND every field path is a bound parameter (`data #> $3::text[]`);
 * only fixed fragments (operators, ASC/DESC, column names chosen here) are written into the
 * SQL text. A hostile field name is just a path that matches nothing.
 *
 * Ordering: the protocol ranks types null < string < number < boolean < array < object.
 * jsonb ranks them so only inside containers: at top level a scalar is stored as a one-element
 * pseudo-array, so `[]` sorts before `null` and `[0]` before `false`. Values are therefore
 * compared and sorted wrapped in a one-element array (`jsonb_build_array(v)`), where jsonb's
 * order is exactly the protocol's. A missing field is SQL NULL, which sorts last ascending and
 * first descending, as the protocol wants.
 */
import { isIndexablePath } from '../declared-indexes.js';
import { sqlLike } from '../filters/like.js';
import { type Comparison, compareNumbers, keysetCondition, sortingOrDefault } from '../keyset.js';
import { scopeWhere } from '../scope-where.js';
import type { Filter, ListOptions, Scope, Sort } from '../types.js';

/** How one field path is read from a row. */
export interface FieldRef {
  /** The value as jsonb; SQL NULL when the object lacks the field. */
  readonly jsonb: string;
  /** The value wrapped for comparisons and sorting (see above); SQL NULL when missing. */
  readonly key: string;
  /** A typed column (id, last_modified), compared natively when the value has its type. */
  readonly column?: { readonly sql: string; readonly type: 'text' | 'bigint' };
  /** Whether an object can lack the field (id and last_modified are always there). */
  readonly nullable: boolean;
  /**
   * A field with a declared index (declared-indexes.ts): the key, with `{}` for a missing field
   * (jsonb puts an object after every array, so after every key): a missing field comes after
   * every value as the protocol orders it, and one range of the index, over one column whose
   * statistics the planner has, serves a filter, missing objects included, and a sort.
   */
  readonly ordered?: string;
}

const ID: FieldRef = {
  jsonb: 'to_jsonb(id)',
  key: 'jsonb_build_array(id)',
  column: { sql: 'id', type: 'text' },
  nullable: false,
};
const LAST_MODIFIED: FieldRef = {
  jsonb: 'to_jsonb(last_modified)',
  key: 'jsonb_build_array(last_modified)',
  column: { sql: 'last_modified', type: 'bigint' },
  nullable: false,
};

const OBJECT_COLUMNS: Readonly<Record<string, FieldRef>> = { id: ID, last_modified: LAST_MODIFIED };

/** A text column that may be NULL (the field is missing), e.g. `bucket_id` of a permission entry. */
export function nullableTextColumn(sql: string): FieldRef {
  return {
    jsonb: `to_jsonb(${sql})`,
    key: `(CASE WHEN ${sql} IS NULL THEN NULL ELSE jsonb_build_array(${sql}) END)`,
    column: { sql, type: 'text' },
    nullable: true,
  };
}

/** Whether `value` can be compared to the column natively (same result as jsonb, and indexed). */
function fitsColumn(ref: FieldRef, value: unknown): boolean {
  if (ref.column?.type === 'text') return typeof value === 'string';
  if (ref.column?.type === 'bigint') return Number.isSafeInteger(value);
  return false;
}

/** Escapes a string for use as a literal LIKE prefix. */
export function likePrefix(value: string): string {
  return `${value.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
}

/** Collects the parameters of one statement and builds its conditions. */
export class QueryBuilder {
  readonly params: unknown[] = [];
  /** How each field path not read from a column is read from `data`, its path bound once. */
  readonly #paths = new Map<string, string>();
  readonly #columns: Readonly<Record<string, FieldRef>>;
  readonly #indexed: ReadonlySet<string>;

  /**
   * `columns`: the fields read from columns of the row rather than from its `data` jsonb
   * (default: `id` and `last_modified` of the objects table). `indexed`: the fields with a
   * declared index, read through the index's own expressions.
   */
  constructor({
    columns = OBJECT_COLUMNS,
    indexed = new Set(),
  }: { columns?: Readonly<Record<string, FieldRef>>; indexed?: ReadonlySet<string> } = {}) {
    this.#columns = columns;
    this.#indexed = indexed;
  }

  /** Binds a value and returns its placeholder. */
  bind(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  /** Binds a value as jsonb (drivers would turn JS arrays into SQL arrays, so send JSON text). */
  bindJson(value: unknown): string {
    return `${this.bind(JSON.stringify(value ?? null))}::jsonb`;
  }

  field(path: string): FieldRef {
    const column = Object.hasOwn(this.#columns, path) ? this.#columns[path] : undefined;
    if (column) return column;
    if (this.#indexed.has(path) && isIndexablePath(path)) {
      // The one exception to bound paths: PostgreSQL matches an index expression only to the
      // same expression, so a declared field's path is written as its index has it. Its segments
      // are letters, digits, `_` and `-` (isIndexablePath, checked again here): a literal of them is plain.
      // The key wraps the value as jsonb_build_array does, with jsonb_set, which (unlike it) is
      // IMMUTABLE, as an index expression must be, and NULL for a missing field (STRICT).
      const jsonb = `(data #> '{${path.split('.').join(',')}}'::text[])`;
      const key = `jsonb_set('[null]'::jsonb, '{0}', ${jsonb})`;
      return { jsonb, key, nullable: true, ordered: `COALESCE(${key}, '{}'::jsonb)` };
    }
    let jsonb = this.#paths.get(path);
    if (jsonb === undefined) {
      // One key read by `->` (data is an object), cheaper than a path walked by `#>`: its
      // array is taken apart at every call, and a filter or sort reads each of a million rows.
      const segments = path.split('.');
      jsonb = segments.length === 1 ? `(data -> ${this.bind(path)}::text)` : `(data #> ${this.bind(segments)}::text[])`;
      this.#paths.set(path, jsonb);
    }
    // The key as the declared index's: one read of the value where `CASE WHEN … IS NULL` read it
    // twice, and jsonb_set builds the array for less than jsonb_build_array (a sort at 1M: 1.6x
    // the bare statement's time, 1.3x with this key).
    return { jsonb, key: `jsonb_set('[null]'::jsonb, '{0}', ${jsonb})`, nullable: true };
  }

  /** Whether a filter or sort on `path` reads each row's `data` (neither a column nor a declared index). */
  readsData(path: string): boolean {
    return !Object.hasOwn(this.#columns, path) && !(this.#indexed.has(path) && isIndexablePath(path));
  }

  /** `WHERE` conditions selecting the scope's objects matching the options (../scope-where.ts). */
  where(scope: Scope, options: ListOptions): string {
    return scopeWhere(this, scope, options);
  }

  filter({ field, operator, value }: Filter): string {
    const ref = this.field(field);
    const ordered = ref.ordered ? ORDERED_OPERATORS[operator] : undefined;
    if (ordered) return this.#orderedCompare(ref, ordered, value);
    switch (operator) {
      case 'eq':
        return this.#compare(ref, '=', value);
      case 'not':
        return orMissing(ref, this.#compare(ref, '<>', value));
      case 'lt':
        return this.#compare(ref, '<', value);
      case 'max':
        return this.#compare(ref, '<=', value);
      case 'gt':
        return orMissing(ref, this.#compare(ref, '>', value));
      case 'min':
        return orMissing(ref, this.#compare(ref, '>=', value));
      case 'in':
        return this.#inList(ref, toArray(value));
      case 'exclude':
        return orMissing(ref, `NOT (${this.#inList(ref, toArray(value))})`);
      case 'like':
        if (ref.column?.type === 'text') return this.#like(ref.column.sql, String(value));
        return `(jsonb_typeof(${ref.jsonb}) = 'string' AND ${this.#like(`(${ref.jsonb} #>> '{}')`, String(value))})`;
      case 'has':
        if (!ref.nullable) return value ? 'TRUE' : 'FALSE';
        return `${ref.jsonb} IS ${value ? 'NOT NULL' : 'NULL'}`;
      case 'contains':
        return `(jsonb_typeof(${ref.jsonb}) = 'array' AND ${ref.jsonb} @> ${this.bindJson(toArray(value))})`;
      case 'contains_any':
        return (
          `(jsonb_typeof(${ref.jsonb}) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements(` +
          `${this.bindJson(toArray(value))}) AS candidate(value) ` +
          `WHERE ${ref.jsonb} @> jsonb_build_array(candidate.value)))`
        );
      default:
        throw new TypeError(`unknown filter operator ${JSON.stringify(operator satisfies never)}`);
    }
  }

  /**
   * A string matching a `like` pattern (filters/like.ts). Not ILIKE, whose folding follows the
   * database's locale (ASCII only under C, and PGlite's): ASCII letters are lowered under the C
   * collation, the other characters the pattern needs by `translate`, then LIKE compares.
   * (Kinto passes `%` and `_` through, so they act as wildcards there; here they are literal.)
   */
  #like(text: string, value: string): string {
    const { pattern, from, to } = sqlLike(value);
    const lowered = `lower(${text} COLLATE "C")`;
    const folded = from === '' ? lowered : `translate(${lowered}, ${this.bind(from)}, ${this.bind(to)})`;
    return `${folded} LIKE ${this.bind(pattern)} ESCAPE '\\'`;
  }

  /** `ORDER BY` list; missing fields last ascending, first descending. */
  orderBy(sorting: Sort[] | undefined): string {
    return sortingOrDefault(sorting)
      .map(({ field, direction }) => {
        const ref = this.field(field);
        if (ref.ordered) return `${ref.ordered} ${direction === 1 ? 'ASC' : 'DESC'}`;
        return `${ref.column?.sql ?? ref.key} ${direction === 1 ? 'ASC NULLS LAST' : 'DESC NULLS FIRST'}`;
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
    const value = after[field];
    if (value === undefined) return ref.nullable ? `${ref.jsonb} IS NULL` : 'FALSE';
    if (ref.ordered) return this.#orderedCompare(ref, '=', value);
    return this.#compare(ref, '=', value);
  }

  #beyond({ field, direction }: Sort, after: Record<string, unknown>): string {
    const ref = this.field(field);
    const value = after[field];
    if (direction === 1) {
      // Ascending, missing last: after a missing value comes nothing; after a value come
      // greater values, then the missing ones.
      if (value === undefined) return 'FALSE';
      if (ref.ordered) return this.#orderedCompare(ref, '>', value);
      return orMissing(ref, this.#compare(ref, '>', value));
    }
    // Descending, missing first: after a missing value comes every present one.
    if (value === undefined) return ref.nullable ? `${ref.jsonb} IS NOT NULL` : 'TRUE';
    if (ref.ordered) return this.#orderedCompare(ref, '<', value);
    return this.#compare(ref, '<', value);
  }

  /**
   * A declared field compared to `value` by its ordered key: a missing field (`{}`) comes after
   * every value, so it matches `>`, `>=` and `<>` and nothing else, as the protocol wants
   * (types.ts), in one condition an index range serves.
   */
  #orderedCompare(ref: FieldRef, op: Comparison, value: unknown): string {
    return `${ref.ordered!} ${op} ${this.bindJson([value])}`;
  }

  /** Column comparison when the value has the column's type (uses the indexes), else jsonb. */
  #compare(ref: FieldRef, op: Comparison, value: unknown): string {
    if (ref.column && fitsColumn(ref, value)) return `${ref.column.sql} ${op} ${this.bind(value)}::${ref.column.type}`;
    if (!ref.column && (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))))
      return this.#compareScalar(ref, op, value);
    return `${ref.key} ${op} ${this.bindJson([value])}`;
  }

  /**
   * A data field compared to a number or a string by its type, as the SQLite builder does: a
   * value of the same type compares natively (jsonb keeps numbers as numeric, and orders strings
   * by the database's collation, as text does), one of another type by rank (known here), a
   * missing one gives NULL. The same answer as comparing keys (jsonb_build_array), without
   * building one per row: a filter that reads a million rows went 3-4 times faster.
   */
  #compareScalar(ref: FieldRef, op: Comparison, value: string | number): string {
    const rank = typeof value === 'number' ? 2 : 1;
    const same =
      typeof value === 'number'
        ? `(${ref.jsonb})::numeric ${op} ${this.bind(value)}::numeric`
        : `(${ref.jsonb} #>> '{}') ${op} ${this.bind(value)}::text`;
    const others = JSONB_RANKS.filter(([, typeRank]) => typeRank !== rank).map(
      ([type, typeRank]) => `WHEN '${type}' THEN ${String(compareNumbers(typeRank, op, rank))}`,
    );
    const type = rank === 2 ? 'number' : 'string';
    return `(CASE jsonb_typeof(${ref.jsonb}) WHEN '${type}' THEN ${same} ${others.join(' ')} END)`;
  }

  #inList(ref: FieldRef, values: unknown[]): string {
    if (ref.column && values.every((value) => fitsColumn(ref, value))) {
      return `${ref.column.sql} = ANY(${this.bind(values)}::${ref.column.type}[])`;
    }
    // Equality needs no wrapping: only jsonb's ordering of top-level values is off.
    return `${ref.jsonb} IN (SELECT jsonb_array_elements(${this.bindJson(values)}))`;
  }
}

/** jsonb_typeof's names and the protocol's type ranks (types.ts). */
const JSONB_RANKS: ReadonlyArray<[string, number]> = [
  ['null', 0],
  ['string', 1],
  ['number', 2],
  ['boolean', 3],
  ['array', 4],
  ['object', 5],
];

/** The filters a declared field answers through its index: the comparisons. */
const ORDERED_OPERATORS: Partial<Record<Filter['operator'], Comparison>> = {
  eq: '=',
  not: '<>',
  lt: '<',
  max: '<=',
  gt: '>',
  min: '>=',
};

function orMissing(ref: FieldRef, condition: string): string {
  return ref.nullable ? `(${ref.jsonb} IS NULL OR ${condition})` : condition;
}

function toArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}
