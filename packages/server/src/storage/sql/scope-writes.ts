/**
 * The objects facet's writes of many objects at once on PostgreSQL, each one statement: many
 * new objects, an import as given, the tombstones of a filter, a deleted tree, purged
 * tombstones, a trimmed history. Each first sends what is pending (it stamps the scope in the
 * database, or reads what was written) and forgets what this transaction read locked.
 */
import { StorageError } from '../errors.js';
import { assertNotHistory, tableOf } from '../tables.js';
import type { Filter, ListOptions, Scope, StoredObject, Tombstone } from '../types.js';
import { DYNAMIC } from './drivers/types.js';
import { changedObject, TOMBSTONE_DATA, toLiveObject } from './object-rows.js';
import { NOW_MS } from './pending-writes.js';
import { likePrefix, QueryBuilder } from './queries.js';
import { setScopeTimestamp } from './scope-timestamps.js';
import type { ObjectRow, SqlSessionState } from './session-state.js';

/** What every write of this module does first. */
async function settle(s: SqlSessionState, scope: Scope | null): Promise<void> {
  s.assertWritable();
  await s.sendPendingWrites();
  if (scope) s.pending.release(scope.parentId, scope.resourceName);
  s.forgetLocked();
}

export async function insertMany(
  s: SqlSessionState,
  scope: Scope,
  objects: Array<{ id: string; data: Record<string, unknown> }>,
): Promise<StoredObject[]> {
  s.assertWritable();
  assertNotHistory(scope);
  if (objects.length === 0) return [];
  await settle(s, scope);
  const items = objects.map(({ id, data }) => {
    const { id: _id, last_modified: _lastModified, ...attributes } = data;
    return { id, data: attributes };
  });
  // One statement: bump the scope timestamp by n (locking it, as every write does) and insert
  // the rows at first, first + 1, ... — all above every timestamp of the scope.
  const rows = await s.query<ObjectRow>(
    `WITH stamp AS (
       INSERT INTO timestamps AS t (parent_id, resource_name, last_modified)
       VALUES ($1, $2, ${NOW_MS} + $3::bigint - 1)
       ON CONFLICT (parent_id, resource_name)
       DO UPDATE SET last_modified = GREATEST(${NOW_MS}, t.last_modified + 1) + $3::bigint - 1
       RETURNING t.last_modified - $3::bigint + 1 AS first
     )
     INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted)
     SELECT $1, $2, item->>'id', stamp.first + position - 1, item->'data', FALSE
     FROM stamp, jsonb_array_elements($4::jsonb) WITH ORDINALITY AS items(item, position)
     ON CONFLICT (parent_id, resource_name, id)
     DO UPDATE SET last_modified = EXCLUDED.last_modified, data = EXCLUDED.data, deleted = FALSE
     RETURNING id, last_modified, data, deleted`,
    [scope.parentId, scope.resourceName, items.length, JSON.stringify(items)],
  );
  s.writes += rows.length;
  for (const row of rows) changedObject(s, scope, row.id);
  return rows.map(toLiveObject).sort((a, b) => a.last_modified - b.last_modified);
}

export async function importObjects(
  s: SqlSessionState,
  scope: Scope,
  objects: Array<StoredObject | Tombstone>,
  scopeTimestamp?: number,
): Promise<void> {
  await settle(s, scope);
  const table = tableOf(scope);
  // History rows are keyed by timestamp (ids are not unique there).
  const key = table === 'history' ? 'last_modified' : 'id';
  let newest = scopeTimestamp ?? 0;
  const items = objects.map((object) => {
    const { id, last_modified: lastModified, ...attributes } = object;
    const deleted = (object as Partial<Tombstone>).deleted === true;
    if (scopeTimestamp === undefined) newest = Math.max(newest, lastModified);
    return { id, last_modified: lastModified, deleted, data: deleted ? JSON.parse(TOMBSTONE_DATA) : attributes };
  });
  // One statement: the rows, then the scope timestamp raised (and locked, as every write does).
  await s.query(
    `WITH rows AS (
       INSERT INTO ${table} (parent_id, resource_name, id, last_modified, data, deleted)
       SELECT $1, $2, item->>'id', (item->>'last_modified')::bigint, item->'data', (item->>'deleted')::boolean
       FROM jsonb_array_elements($3::jsonb) AS items(item)
       ON CONFLICT (parent_id, resource_name, ${key})
       DO UPDATE SET id = EXCLUDED.id, last_modified = EXCLUDED.last_modified, data = EXCLUDED.data,
         deleted = EXCLUDED.deleted
       RETURNING 1
     )
     INSERT INTO timestamps AS t (parent_id, resource_name, last_modified)
     SELECT $1, $2, $4::bigint WHERE $4::bigint > 0
     ON CONFLICT (parent_id, resource_name)
     DO UPDATE SET last_modified = GREATEST(t.last_modified, EXCLUDED.last_modified)`,
    [scope.parentId, scope.resourceName, JSON.stringify(items), newest],
  );
  s.writes += items.length;
  for (const item of items) changedObject(s, scope, item.id);
}

