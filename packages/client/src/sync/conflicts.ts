/** Conflict strategies: how a conflict found while syncing is settled. */
import type { LocalCollection } from '../store/local-collection.js';
import type { ConflictEntry } from '../store/types.js';

export type Conflict = ConflictEntry;

/**
 * A merge function returns the record to keep (pushed on top of the server version) or null to
 * delete it. It may be async.
 */
export type MergeFunction = (
  conflict: Conflict,
) => Record<string, unknown> | null | Promise<Record<string, unknown> | null>;

export type ConflictStrategy = 'server-wins' | 'client-wins' | 'manual' | MergeFunction;

export type Resolution =
  | { kind: 'remote' }
  | { kind: 'local' }
  | { kind: 'merged'; record: Record<string, unknown> | null }
  /** Manual strategy: keep the conflict until the app resolves it. */
  | { kind: 'defer' };

export async function chooseResolution(strategy: ConflictStrategy, conflict: Conflict): Promise<Resolution> {
  if (strategy === 'server-wins') return { kind: 'remote' };
  if (strategy === 'client-wins') return { kind: 'local' };
  if (strategy === 'manual') return { kind: 'defer' };
  return { kind: 'merged', record: await strategy(conflict) };
}

/**
 * Writes a resolution through the replica. Returns true when it left a change to push (the local
 * side won).
 */
export async function applyResolution(
  local: LocalCollection,
  conflict: Conflict,
  resolution: Resolution,
): Promise<boolean> {
  if (resolution.kind === 'defer') {
    await local.deferConflict(conflict);
    return false;
  }
  return local.settleConflict(conflict, resolution.kind === 'merged' ? { merged: resolution.record } : resolution.kind);
}
