/**
 * Sync bookkeeping in `$meta`, and the only writer of that table: the completed-pull state and
 * the in-progress pull checkpoint.
 */
import type { CollectionDb } from './db.js';
import type { PullCheckpoint, SyncState } from './types.js';

const STATE = 'sync';
const CHECKPOINT = 'pull-checkpoint';

export async function readSyncState(db: CollectionDb): Promise<SyncState> {
  const entry = await db.$meta.get(STATE);
  return (entry?.value as SyncState | undefined) ?? { since: null, etag: null, lastSyncAt: null };
}

export async function writeSyncState(db: CollectionDb, state: SyncState): Promise<void> {
  await db.$meta.put({ key: STATE, value: state });
}

export async function readCheckpoint(db: CollectionDb): Promise<PullCheckpoint | null> {
  const entry = await db.$meta.get(CHECKPOINT);
  return (entry?.value as PullCheckpoint | undefined) ?? null;
}

/** Inside the transaction that writes the page the checkpoint describes, when there is one. */
export async function writeCheckpoint(db: CollectionDb, checkpoint: PullCheckpoint | null): Promise<void> {
  if (checkpoint) await db.$meta.put({ key: CHECKPOINT, value: checkpoint });
  else await db.$meta.delete(CHECKPOINT);
}

/** A pull completed: its state replaces the previous one, and its checkpoint goes, together. */
export async function completePull(db: CollectionDb, state: SyncState): Promise<void> {
  await db.transaction('rw', db.$meta, async () => {
    await writeSyncState(db, state);
    await writeCheckpoint(db, null);
  });
}

/** Forgets every sync state: the next pull starts from nothing. */
export async function resetSyncMeta(db: CollectionDb): Promise<void> {
  await db.$meta.clear();
}
