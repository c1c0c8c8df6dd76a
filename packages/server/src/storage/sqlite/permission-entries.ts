/**
 * `permissions.entries` for the SQLite store (`GET /permissions`, protocol-reference §9.3): the
 * twin of the PostgreSQL statement in sql/permission-entries.ts, one statement as there. Done
 * in SQLite rather than in JavaScript because a caller may hold permissions on 100,000 objects:
 * shaping that many entries in JavaScript (a Map, a split and an object per entry, then their
 * JSON for SQLite to filter and sort) cost four times more than the whole listing on PostgreSQL.
 *
 * SQLite cannot split a string: an entry's kind comes from GLOB patterns on URIs with the
 * right number of slashes (so that no `*` can span a slash), and its ids from the positions of
 * the bucket id (after `/buckets/`) and of the last segment.
 */
import type { PermissionEntriesQuery, PermissionEntry } from '../types.js';
import type { Connection } from './connection.js';
import { jsonColumn, nullableTextColumn, textColumn } from './json-fields.js';
import { QueryBuilder } from './queries.js';

/** The store-wide grants (`*_principals` settings) as the rows the statement joins. */
function globalGrantRows(query: PermissionEntriesQuery) {
  return query.globalGrants.map(({ resourceName, plural, permission }) => ({
    resource_name: resourceName,
    plural,
    permission,
  }));
}

/** The entry fields that are columns; any other field is a path into `{"permissions": …}`, as on PostgreSQL. */
const ENTRY_COLUMNS = {
  uri: textColumn('uri'),
  resource_name: textColumn('resource_name'),
  ...Object.fromEntries(
    ['id', 'bucket_id', 'collection_id', 'group_id', 'record_id', 'account_id'].map((name) => [
      name,
      nullableTextColumn(name),
    ]),
  ),
  permissions: jsonColumn('permissions'),
};

interface EntryRow {
  uri: string;
  resource_name: string;
  id: string | null;
  bucket_id: string | null;
  collection_id: string | null;
  group_id: string | null;
  record_id: string | null;
  account_id: string | null;
  /** JSON text. */
  permissions: string;
  [column: string]: unknown;
}

