/**
 * How the SQLite query builder (queries.ts) reads a field: a column, or a JSON value at a bound
 * path of the document, with its `(rank, value)` key (queries.ts says how values compare), and
 * the JSON type ranks of scalars.
 */
/** How a JSON value is read in SQL: from a path into a document, or from a `json_each` row. */
export interface JsonSql {
  /** `json_type()`: 'null', 'true', 'false', 'integer', 'real', 'text', 'array', 'object'; NULL when missing. */
  readonly type: string;
  /** The SQL value of a scalar (text, number, 0/1). */
  readonly atom: string;
  /** The JSON text of an array or object. */
  readonly json: string;
}

/** How one field is read from a row. */
export interface FieldRef {
  /** The field as JSON (an object may lack it), or undefined for a column (always there). */
  readonly value?: JsonSql;
  /** A typed column (id, last_modified), compared natively when the value has its type. */
  readonly column?: { readonly sql: string; readonly type: 'text' | 'integer' };
  /** `(rank, value)` as SQL. */
  readonly key: readonly [string, string];
  /** The elements of the field as a table (`json_each`), when it is JSON. */
  readonly elements?: string;
  /**
   * A field with a declared index (declared-indexes.ts): one expression, the value's sort key
   * as a blob (jsonb.ts `quire_jsonb_key`, whose bytes compare as the protocol orders values),
   * x'FF' for a missing field, after every value. One column, so that a filter, missing objects
   * included, is one range of the index (SQLite uses neither a row value nor an OR of ranks on
   * expressions there), and so is a sort (SQLite would put NULL first ascending).
   */
  readonly ordered?: string;
}

export const RANK_BY_TYPE: ReadonlyArray<[string, number]> = [
  ['null', 0],
  ['text', 1],
  ['integer', 2],
  ['real', 2],
  ['false', 3],
  ['true', 3],
  ['array', 4],
  ['object', 5],
];

export function keyOf(value: JsonSql): [string, string] {
  const ranks = RANK_BY_TYPE.map(([type, rank]) => `WHEN '${type}' THEN ${rank}`);
  const rank = `(CASE ${value.type} ${ranks.join(' ')} END)`;
  return [
    rank,
    `(CASE ${value.type} WHEN 'null' THEN 0 WHEN 'array' THEN quire_jsonb_key(${value.json})
      WHEN 'object' THEN quire_jsonb_key(${value.json}) ELSE ${value.atom} END)`,
  ];
}

/** JSON types in the order a `CASE` tests them best: the commonest first (each WHEN is a string comparison). */
const BY_FREQUENCY = ['integer', 'text', 'real', 'true', 'false', 'null', 'array', 'object'];

/**
 * The value's sort key as two terms that read it twice, where `keyOf`'s read it three times: the
 * rank, which for an array or an object is a blob after every scalar's rank (SQLite puts blobs
 * after numbers), its rank's byte then its jsonb key (the JSON read again, for containers only);
 * then the scalar's value itself. A sort at 1M (minimum of 5 alternated runs): the bare statement
 * 569 ms, `keyOf`'s terms 862 ms, these 758 ms, these with the commonest types tested first 610 ms.
 */
export function sortKeyOf(value: JsonSql): [string, string] {
  const rankOfType = new Map(RANK_BY_TYPE);
  const ranks = BY_FREQUENCY.map((type) => {
    const rank = rankOfType.get(type)!;
    return rank < 4
      ? `WHEN '${type}' THEN ${rank}`
      : `WHEN '${type}' THEN x'0${rank}' || quire_jsonb_key(${value.json})`;
  });
  return [`(CASE ${value.type} ${ranks.join(' ')} END)`, value.atom];
}

/** The value at a bound JSON path of a document (a JSONB column or JSON text). */
export function atPath(document: string, path: string): JsonSql {
  return {
    type: `json_type(${document}, ${path})`,
    atom: `json_extract(${document}, ${path})`,
    json: `json_extract(${document}, ${path})`,
  };
}

/** The element of a `json_each` row aliased `alias`. */
export function element(alias: string): JsonSql {
  return {
    type: `${alias}.type`,
    atom: `${alias}.atom`,
    json: `${alias}.value`,
  };
}

/** A text column, never NULL. */
export function textColumn(sql: string): FieldRef {
  return { column: { sql, type: 'text' }, key: ['1', sql] };
}

/** A text column that may be NULL (the field is missing), e.g. `bucket_id` of a permission entry. */
export function nullableTextColumn(sql: string): FieldRef {
  const value: JsonSql = {
    type: `(CASE WHEN ${sql} IS NOT NULL THEN 'text' END)`,
    atom: sql,
    json: `json_quote(${sql})`,
  };
  return { value, key: keyOf(value) };
}

/** A column of JSON text, e.g. the permissions of a permission entry. */
export function jsonColumn(sql: string): FieldRef {
  const value = atPath(sql, "'$'");
  return { value, key: keyOf(value), elements: `json_each(${sql})` };
}

export const OBJECT_COLUMNS: Readonly<Record<string, FieldRef>> = {
  id: textColumn('id'),
  last_modified: { column: { sql: 'last_modified', type: 'integer' }, key: ['2', 'last_modified'] },
};

/** The number segments of a path read both as a key and as an index (2^n candidate paths); later ones are keys. */
const MAX_INDEX_SEGMENTS = 3;

/**
 * The JSON paths a dotted field name may address, each key quoted: `person.name` →
 * `$."person"."name"`. PostgreSQL's `#>` reads a number segment as an index in an array and as a
 * key in an object, so `tags.0` gives `$."tags"."0"` and `$."tags"[0]` (`-1`: `[#-1]`, the last
 * element); at most one of them exists in a given document.
 */
export function jsonPaths(field: string): string[] {
  let paths = ['$'];
  let indexes = 0;
  for (const key of field.split('.')) {
    const asKey = `.${JSON.stringify(key)}`;
    const index = /^-?\d+$/.test(key) && indexes < MAX_INDEX_SEGMENTS ? Number(key) : undefined;
    if (index === undefined || !Number.isSafeInteger(index)) {
      paths = paths.map((path) => path + asKey);
    } else {
      indexes++;
      const asIndex = index >= 0 ? `[${index}]` : `[#${index}]`;
      paths = paths.flatMap((path) => [path + asKey, path + asIndex]);
    }
  }
  return paths;
}

export type Scalar = string | number | boolean | null;

export function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

export function rankOf(value: Scalar): number {
  if (value === null) return 0;
  return typeof value === 'string' ? 1 : typeof value === 'number' ? 2 : 3;
}

/** The `json_type()` names of a rank, as an SQL list. */
export function typesOf(rank: number): string {
  return RANK_BY_TYPE.filter(([, typeRank]) => typeRank === rank)
    .map(([type]) => `'${type}'`)
    .join(', ');
}
