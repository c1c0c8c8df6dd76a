/**
 * Conflict strategies and the one place a resolution is written to the replica (record, outbox
 * entry and conflict list in one transaction).
 */
import type { CollectionDb } from '../store/db.js';
import type { ConflictEntry, LocalRecord, OutboxEntry, RemoteRecord } from '../store/types.js';
import { payload, sameRecord } from './equal.js';

export type Conflict = ConflictEntry;

/**
 * A merge function returns the record to keep (pushed on top of the server version) or null to
 * delete it. It may be async.
 */
export type MergeFunction = (conflict: Conflict) => Record<string, unknown> | null | Promise<Record<string, unknown> | null>;

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

function stripTombstone(remote: RemoteRecord): LocalRecord {
  const { deleted: _deleted, ...record } = remote;
  return record as LocalRecord;
}

/**
 * Writes a resolution. Returns true when it left a change to push (the local side won).
 * The current local state is re-read inside the transaction: a write made meanwhile is kept.
 */
export async function applyResolution(db: CollectionDb, conflict: Conflict, resolution: Resolution, newRev: () => string): Promise<boolean> {
  return db.transaction('rw', [db.records, db.$outbox, db.$conflicts], async () => {
    const id = conflict.id;
    const entry = await db.$outbox.get(id);
    const remote = conflict.remote && !conflict.remote.deleted ? conflict.remote : null;
    if (resolution.kind === 'defer') {
      await db.$conflicts.put(conflict);
      if (entry) await db.$outbox.put({ ...entry, blocked: true });
      return false;
    }
    await db.$conflicts.delete(id);
    let keep: Record<string, unknown> | null;
    if (resolution.kind === 'remote') keep = remote;
    else if (resolution.kind === 'local') keep = entry?.op === 'delete' ? null : ((await db.records.get(id)) ?? conflict.local);
    else keep = resolution.record;

    if (keep === null && remote === null) {
      await db.records.delete(id);
      await db.$outbox.delete(id);
      return false;
    }
    if (remote !== null && keep !== null && sameRecord(keep, remote)) {
      await db.records.put(stripTombstone(remote));
      await db.$outbox.delete(id);
      return false;
    }
    const seq = entry?.seq ?? Date.now();
    let next: OutboxEntry;
    if (keep === null) {
      await db.records.delete(id);
      next = { id, op: 'delete', base: remote!.last_modified, rev: newRev(), seq };
    } else {
      const record: LocalRecord = { ...payload(keep), id, ...(remote ? { last_modified: remote.last_modified } : {}) };
      await db.records.put(record);
      next = { id, op: remote ? 'update' : 'create', base: remote ? remote.last_modified : null, rev: newRev(), seq };
    }
    await db.$outbox.put(next);
    return true;
  });
}