export function listPermissionEntries(db: Connection, query: PermissionEntriesQuery): PermissionEntry[] {
  const builder = new QueryBuilder({
    document: `json_object('permissions', json(permissions))`,
    columns: ENTRY_COLUMNS,
  });
  const principals = builder.bindJson(query.principals);
  const grants = globalGrantsBranch(builder, query);
  const implied = builder.bindJson(impliedRows(query));
  const extra = builder.bindJson(
    query.extraEntries.map(({ uri, resource_name, permissions }) => ({ uri, resource_name, permissions })),
  );
  const conditions = (query.filters ?? []).map((filter) => builder.filter(filter));
  if (query.after) conditions.push(builder.after(query.sorting, query.after));
  const orderBy = builder.orderBy(query.sorting);
  const limit = query.limit === undefined ? '' : `LIMIT ${builder.bind(query.limit)}`;
  // The implied permissions are computed once per distinct (kind, held permissions) pair
  // (MATERIALIZED: else once per entry).
  const rows = db.all<EntryRow>(
    `WITH held(uri, permission) AS (
       SELECT object_id, permission FROM access_control_entries
       WHERE principal IN (SELECT value FROM json_each(${principals}))
       ${grants}
     ),
     per_object AS (
       SELECT uri, json_group_array(permission ORDER BY permission) AS held,
         length(uri) - length(replace(uri, '/', '')) AS slashes
       FROM (SELECT DISTINCT uri, permission FROM held) GROUP BY uri
     ),
     typed AS (
       SELECT uri, held,
         CASE
           WHEN slashes = 2 AND uri GLOB '/buckets/*' THEN 'bucket'
           WHEN slashes = 4 AND uri GLOB '/buckets/*/collections/*' THEN 'collection'
           WHEN slashes = 4 AND uri GLOB '/buckets/*/groups/*' THEN 'group'
           WHEN slashes = 6 AND uri GLOB '/buckets/*/collections/*/records/*' THEN 'record'
           WHEN slashes = 2 AND uri GLOB '/accounts/*' THEN 'account'
         END AS resource_name,
         substr(uri, length(rtrim(uri, replace(uri, '/', ''))) + 1) AS id,
         substr(uri, 10, instr(substr(uri, 10) || '/', '/') - 1) AS bucket
       FROM per_object
     ),
     combos AS MATERIALIZED (
       SELECT c.resource_name, c.held,
         (SELECT json_group_array(permission ORDER BY permission) FROM (
            SELECT h.value AS permission FROM json_each(c.held) AS h
            UNION SELECT i.value ->> 'implied' FROM json_each(${implied}) AS i JOIN json_each(c.held) AS h
              ON i.value ->> 'resource_name' = c.resource_name AND i.value ->> 'held' = h.value
          )) AS permissions
       FROM (SELECT DISTINCT resource_name, held FROM typed WHERE resource_name IS NOT NULL) AS c
     ),
     entries AS (
       SELECT t.uri, t.resource_name, t.id,
         CASE WHEN t.resource_name <> 'account' THEN t.bucket END AS bucket_id,
         CASE t.resource_name
           WHEN 'collection' THEN t.id
           WHEN 'record' THEN substr(t.uri, length(t.bucket) + 23, instr(substr(t.uri, length(t.bucket) + 23), '/') - 1)
         END AS collection_id,
         CASE WHEN t.resource_name = 'group' THEN t.id END AS group_id,
         CASE WHEN t.resource_name = 'record' THEN t.id END AS record_id,
         CASE WHEN t.resource_name = 'account' THEN t.id END AS account_id,
         c.permissions
       FROM typed AS t JOIN combos AS c ON c.resource_name = t.resource_name AND c.held = t.held
       UNION ALL
       SELECT x.value ->> 'uri', x.value ->> 'resource_name', NULL, NULL, NULL, NULL, NULL, NULL,
         x.value -> 'permissions'
       FROM json_each(${extra}) AS x
     )
     SELECT * FROM entries ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''}
     ORDER BY ${orderBy} ${limit}`,
    builder.params,
  );
  return rows.map(toEntry);
}

function toEntry({ permissions, ...columns }: EntryRow): PermissionEntry {
  const entry: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(columns)) if (value !== null) entry[name] = value;
  entry.permissions = JSON.parse(permissions);
  return entry as PermissionEntry;
}

/**
 * As on PostgreSQL: objects held through the settings are found scope by scope (the scopes
 * that hold objects of that kind, from `timestamps`), and without such grants the branch is
 * left out (SQLite otherwise read every object of the store to join it to none).
 */
function globalGrantsBranch(builder: QueryBuilder, query: PermissionEntriesQuery): string {
  if (query.globalGrants.length === 0) return '';
  return `UNION ALL
       SELECT o.parent_id || '/' || (g.value ->> 'plural') || '/' || o.id, g.value ->> 'permission'
       FROM json_each(${builder.bindJson(globalGrantRows(query))}) AS g
       CROSS JOIN timestamps AS t CROSS JOIN objects AS o -- in this order (SQLite keeps a CROSS JOIN's)
       WHERE t.resource_name = g.value ->> 'resource_name'
         AND o.parent_id = t.parent_id AND o.resource_name = t.resource_name AND NOT o.deleted`;
}

/** Each (kind, held permission) pair with a permission it implies. */
function impliedRows(query: PermissionEntriesQuery) {
  return Object.entries(query.implied).flatMap(([resourceName, table]) =>
    Object.entries(table).flatMap(([held, permissions]) =>
      permissions.map((permission) => ({ resource_name: resourceName, held, implied: permission })),
    ),
  );
}
