/**
 * Loading a shipped dump into the replica (`collection.loadDump`): a writer of `records` beside
 * local-collection.ts, kept apart: one job per module.
 */
import type { CollectionDb } from './db.js';
import {
  adjustServerCount,
  readCheckpoint,
  readDumpMarker,
  readSyncState,
  writeDumpMarker,
  writeServerCount,
  writeSyncState,
} from './meta.js';
import type { LocalRecord } from './types.js';

/** Records per transaction (fewer, larger transactions were measured slower in Chromium). */
const DUMP_CHUNK = 5_000;
/** The first transaction of a dump that downloads: as soon as this many are read, so that queries can start. */
const FIRST_CHUNK = 500;

/** A dump's records, in batches as they are read (one batch: a dump in memory), then its sync state. */
export interface DumpBatches {
  batches: AsyncIterable<LocalRecord[]> | Iterable<LocalRecord[]>;
  state(): { since: number | null; etag: number | null };
  /** After each transaction that stored records: how many so far (the collection is queryable). */
  onStored?(loaded: number): void;
  /** The dump is downloading: its first transaction as soon as FIRST_CHUNK records are read. */
  downloading?: boolean;
}

/**
 * Loads a dump (the server's records at `etag`, the newest `last_modified` among them being
 * `since`). Into a replica that holds nothing (never synced, nothing pending), it is stored as
 * is, in chunks of DUMP_CHUNK records (a dump that downloads: the first one as soon as FIRST_CHUNK are
 * read, queryable while the rest arrives), and the last chunk's transaction writes the sync
 * state it stands for, so the next pull is `_since` from it — a 304 when the server has not changed
 * since. A load cut short (a closed tab, a broken download) leaves a marker: the next load starts it
 * over, and a sync meanwhile is a full (correct) pull. Into a replica that holds something, only
 * records newer than the ones held and without a pending change are taken, a chunk per transaction,
 * and the sync state stays (a dump has no tombstones: the next pull brings deletions).
 * The caller holds the sync lock (no pull interleaves its older versions with newer ones).
 */
export async function loadDump(db: CollectionDb, dump: DumpBatches): Promise<{ loaded: number; skipped: number }> {
  const fresh = await db.transaction('rw', [db.records, db.$outbox, db.$meta], async () => {
    const [pending, sync, checkpoint, unfinished] = await Promise.all([
      db.$outbox.count(),
      readSyncState(db),
      readCheckpoint(db),
      readDumpMarker(db),
    ]);
    if (pending > 0 || sync.since !== null || checkpoint !== null) return false;
    if (unfinished) await db.records.clear();
    else if ((await db.records.count()) > 0) return false;
    await writeDumpMarker(db, true);
    return true;
  });
  return fresh ? loadFresh(db, dump) : loadNewer(db, dump);
}

async function loadFresh(db: CollectionDb, dump: DumpBatches): Promise<{ loaded: number; skipped: number }> {
  let waiting: LocalRecord[] = [];
  let loaded = 0;
  const store = async (records: LocalRecord[], last: boolean) => {
    await db.transaction('rw', [db.records, db.$meta], async () => {
      await db.records.bulkPut(records);
      if (last) {
        const { since, etag } = dump.state();
        await Promise.all([
          writeSyncState(db, { since, etag, lastSyncAt: null }),
          writeServerCount(db, loaded + records.length),
          writeDumpMarker(db, false),
        ]);
      }
    });
    loaded += records.length;
    if (records.length > 0) dump.onStored?.(loaded);
  };
  for await (const batch of dump.batches) {
    waiting = waiting.length === 0 ? batch : waiting.concat(batch);
    // A download's first transaction small, whatever the piece the network handed over: the first screen waits on it.
    const first = dump.downloading ? FIRST_CHUNK : DUMP_CHUNK;
    while (waiting.length >= (loaded === 0 ? first : DUMP_CHUNK)) {
      const size = loaded === 0 ? first : DUMP_CHUNK;
      await store(waiting.slice(0, size), false);
      waiting = waiting.slice(size);
    }
  }
  await store(waiting, true);
  return { loaded, skipped: 0 };
}

async function loadNewer(db: CollectionDb, dump: DumpBatches): Promise<{ loaded: number; skipped: number }> {
  let loaded = 0;
  let skipped = 0;
  for await (const batch of dump.batches) {
    for (let start = 0; start < batch.length; start += DUMP_CHUNK) {
      const records = batch.slice(start, start + DUMP_CHUNK);
      const newer = await db.transaction('rw', [db.records, db.$outbox, db.$meta], async () => {
        const ids = records.map((record) => record.id);
        const [locals, entries] = await Promise.all([db.records.bulkGet(ids), db.$outbox.bulkGet(ids)]);
        const taken: LocalRecord[] = [];
        let added = 0;
        records.forEach((record, i) => {
          if (entries[i] || (locals[i]?.last_modified ?? -1) >= (record.last_modified ?? 0)) return;
          taken.push(record);
          if (!locals[i]) added++;
        });
        await db.records.bulkPut(taken);
        await adjustServerCount(db, added);
        return taken.length;
      });
      loaded += newer;
      skipped += records.length - newer;
      if (newer > 0) dump.onStored?.(loaded);
    }
  }
  return { loaded, skipped };
}
