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

/**
 * Loads a dump (the server's records at `etag`, the newest `last_modified` among them being
 * `since`). Into a replica that holds nothing (never synced, nothing pending), it is stored as
 * is, in chunks of DUMP_CHUNK records, and the last chunk's transaction writes the sync state it
 * stands for, so the next pull is `_since` from it — a 304 when the server has not changed since.
 * A load cut short (a closed tab) leaves a marker: the next load starts it over, and a sync
 * meanwhile is a full (correct) pull. Into a replica that holds something, only records newer
 * than the ones held and without a pending change are taken, in one transaction, and the sync
 * state stays (a dump has no tombstones: the next pull brings deletions).
 * The caller holds the sync lock (no pull interleaves its older versions with newer ones).
 */
export async function loadDump(
  db: CollectionDb,
  records: readonly LocalRecord[],
  state: { since: number | null; etag: number | null },
): Promise<{ loaded: number; skipped: number }> {
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
  if (fresh) {
    for (let start = 0; start < records.length || start === 0; start += DUMP_CHUNK) {
      const chunk = records.slice(start, start + DUMP_CHUNK) as LocalRecord[];
      const last = start + DUMP_CHUNK >= records.length;
      await db.transaction('rw', [db.records, db.$meta], async () => {
        await db.records.bulkPut(chunk);
        if (last) {
          await Promise.all([
            writeSyncState(db, { since: state.since, etag: state.etag, lastSyncAt: null }),
            writeServerCount(db, records.length),
            writeDumpMarker(db, false),
          ]);
        }
      });
    }
    return { loaded: records.length, skipped: 0 };
  }
  return db.transaction('rw', [db.records, db.$outbox, db.$meta], async () => {
    const ids = records.map((record) => record.id);
    const [locals, entries] = await Promise.all([db.records.bulkGet(ids), db.$outbox.bulkGet(ids)]);
    const newer: LocalRecord[] = [];
    let added = 0;
    records.forEach((record, i) => {
      if (entries[i] || (locals[i]?.last_modified ?? -1) >= (record.last_modified ?? 0)) return;
      newer.push(record);
      if (!locals[i]) added++;
    });
    await db.records.bulkPut(newer);
    await adjustServerCount(db, added);
    return { loaded: newer.length, skipped: records.length - newer.length };
  });
}
