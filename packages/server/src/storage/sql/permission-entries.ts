/**
 * `permissions.entries` on PostgreSQL (`GET /permissions`, protocol-reference §9.3): one
 * statement, the twin of sqlite/permission-entries.ts.
 */
import type { PermissionEntriesQuery, PermissionEntry } from '../types.js';
import { DYNAMIC, type Row } from './drivers/types.js';
import { nullableTextColumn, QueryBuilder } from './queries.js';
import type { SqlSessionState } from './session-state.js';

/** The fields of a permission entry that are columns (text, NULL when the entry lacks them). */
const ENTRY_COLUMNS = Object.fromEntries(
  ['uri', 'resource_name', 'id', 'bucket_id', 'collection_id', 'group_id', 'record_id', 'account_id'].map((name) => [name, nullableTextColumn(name)]),
);

interface PermissionEntryRow extends Row {
  permissions: string[];
  [field: string]: unknown;
}

export async function listPermissionEntries(session: SqlSessionState, query: PermissionEntriesQuery): Promise<PermissionEntry[]> {
  const builder = new QueryBuilder({ columns: ENTRY_COLUMNS });
  const principals = builder.bind(query.principals);
  const grants = builder.bindJson(query.globalGrants.map(({ resourceName, plural, permission }) => ({ resource_name: resourceName, plural, permission })));
  const implied = builder.bindJson(
    Object.entries(query.implied).flatMap(([resourceName, table]) =>
      Object.entries(table).flatMap(([held, permissions]) => permissions.map((permission) => ({ resource_name: resourceName, held, implied: permission }))),
    ),
  );
  const extra = builder.bindJson(query.extraEntries);
  const conditions = (query.filters ?? []).map((filter) => builder.filter(filter));
  if (query.after) conditions.push(builder.after(query.sorting, query.after));
  const limit = query.limit === undefined ? '' : `LIMIT ${builder.bind(query.limit)}`;
  // Built for a caller with many groups and objects: principals are joined (hashed) rather
  // than compared one by one; ids come from the shape of each URI (['', 'buckets', 'b',
  // 'collections', 'c'] for a collection), other URIs are not listed; the implied
  // permissions are computed once per distinct (kind, held permissions) pair; jsonb is built
  // only for the rows of the page.
  const rows = await session.query<PermissionEntryRow>(
    `WITH held(uri, permission) AS (
       SELECT ace.object_id, ace.permission
       FROM access_control_entries ace JOIN unnest(${principals}::text[]) AS caller(principal) ON ace.principal = caller.principal
       UNION ALL
       SELECT o.parent_id || '/' || g.plural || '/' || o.id, g.permission
       FROM jsonb_to_recordset(${grants}) AS g(resource_name text, plural text, permission text)
       JOIN objects o ON o.resource_name = g.resource_name AND NOT o.deleted
     ),
     per_object AS (
       SELECT uri, array_agg(DISTINCT permission ORDER BY permission) AS held, string_to_array(uri, '/') AS p
       FROM held GROUP BY uri
     ),
     typed AS (
       SELECT uri, held, p,
         CASE
           WHEN cardinality(p) = 3 AND p[1] = '' AND p[2] = 'buckets' THEN 'bucket'
           WHEN cardinality(p) = 5 AND p[1] = '' AND p[2] = 'buckets' AND p[4] = 'collections' THEN 'collection'
           WHEN cardinality(p) = 5 AND p[1] = '' AND p[2] = 'buckets' AND p[4] = 'groups' THEN 'group'
           WHEN cardinality(p) = 7 AND p[1] = '' AND p[2] = 'buckets' AND p[4] = 'collections' AND p[6] = 'records' THEN 'record'
           WHEN cardinality(p) = 3 AND p[1] = '' AND p[2] = 'accounts' THEN 'account'
         END AS resource_name
       FROM per_object
     ),
     combos AS (
       SELECT c.resource_name, c.held,
         (SELECT jsonb_agg(DISTINCT permission ORDER BY permission) FROM (
            SELECT unnest(c.held) AS permission
            UNION SELECT i.implied FROM jsonb_to_recordset(${implied}) AS i(resource_name text, held text, implied text)
            WHERE i.resource_name = c.resource_name AND i.held = ANY(c.held)
          ) AS expanded) AS permissions
       FROM (SELECT DISTINCT resource_name, held FROM typed WHERE resource_name IS NOT NULL) AS c
     ),
     entries AS (
       SELECT t.uri, t.resource_name, p[cardinality(p)] AS id,
         CASE WHEN p[2] = 'buckets' THEN p[3] END AS bucket_id,
         CASE WHEN p[4] = 'collections' THEN p[5] END AS collection_id,
         CASE WHEN p[4] = 'groups' THEN p[5] END AS group_id,
         CASE WHEN p[6] = 'records' THEN p[7] END AS record_id,
         CASE WHEN p[2] = 'accounts' THEN p[3] END AS account_id,
         combos.permissions
       FROM typed t JOIN combos ON combos.resource_name = t.resource_name AND combos.held = t.held
       UNION ALL
       SELECT x.uri, x.resource_name, NULL, NULL, NULL, NULL, NULL, NULL, x.permissions
       FROM jsonb_to_recordset(${extra}) AS x(uri text, resource_name text, permissions jsonb)
     )
     SELECT uri, resource_name, id, bucket_id, collection_id, group_id, record_id, account_id, permissions
     FROM (SELECT *, jsonb_build_object('permissions', permissions) AS data FROM entries) AS entry
     ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''}
     ORDER BY ${builder.orderBy(query.sorting)}
     ${limit}`,
    builder.params,
    DYNAMIC,
  );
  return rows.map(({ permissions, ...fields }) => {
    const entry: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(fields)) if (value !== null) entry[name] = value;
    return { ...entry, permissions } as PermissionEntry;
  });
}
