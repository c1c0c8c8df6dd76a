/**
 * Scope timestamps read many at once, on PostgreSQL: those of several scopes of one resource, and
 * the change monitor's live collections with their records timestamps (../collection-timestamps-sql.ts
 * holds that statement's shape, shared with SQLite).
 */
import {
  type CollectionTimestampRow,
  type CollectionTimestampsDialect,
  collectionTimestampsSql,
  toCollectionTimestamp,
} from '../collection-timestamps-sql.js';
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
  const params: unknown[] = [];
  const bind = (value: unknown, type: string) => `$${params.push(value)}::${type}`;
  const dialect: CollectionTimestampsDialect = {
    bind,
    among: (sql, values) => `${sql} = ANY(${bind(values, 'text[]')})`,
    named: (parents, ids) => `unnest(${bind(parents, 'text[]')}, ${bind(ids, 'text[]')}) AS named(parent_id, id)`,
    bucketOfScope: "'/buckets/' || split_part(t.parent_id, '/', 3)",
    // LATERAL (kept apart by its LIMIT 1: a collection is one row): the timestamps walked in
    // index order drive the lookups of their collections by primary key, whatever the
    // statistics say (a fresh table's made PostgreSQL join 1,000 x 1,000 rows); the outer
    // LIMIT stops the walk.
    scopesWithCollections: `timestamps t
       CROSS JOIN LATERAL (
         SELECT parent_id, id FROM objects
         WHERE parent_id = '/buckets/' || split_part(t.parent_id, '/', 3) AND resource_name = 'collection'
           AND id = split_part(t.parent_id, '/', 5) COLLATE "default" AND NOT deleted
         LIMIT 1
       ) AS c`,
    binaryUri: 'uri COLLATE "C"',
  };
  const text = collectionTimestampsSql(query, dialect);
  if (text === null) return [];
  const rows = await s.query<CollectionTimestampRow>(text, params, DYNAMIC);
  return rows.map(toCollectionTimestamp);
}
