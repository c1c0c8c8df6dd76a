/**
 * Where a scope's objects live, the same in both SQL dialects. History entries have a table of
 * their own (PostgreSQL migration 006): an append-only log keyed by timestamp, so that however
 * long it grows, writes only ever append to it, and never land among its old pages in the
 * table every write inserts into.
 */
import { StorageError } from './errors.js';
import { HISTORY_RESOURCE, type Scope } from './types.js';

export function tableOf(scope: Scope): 'objects' | 'history' {
  return scope.resourceName === HISTORY_RESOURCE ? 'history' : 'objects';
}

/** History entries come from `outbox.moveToScope` only (types.ts). */
export function assertNotHistory(scope: Scope): void {
  if (tableOf(scope) !== 'objects')
    throw new StorageError(`objects of ${scope.resourceName} scopes are only appended by outbox.moveToScope`);
}
