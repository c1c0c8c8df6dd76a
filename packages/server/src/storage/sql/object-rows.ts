/** What the objects facet's modules share about rows: their shapes as handed out, and the cache they touch. */
import type { Scope, StoredObject, Tombstone } from '../types.js';
import type { ObjectRow, SqlSessionState } from './session-state.js';
import { isCachedResource, objectKey } from './shared-cache.js';

/**
 * One object by its key, bound as `$1` parent_id, `$2` resource_name, `$3` id (`alias`: the
 * table's), taken by the primary key whatever the statistics say. Without any (rows not
 * analysed yet: a burst of growth) PostgreSQL rates the index (parent_id, resource_name,
 * last_modified) as good as the key, since both are estimated to find one row, and walks the
 * whole collection to filter one id (5,000 records: 0.85 ms instead of 0.07, and it grows with
 * the collection). The row comparison, always true beside the equalities, is a condition only the
 * primary key takes whole: it wins the tie, also in a generic plan (issue 36 item 5).
 */
export function byKey(alias = ''): string {
  const column = (name: string) => (alias ? `${alias}.${name}` : name);
  const [parent, resource, id] = [column('parent_id'), column('resource_name'), column('id')];
  return `${parent} = $1 AND ${resource} = $2 AND ${id} = $3 AND (${parent}, ${resource}, ${id}) >= ($1, $2, $3)`;
}

/** What a tombstone's `data` holds, so that a `deleted` filter matches tombstones as in Kinto. */
export const TOMBSTONE_DATA = '{"deleted": true}';

export function toLiveObject(row: ObjectRow): StoredObject {
  return { ...row.data, id: row.id, last_modified: row.last_modified };
}

export function toTombstone(row: ObjectRow): Tombstone {
  return { id: row.id, last_modified: row.last_modified, deleted: true };
}

/** Records a change of a cached object (buckets, collections). */
export function changedObject(s: SqlSessionState, scope: Scope, id: string): void {
  if (isCachedResource(scope.resourceName))
    s.invalidate({ kind: 'object', key: objectKey(scope.parentId, scope.resourceName, id) });
}
