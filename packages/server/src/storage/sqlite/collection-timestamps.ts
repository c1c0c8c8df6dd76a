/**
 * Scope timestamps read many at once, on SQLite: those of several scopes of one resource, and the
 * change monitor's live collections with their records timestamps (../collection-timestamps-sql.ts
 * holds that statement's shape, shared with PostgreSQL).
 */
import {
  type CollectionTimestampRow,
  type CollectionTimestampsDialect,
  collectionTimestampsSql,
  toCollectionTimestamp,
} from '../collection-timestamps-sql.js';
import type { CollectionTimestamp, CollectionTimestampsQuery } from '../types.js';
import type { SqlValue } from './connection.js';
import type { SqliteSessionState } from './session-state.js';

/** The stored timestamps of these scopes of one resource, in one statement (scopes never written are absent). */
export function readScopeTimestamps(
  s: SqliteSessionState,
  resourceName: string,
  parentIds: string[],
): Map<string, number> {
  if (parentIds.length === 0 || s.mode === 'write') return new Map();
  const rows = s.db.all<{ parent_id: string; last_modified: number }>(
    `SELECT parent_id, last_modified FROM timestamps
     WHERE resource_name = ? AND parent_id IN (SELECT value FROM json_each(?))`,
    [resourceName, JSON.stringify(parentIds)],
  );
  return new Map(rows.map((row) => [row.parent_id, row.last_modified]));
}

/** The position of the slash after `<b>` in `uri`, a URI `/buckets/<b>/…`. */
const slashOf = (uri: string) => `(9 + instr(substr(${uri}, 10), '/'))`;
/** The same in a records scope `/buckets/<b>/collections/<c>`. */
const SLASH = slashOf('t.parent_id');

export function readCollectionTimestamps(
  s: SqliteSessionState,
  query: CollectionTimestampsQuery,
): CollectionTimestamp[] {
  const params: SqlValue[] = [];
  const bind = (value: unknown) => {
    params.push(value as SqlValue);
    return '?';
  };
  const list = (values: string[]) => `(SELECT value FROM json_each(${bind(JSON.stringify(values))}))`;
  const dialect: CollectionTimestampsDialect = {
    bind,
    among: (sql, values) => `${sql} IN ${list(values)}`,
    named: (parents, ids) => {
      const named = JSON.stringify(parents.map((parent, i) => [parent, ids[i]]));
      return `(SELECT value ->> 0 AS parent_id, value ->> 1 AS id FROM json_each(${bind(named)})) AS named`;
    },
    bucketOfScope: `substr(t.parent_id, 1, ${SLASH} - 1)`,
    // CROSS JOIN keeps the timestamps outside (SQLite's way of fixing the join order).
    scopesWithCollections: `timestamps t
       CROSS JOIN objects c ON c.parent_id = substr(t.parent_id, 1, ${SLASH} - 1) AND c.resource_name = 'collection'
         AND c.id = substr(t.parent_id, ${SLASH} + 13) AND NOT c.deleted`,
    collectionOfUri: (uri) => ({
      bucketUri: `substr(${uri}, 1, ${slashOf(uri)} - 1)`,
      isCollection: `substr(${uri}, ${slashOf(uri)} + 1, 12) = 'collections/'`,
      id: `substr(${uri}, ${slashOf(uri)} + 13)`,
    }),
    binaryUri: 'uri',
  };
  const text = collectionTimestampsSql(query, dialect);
  if (text === null) return [];
  return s.db.all<CollectionTimestampRow>(text, params).map(toCollectionTimestamp);
}
