/**
 * Sync bookkeeping in `$meta`, and the only writer of that table: the completed-pull state and
 * the in-progress pull checkpoint.
 */
import type { CollectionDb } from './db.js';
import type { PullCheckpoint, SyncState } from './types.js';

const STATE = 'sync';
const CHECKPOINT = 'pull-checkpoint';
const SERVER_COUNT = 'server-count';
const READABLE_CHECK = 'readable-check';
const DUMP_LOADING = 'dump-loading';
const SUBSET = 'subset';

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

/** The subset (sync/subset.ts) the replica was last reconciled with; null: the whole collection, or never. */
export async function readSubset(db: CollectionDb): Promise<string | null> {
  const entry = await db.$meta.get(SUBSET);
  return typeof entry?.value === 'string' ? entry.value : null;
}

export async function writeSubset(db: CollectionDb, key: string | null): Promise<void> {
  if (key === null) await db.$meta.delete(SUBSET);
  else await db.$meta.put({ key: SUBSET, value: key });
}

/** The subset changed: the next pull lists it whole (records held stay until the reconciliation drops them). */
export async function restartPull(db: CollectionDb): Promise<void> {
  await db.transaction('rw', db.$meta, async () => {
    await db.$meta.bulkDelete([STATE, CHECKPOINT]);
  });
}

/** Forgets every sync state: the next pull starts from nothing. */
export async function resetSyncMeta(db: CollectionDb): Promise<void> {
  await db.$meta.clear();
}

/**
 * How many records the server should show us (those held, plus pending deletions, minus pending
 * creations), kept up to date by every transaction that changes it, so that comparing it with the
 * server's `Total-Objects` never counts the replica. null: unknown (a cold pull stores pages
 * without looking at what is held), counted again at the next check.
 */
export async function readServerCount(db: CollectionDb): Promise<number | null> {
  const entry = await db.$meta.get(SERVER_COUNT);
  return typeof entry?.value === 'number' ? entry.value : null;
}

/** Inside the transaction that changed it; `null` makes it unknown. */
export async function writeServerCount(db: CollectionDb, count: number | null): Promise<void> {
  if (count === null) await db.$meta.delete(SERVER_COUNT);
  else await db.$meta.put({ key: SERVER_COUNT, value: count });
}

/** Adds `delta` inside the transaction that changed it (an unknown count stays unknown). */
export async function adjustServerCount(db: CollectionDb, delta: number): Promise<void> {
  if (delta === 0) return;
  const count = await readServerCount(db);
  if (count !== null) await writeServerCount(db, count + delta);
}

/** When records were last checked for lost read permission (ms since epoch), null: never. */
export async function readReadableCheck(db: CollectionDb): Promise<number | null> {
  const entry = await db.$meta.get(READABLE_CHECK);
  return typeof entry?.value === 'number' ? entry.value : null;
}

export async function writeReadableCheck(db: CollectionDb, at: number): Promise<void> {
  await db.$meta.put({ key: READABLE_CHECK, value: at });
}

/** A dump is being loaded into an empty replica (set by its first transaction, removed by its last). */
export async function readDumpMarker(db: CollectionDb): Promise<boolean> {
  return (await db.$meta.get(DUMP_LOADING)) !== undefined;
}

export async function writeDumpMarker(db: CollectionDb, loading: boolean): Promise<void> {
  if (loading) await db.$meta.put({ key: DUMP_LOADING, value: true });
  else await db.$meta.delete(DUMP_LOADING);
}
