/**
 * The change monitor's statement (`objects.collectionTimestamps`), one shape for both SQL
 * dialects: each says only how it binds a value, tests a string against a list, reads a records
 * scope's bucket and joins the scope to its collection (sql/collection-timestamps.ts,
 * sqlite/collection-timestamps.ts).
 */
import { bucketIdOf, CONTAINER_DEPTH, collectionScopeUri, splitWithin } from './collection-timestamps.js';
import type { CollectionTimestamp, CollectionTimestampsQuery } from './types.js';

/** What one dialect writes into the statement. Values are bound in the order the text holds them. */
export interface CollectionTimestampsDialect {
  /** Binds a value and returns its placeholder; `type` is its PostgreSQL type. */
  bind(value: unknown, type: 'int' | 'bigint' | 'text'): string;
  /** True when the string `sql` is one of `values`. */
  among(sql: string, values: string[]): string;
  /** A table `named (parent_id, id)` of the collections named by their parent URI and id. */
  named(parents: string[], ids: string[]): string;
  /** The URI of the bucket of records scope `t.parent_id` (`/buckets/b/collections/c` → `/buckets/b`). */
  bucketOfScope: string;
  /**
   * The records scopes `timestamps t`, each joined with its live collection `objects c`, the
   * timestamps kept outside (walked in their index's order, whatever the statistics say).
   */
  scopesWithCollections: string;
  /**
   * Of `uri`, a URI of five segments under `/buckets/`: whether it names a collection, and its
   * bucket's URI and id when it does.
   */
  collectionOfUri(uri: string): { isCollection: string; bucketUri: string; id: string };
  /** The column `uri` in binary order. */
  binaryUri: string;
}

/** A row the statement returns. */
export type CollectionTimestampRow = {
  bucket_uri: string;
  collection: string;
  last_modified: string | number | null;
};

/** The statement for `query`; null when it selects nothing (`within` names no collection). */
export function collectionTimestampsSql(
  query: CollectionTimestampsQuery,
  dialect: CollectionTimestampsDialect,
): string | null {
  const direction = query.order === 'desc' ? 'DESC' : 'ASC';
  const byTime = query.since !== undefined || query.atMost !== undefined;
  if (byTime && query.heldBy) throw new Error('collectionTimestamps: heldBy reads by collection only');
  const text = byTime ? byTimestamp(query, dialect, direction) : byCollection(query, dialect, direction);
  if (text === null) return null;
  return query.limit === undefined ? text : `${text} LIMIT ${dialect.bind(query.limit, 'int')}`;
}

/** The rows after `query.after` in the order of both reads: the records timestamp, then the scope's URI. */
function after(query: CollectionTimestampsQuery, dialect: CollectionTimestampsDialect, timestamp: string, uri: string) {
  if (!query.after) return [];
  const lastModified = dialect.bind(query.after.lastModified ?? -1, 'bigint');
  const scopeUri = dialect.bind(collectionScopeUri(query.after), 'text');
  return [`(${timestamp}, ${uri}) ${query.order === 'desc' ? '<' : '>'} (${lastModified}, ${scopeUri})`];
}

/**
 * Driven by the index timestamps (resource_name, last_modified, parent_id), in its order: what
 * changed since costs what changed. The records scope names its collection.
 */
function byTimestamp(query: CollectionTimestampsQuery, dialect: CollectionTimestampsDialect, direction: string) {
  return `SELECT c.parent_id AS bucket_uri, c.id AS collection, t.last_modified
     FROM ${dialect.scopesWithCollections}
     WHERE ${timestampConditions(query, dialect).join(' AND ')}
     ORDER BY t.last_modified ${direction}, t.parent_id ${direction}`;
}

/** The conditions on the records scopes `timestamps t` of a query by timestamp (`since` or `atMost`). */
export function timestampConditions(query: CollectionTimestampsQuery, dialect: CollectionTimestampsDialect): string[] {
  const conditions = ["t.resource_name = 'record'", ...after(query, dialect, 't.last_modified', 't.parent_id')];
  if (query.since !== undefined) conditions.push(`t.last_modified > ${dialect.bind(query.since, 'bigint')}`);
  if (query.atMost !== undefined) conditions.push(`t.last_modified <= ${dialect.bind(query.atMost, 'bigint')}`);
  if (query.within) {
    const { buckets, parents, ids } = splitWithin(query.within);
    const collections = parents.map((parent, i) => `${parent}/collections/${ids[i]}`);
    const inBuckets = dialect.among(dialect.bucketOfScope, buckets);
    conditions.push(`(${inBuckets} OR ${dialect.among('t.parent_id', collections)})`);
  }
  return conditions;
}

