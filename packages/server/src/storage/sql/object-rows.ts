/** What the objects facet's modules share about rows: their shapes as handed out, and the cache they touch. */
import type { Scope, StoredObject, Tombstone } from '../types.js';
import type { ObjectRow, SqlSessionState } from './session-state.js';
import { isCachedResource, objectKey } from './shared-cache.js';

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
