/**
 * Scope timestamps read many at once, on PostgreSQL: those of several scopes of one resource, and
 * the change monitor's live collections with their records timestamps (../collection-timestamps-sql.ts
 * holds that statement's shape, shared with SQLite).
 */
import {
  type CollectionTimestampRow,
  type CollectionTimestampsDialect,
  collectionTimestampsSql,
  timestampConditions,
  toCollectionTimestamp,
} from '../collection-timestamps-sql.js';
import { parseCollectionUri } from '../collection-timestamps.js';
import type { CollectionTimestamp, CollectionTimestampsQuery } from '../types.js';
import { DYNAMIC } from './drivers/types.js';
import type { SqlSessionState } from './session-state.js';

/** The stored timestamps of these scopes of one resource, in one statement (scopes never written are absent). */
export async function readScopeTimestamps(
  s: SqlSessionState,
  resourceName: string,
  parentIds: string[],
): Promise<Map<string, number>> {
  if (parentIds.length === 0) return new Map();
  if (s.pending.anyLate()) await s.sendPendingWrites(); // their scopes move when they are stamped
  const rows = await s.query<{ parent_id: string; last_modified: number }>(
    'SELECT parent_id, last_modified FROM timestamps WHERE resource_name = $1 AND parent_id = ANY($2::text[])',
    [resourceName, parentIds],
  );
  return new Map(rows.map((row) => [row.parent_id, Number(row.last_modified)]));
}

export async function readCollectionTimestamps(
  s: SqlSessionState,
  query: CollectionTimestampsQuery,
): Promise<CollectionTimestamp[]> {
  if (s.pending.anyLate()) await s.sendPendingWrites(); // their scopes move when they are stamped
  if (query.since !== undefined || query.atMost !== undefined) return walkTimestamps(s, query);
  // ACLs this transaction set are read by `heldBy`: sent first, as `permissions.containersOf` does.
  if (query.heldBy) await s.sendPendingAcls();
  const { dialect, params } = pgDialect();
  const text = collectionTimestampsSql(query, dialect);
  if (text === null) return [];
  const rows = await s.query<CollectionTimestampRow>(text, params, DYNAMIC);
  return rows.map(toCollectionTimestamp);
}

function pgDialect(): { dialect: CollectionTimestampsDialect; params: unknown[] } {
  const params: unknown[] = [];
  const bind = (value: unknown, type: string) => `$${params.push(value)}::${type}`;
  const dialect: CollectionTimestampsDialect = {
    bind,
    among: (sql, values) => `${sql} = ANY(${bind(values, 'text[]')})`,
    named: (parents, ids) => `unnest(${bind(parents, 'text[]')}, ${bind(ids, 'text[]')}) AS named(parent_id, id)`,
    bucketOfScope: "'/buckets/' || split_part(t.parent_id, '/', 3)",
    scopesWithCollections: `(SELECT *, ${SCOPE_KEY} FROM timestamps t) AS t
       CROSS JOIN LATERAL (${LIVE_COLLECTION}) AS c`,
    collectionOfUri: (uri) => ({
      bucketUri: `'/buckets/' || split_part(${uri}, '/', 3)`,
      isCollection: `split_part(${uri}, '/', 4) = 'collections'`,
      // As objects.id is collated (ACE URIs are "C"): else no index takes the equality.
      id: `split_part(${uri}, '/', 5) COLLATE "default"`,
    }),
    binaryUri: 'uri COLLATE "C"',
  };
  return { dialect, params };
}

/**
 * The live collection of records scope `t` (its bucket URI `t.bucket` and id `t.cid`), by primary
 * key whatever the statistics say: with none (new rows not analysed yet) PostgreSQL rates the
 * index (parent_id, resource_name, last_modified) as good as the key and walks the bucket's
 * collections for each scope (1,000 a bucket: 500 rows filtered per lookup). The row comparison,
 * always true beside the equalities, is a condition only the primary key takes whole: it wins.
 */
const LIVE_COLLECTION = `SELECT parent_id, id FROM objects
  WHERE parent_id = t.bucket AND resource_name = 'collection' AND id = t.cid
    AND (parent_id, resource_name, id) >= (t.bucket, 'collection', t.cid) AND NOT deleted`;

/** The key of the collection of records scope `t.parent_id`, as LIVE_COLLECTION reads it. */
const SCOPE_KEY = `'/buckets/' || split_part(t.parent_id, '/', 3) AS bucket,
  split_part(t.parent_id, '/', 5) COLLATE "default" AS cid`;

/**
 * By timestamp: the records scopes walked in the order of the index timestamps (resource_name,
 * last_modified, parent_id), a page at a time, each then joined with its live collection. The
 * page is taken first, in a subquery of its own, so that however few rows the planner expects
 * (new rows not analysed: 4 for 3,000) it never joins every scope before sorting and cutting
 * (12 s for a page of 500 in issue 36, 100 ms here). Scopes whose collection is gone (or not
 * readable as one) take room in a page: the walk goes on after them until `limit` live ones.
 */
async function walkTimestamps(s: SqlSessionState, query: CollectionTimestampsQuery): Promise<CollectionTimestamp[]> {
  const found: CollectionTimestamp[] = [];
  const direction = query.order === 'desc' ? 'DESC' : 'ASC';
  let after = query.after;
  for (;;) {
    const want = query.limit === undefined ? undefined : query.limit - found.length;
    const { dialect, params } = pgDialect();
    const conditions = timestampConditions({ ...query, ...(after ? { after } : {}) }, dialect);
    const page = want === undefined ? '' : `LIMIT ${dialect.bind(want, 'int')}`;
    const rows = await s.query<CollectionTimestampRow & { scope: string }>(
      `SELECT c.parent_id AS bucket_uri, c.id AS collection, t.last_modified, t.parent_id AS scope
         FROM (SELECT t.parent_id, t.last_modified, ${SCOPE_KEY} FROM timestamps t WHERE ${conditions.join(' AND ')}
                ORDER BY t.last_modified ${direction}, t.parent_id ${direction} ${page}) AS t
         LEFT JOIN LATERAL (${LIVE_COLLECTION}) AS c ON true
        ORDER BY t.last_modified ${direction}, t.parent_id ${direction}`,
      params,
      DYNAMIC,
    );
    for (const row of rows) if (row.collection !== null) found.push(toCollectionTimestamp(row));
    const last = rows.at(-1);
    const named = last && parseCollectionUri(last.scope);
    if (want === undefined || rows.length < want || found.length >= (query.limit ?? 0) || !named) return found;
    after = { bucket: named[0], collection: named[1], lastModified: Number(last.last_modified) };
  }
}