/** Driven by the live collections of `within` (every one without it), each with its records timestamp. */
function byCollection(query: CollectionTimestampsQuery, dialect: CollectionTimestampsDialect, direction: string) {
  const select = `SELECT c.parent_id AS bucket_uri, c.id AS collection, t.last_modified,
       c.parent_id || '/collections/' || c.id AS uri
     FROM objects c
     LEFT JOIN timestamps t ON t.parent_id = c.parent_id || '/collections/' || c.id AND t.resource_name = 'record'`;
  const live = "c.resource_name = 'collection' AND NOT c.deleted";
  const branches: string[] = [];
  let prefix = '';
  if (query.heldBy) {
    const held = heldBranches(query.heldBy, dialect, select, live);
    prefix = held.with;
    branches.push(...held.branches);
  } else if (!query.within) branches.push(`${select} WHERE ${live}`);
  else {
    const { buckets, parents, ids } = splitWithin(query.within);
    if (buckets.length > 0) branches.push(`${select} WHERE ${live} AND ${dialect.among('c.parent_id', buckets)}`);
    if (parents.length > 0) {
      branches.push(
        `${select} JOIN ${dialect.named(parents, ids)} ON c.parent_id = named.parent_id AND c.id = named.id
         WHERE ${live}`,
      );
    }
  }
  if (branches.length === 0) return null;
  const [where] = after(query, dialect, 'coalesce(last_modified, -1)', dialect.binaryUri);
  return `${prefix}SELECT bucket_uri, collection, last_modified FROM (${branches.join(' UNION ALL ')}) AS found
     ${where ? `WHERE ${where}` : ''}
     ORDER BY coalesce(last_modified, -1) ${direction}, ${dialect.binaryUri} ${direction}`;
}

/**
 * `byCollection` for `heldBy`: the containers held (a CTE read once, by the partial index of
 * containers, CONTAINER_DEPTH, as `permissions.containersOf` reads them), then the collections of
 * the buckets held and those held outside them (a bucket's collections held again are listed
 * once). A single collection is joined by primary key: the row comparison, always true beside the
 * equalities, is a condition only the key takes whole, so PostgreSQL never walks the bucket's
 * collections for each one (it expects few held, whatever their number).
 */
function heldBranches(
  heldBy: NonNullable<CollectionTimestampsQuery['heldBy']>,
  dialect: CollectionTimestampsDialect,
  select: string,
  live: string,
): { with: string; branches: string[] } {
  const principals = dialect.among('principal', [...heldBy.principals]);
  const permissions = dialect.among('permission', [...heldBy.permissions]);
  const held = `SELECT object_id FROM access_control_entries
     WHERE ${principals} AND ${permissions} AND ${CONTAINER_DEPTH}`;
  const { bucketUri, isCollection, id } = dialect.collectionOfUri('h.object_id');
  const single = `SELECT DISTINCT ${bucketUri} AS parent_id, ${id} AS id FROM held h
     WHERE h.object_id LIKE '/buckets/%' AND ${isCollection} AND ${bucketUri} NOT IN (SELECT object_id FROM held)`;
  return {
    with: `WITH held AS (${held}) `,
    branches: [
      `${select} WHERE ${live} AND c.parent_id IN (SELECT object_id FROM held)`,
      `${select} JOIN (${single}) AS named ON c.parent_id = named.parent_id AND c.id = named.id
         AND (c.parent_id, c.resource_name, c.id) >= (named.parent_id, 'collection', named.id)
       WHERE ${live}`,
    ],
  };
}

/** A row as the monitor reads it. */
export function toCollectionTimestamp(row: CollectionTimestampRow): CollectionTimestamp {
  return {
    bucket: bucketIdOf(row.bucket_uri),
    collection: row.collection,
    lastModified: row.last_modified === null ? null : Number(row.last_modified),
  };
}
