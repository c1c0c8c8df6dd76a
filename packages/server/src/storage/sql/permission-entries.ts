/**
 * `permissions.entries` on PostgreSQL (`GET /permissions`, protocol-reference §9.3): one
 * statement, the twin of sqlite/permission-entries.ts; a plain walk by URI goes page by page
 * (permission-page.ts).
 */
import type { PermissionEntriesQuery, PermissionEntry } from '../types.js';
import { DYNAMIC, type Row } from './drivers/types.js';
import { kindOf, listPermissionPage, segmentsOf, walksByUri } from './permission-page.js';
import { nullableTextColumn, QueryBuilder } from './queries.js';
import type { SqlSessionState } from './session-state.js';

/** The fields of a permission entry that are columns (text, NULL when the entry lacks them), in the answer's order. */
const ENTRY_FIELDS = [
  'uri',
  'resource_name',
  'id',
  'bucket_id',
  'collection_id',
  'group_id',
  'record_id',
  'account_id',
];
const ENTRY_COLUMNS = Object.fromEntries(ENTRY_FIELDS.map((name) => [name, nullableTextColumn(name)]));

interface PermissionEntryRow extends Row {
  permissions: string[];
  [field: string]: unknown;
}

/**
 * Every (uri, permission) the caller's principals hold. `principal = ANY(…)`: the planner
 * estimates each principal from the column's statistics, so a principal holding most of the
 * store's rows (an owner) does not turn the lookup of others into a scan of the table.
 */
function allHeld(builder: QueryBuilder, query: PermissionEntriesQuery, principals: string): string {
  // Objects held through the settings (`<resource>_<permission>_principals`): every live object
  // of those kinds, found scope by scope (every scope that holds objects has its row in
  // `timestamps`) through the primary key, not by reading every object of the store. Without
  // such grants (the usual case) the branch is left out: an empty recordset joined to
  // `objects` still made the planner expect a million rows, and plan the whole statement for
  // them (parallel workers, whose start alone cost 80 ms).
  const grantRows = query.globalGrants.map(({ resourceName, plural, permission }) => ({
    resource_name: resourceName,
    plural,
    permission,
  }));
  const grants = query.globalGrants.length
    ? `UNION ALL
       SELECT o.parent_id || '/' || g.plural || '/' || o.id, g.permission
       FROM jsonb_to_recordset(${builder.bindJson(grantRows)}) AS g(resource_name text, plural text, permission text)
       JOIN timestamps t ON t.resource_name = g.resource_name
       JOIN objects o ON o.parent_id = t.parent_id AND o.resource_name = t.resource_name AND NOT o.deleted`
    : '';
  return `SELECT object_id, permission FROM access_control_entries WHERE principal = ANY(${principals}) ${grants}`;
}

/** The statement of `entries`, apart so that its plan can be studied (bench/permissions-plan.ts). */
export function permissionEntriesStatement(query: PermissionEntriesQuery): { text: string; params: unknown[] } {
  const builder = new QueryBuilder({ columns: ENTRY_COLUMNS });
  const principals = `${builder.bind(query.principals)}::text[]`;
  const held = allHeld(builder, query, principals);
  const implied = builder.bindJson(
    Object.entries(query.implied).flatMap(([resourceName, table]) =>
      Object.entries(table).flatMap(([held, permissions]) =>
        permissions.map((permission) => ({ resource_name: resourceName, held, implied: permission })),
      ),
    ),
  );
  const extra = builder.bindJson(query.extraEntries);
  const conditions = (query.filters ?? []).map((filter) => builder.filter(filter));
  if (query.after) conditions.push(builder.after(query.sorting, query.after));
  const limit = query.limit === undefined ? '' : `LIMIT ${builder.bind(query.limit)}`;
  const part = (n: number) => `split_part(t.uri, '/', ${n})`;
  // Built for a caller with many groups and objects, at a cost that follows the caller's own
  // entries however large the store (see the server README):
  // - an entry's kind and ids come from the shape of its URI; other URIs are not listed; the
  //   rows kept between steps are small (no arrays of segments), so that they stay in memory;
  // - the implied permissions are computed once per distinct (kind, held permissions) pair
  //   (MATERIALIZED: else once per entry), jsonb is built only for the rows of the page.
  const text = `WITH held(uri, permission) AS (${held}),
     per_object AS (
       SELECT uri, held, segments, ${kindOf('uri', 'segments')} AS resource_name
       FROM (
         SELECT uri, array_agg(permission) AS held, ${segmentsOf('uri')} AS segments
         FROM (SELECT DISTINCT uri, permission FROM held ORDER BY uri, permission) AS distinct_held
         GROUP BY uri
       ) AS aggregated
     ),
     combos AS MATERIALIZED (
       SELECT c.resource_name, c.held,
         (SELECT jsonb_agg(DISTINCT permission ORDER BY permission) FROM (
            SELECT unnest(c.held) AS permission
            UNION SELECT i.implied
            FROM jsonb_to_recordset(${implied}) AS i(resource_name text, held text, implied text)
            WHERE i.resource_name = c.resource_name AND i.held = ANY(c.held)
          ) AS expanded) AS permissions
       FROM (SELECT DISTINCT resource_name, held FROM per_object WHERE resource_name IS NOT NULL) AS c
     ),
     entries AS (
       SELECT t.uri, t.resource_name, split_part(t.uri, '/', t.segments) AS id,
         CASE WHEN ${part(2)} = 'buckets' THEN ${part(3)} END AS bucket_id,
         CASE WHEN ${part(4)} = 'collections' THEN ${part(5)} END AS collection_id,
         CASE WHEN ${part(4)} = 'groups' THEN ${part(5)} END AS group_id,
         CASE WHEN ${part(6)} = 'records' THEN ${part(7)} END AS record_id,
         CASE WHEN ${part(2)} = 'accounts' THEN ${part(3)} END AS account_id,
         combos.permissions
       FROM per_object t JOIN combos ON combos.resource_name = t.resource_name AND combos.held = t.held
       UNION ALL
       SELECT x.uri COLLATE "C", x.resource_name, NULL, NULL, NULL, NULL, NULL, NULL, x.permissions
       FROM jsonb_to_recordset(${extra}) AS x(uri text, resource_name text, permissions jsonb)
     )
     SELECT uri, resource_name, id, bucket_id, collection_id, group_id, record_id, account_id, permissions
     FROM (SELECT *, jsonb_build_object('permissions', permissions) AS data FROM entries) AS entry
     ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''}
     ORDER BY ${builder.orderBy(query.sorting)}
     ${limit}`;
  return { text, params: builder.params };
}

export async function listPermissionEntries(
  session: SqlSessionState,
  query: PermissionEntriesQuery,
): Promise<PermissionEntry[]> {
  if (walksByUri(query)) return listPermissionPage(session, query);
  const { text, params } = permissionEntriesStatement(query);
  const rows = await session.query<PermissionEntryRow>(text, params, DYNAMIC);
  return rows.map((row) => {
    const entry: Record<string, unknown> = {};
    for (const name of ENTRY_FIELDS) {
      const value = row[name];
      if (value !== null) entry[name] = value;
    }
    entry.permissions = row.permissions;
    return entry as unknown as PermissionEntry;
  });
}