export async function deleteAll(
  s: SqlSessionState,
  scope: Scope,
  options: Omit<ListOptions, 'includeDeleted'>,
): Promise<Tombstone[]> {
  await settle(s, scope);
  const { current, now } = await s.lockScope(scope);
  const first = Math.max(now, current + 1);
  // Tombstones get first, first + 1, … in sorting order. The new timestamps exceed every
  // existing one of the scope, so the unique index never sees a collision.
  const query = new QueryBuilder({ indexed: s.context.indexed() });
  const where = query.where(scope, { ...options, includeDeleted: false });
  const orderBy = query.orderBy(options.sorting);
  const limit = options.limit === undefined ? '' : `LIMIT ${query.bind(options.limit)}`;
  // Matched on the timestamp as well as the id: unique in the scope, and the one index of the
  // history table. The scope lock keeps both from changing meanwhile.
  const rows = await s.query<{ id: string; last_modified: number }>(
    `WITH doomed AS (
       SELECT parent_id, resource_name, id, last_modified, row_number() OVER (ORDER BY ${orderBy}) AS position
       FROM ${tableOf(scope)} WHERE ${where} ORDER BY ${orderBy} ${limit}
     )
     UPDATE ${tableOf(scope)} AS target SET deleted = TRUE, data = ${query.bind(TOMBSTONE_DATA)}::jsonb,
       last_modified = ${query.bind(first)}::bigint + doomed.position - 1
     FROM doomed
     WHERE target.parent_id = doomed.parent_id AND target.resource_name = doomed.resource_name
       AND target.last_modified = doomed.last_modified AND target.id = doomed.id
     RETURNING target.id, target.last_modified`,
    query.params,
    DYNAMIC,
  );
  if (rows.length === 0) return [];
  const tombstones = rows
    .map((row): Tombstone => ({ id: row.id, last_modified: row.last_modified, deleted: true }))
    .sort((a, b) => a.last_modified - b.last_modified);
  await setScopeTimestamp(s, scope, tombstones.at(-1)!.last_modified);
  s.writes += tombstones.length;
  for (const tombstone of tombstones) changedObject(s, scope, tombstone.id);
  return tombstones;
}

export async function deleteTree(s: SqlSessionState, uri: string): Promise<void> {
  // What is pending goes first, else it would be written after the deletion.
  await settle(s, null);
  s.invalidate({ kind: 'tree', uri });
  s.pending.releaseTree(uri);
  // The scope timestamps below the tree are bumped, not dropped (issue 29): a list re-created
  // there starts above every timestamp the old one served, so an old ETag gets 200, not 304,
  // and `_since=<old>` shows the timestamp moved past it with nothing returned (the "server
  // was flushed" signal of Kinto's clients). Bumped rather than deleted and stored afresh as
  // Kinto does: `now` may lie below them (client-supplied timestamps, clock steps back). The
  // rows stay locked until commit, as every write's scope is.
  await s.query(
    `WITH entries AS (DELETE FROM history WHERE parent_id = $1 OR parent_id LIKE $2 ESCAPE '\\'),
     stamped AS (
       UPDATE timestamps SET last_modified = GREATEST(${NOW_MS}, last_modified + 1)
       WHERE parent_id = $1 OR parent_id LIKE $2 ESCAPE '\\'
     )
     DELETE FROM objects WHERE parent_id = $1 OR parent_id LIKE $2 ESCAPE '\\'`,
    [uri, likePrefix(`${uri}/`)],
  );
}

export async function purgeDeleted(s: SqlSessionState, scope: Scope, before?: number): Promise<number> {
  await settle(s, null);
  const [row] = await s.query<{ count: number }>(
    `WITH purged AS (
       DELETE FROM ${tableOf(scope)} WHERE parent_id = $1 AND resource_name = $2 AND deleted
         AND ($3::bigint IS NULL OR last_modified < $3::bigint)
       RETURNING 1
     )
     SELECT count(*) AS count FROM purged`,
    [scope.parentId, scope.resourceName, before ?? null],
  );
  return row?.count ?? 0;
}

export async function trim(s: SqlSessionState, scope: Scope, keep: number, filters: Filter[]): Promise<number> {
  await settle(s, null);
  if (!Number.isInteger(keep) || keep < 1) throw new StorageError(`trim keeps at least one object (asked ${keep})`);
  const query = new QueryBuilder({ indexed: s.context.indexed() });
  const where = query.where(scope, { filters });
  const table = tableOf(scope);
  // The newest `keep` are found walking the timestamp index backwards; the older matches
  // are deleted in the same statement.
  const [row] = await s.query<{ count: number }>(
    `WITH oldest_kept AS (
       SELECT last_modified FROM ${table} WHERE ${where}
       ORDER BY last_modified DESC OFFSET ${query.bind(keep - 1)} LIMIT 1
     ),
     trimmed AS (
       DELETE FROM ${table} WHERE ${where} AND last_modified < (SELECT last_modified FROM oldest_kept) RETURNING 1
     )
     SELECT count(*)::int AS count FROM trimmed`,
    query.params,
    DYNAMIC,
  );
  s.writes += row?.count ?? 0;
  return row?.count ?? 0;
}
