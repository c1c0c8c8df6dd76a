/**
 * Applies one page of server changes to the replica, in one transaction with the pull checkpoint
 * that describes it. Decides per record (§15.4 of the protocol reference, rethought around the
 * outbox): no pending change → take the server version; pending change → converge when equal,
 * ignore our own base version, otherwise report a conflict.
 */
import type { CollectionDb } from '../store/db.js';
import { writeCheckpoint } from '../store/meta.js';
import type { ConflictEntry as Conflict, LocalRecord, PullCheckpoint, RemoteRecord } from '../store/types.js';
import { sameRecord } from './equal.js';

export interface ImportOutcome {
  /** Records created, updated or deleted locally. */
  applied: { type: 'create' | 'update' | 'delete'; id: string }[];
  /** Changes with no local effect (already known, tombstone of an unknown record, blocked). */
  skipped: number;
  conflicts: Conflict[];
}

function asLocal(remote: RemoteRecord): LocalRecord {
  const { deleted: _deleted, ...record } = remote;
  return record as LocalRecord;
}

/**
 * @param cold the replica has never completed a pull: with no pending change either, every record
 *   is simply stored (no per-record lookups — what makes a large first sync fast). Records already
 *   stored by an earlier page of this pull are only ever replaced by newer versions.
 */
export async function importPage(db: CollectionDb, page: readonly RemoteRecord[], checkpoint: PullCheckpoint | null, cold = false): Promise<ImportOutcome> {
  const outcome: ImportOutcome = { applied: [], skipped: 0, conflicts: [] };
  await db.transaction('rw', [db.records, db.$outbox, db.$conflicts, db.$meta], async () => {
    const ids = page.map((record) => record.id);
    const outboxEmpty = (await db.$outbox.count()) === 0;
    if (cold && outboxEmpty) {
      const live = page.filter((record) => record.deleted !== true);
      const gone = page.filter((record) => record.deleted === true).map((record) => record.id);
      await Promise.all([db.records.bulkPut(live.map(asLocal)), gone.length ? db.records.bulkDelete(gone) : undefined]);
      outcome.applied = live.map((record) => ({ type: 'create', id: record.id }));
      outcome.skipped = gone.length;
      if (checkpoint) await writeCheckpoint(db, checkpoint);
      return;
    }
    const [locals, entries] = await Promise.all([db.records.bulkGet(ids), outboxEmpty ? ids.map(() => undefined) : db.$outbox.bulkGet(ids)]);
    const puts: LocalRecord[] = [];
    const deletes: string[] = [];
    const dropEntries: string[] = [];
    const blocked: RemoteRecord[] = [];
    page.forEach((remote, i) => {
      const local = locals[i];
      const entry = entries[i];
      const tombstone = remote.deleted === true;
      if (entry?.blocked) {
        // A manual conflict waits for the app: keep its server side current.
        blocked.push(remote);
        outcome.skipped++;
        return;
      }
      if (!entry) {
        if (tombstone) {
          if (local) {
            deletes.push(remote.id);
            outcome.applied.push({ type: 'delete', id: remote.id });
          } else outcome.skipped++;
        } else if (local?.last_modified === remote.last_modified) outcome.skipped++;
        else {
          puts.push(asLocal(remote));
          outcome.applied.push({ type: local ? 'update' : 'create', id: remote.id });
        }
        return;
      }
      // The server already holds the version our pending change was made on.
      if (entry.base === remote.last_modified) {
        outcome.skipped++;
        return;
      }
      if (entry.op === 'delete') {
        if (tombstone) {
          dropEntries.push(remote.id);
          outcome.applied.push({ type: 'delete', id: remote.id });
        } else outcome.conflicts.push({ id: remote.id, type: 'incoming', local: null, remote });
        return;
      }
      if (tombstone) {
        // Creating an id the server only has a tombstone for succeeds (If-None-Match: *).
        if (entry.op === 'create') outcome.skipped++;
        else outcome.conflicts.push({ id: remote.id, type: 'incoming', local: local ?? null, remote });
        return;
      }
      if (sameRecord(local, remote)) {
        puts.push(asLocal(remote));
        dropEntries.push(remote.id);
        outcome.applied.push({ type: 'update', id: remote.id });
        return;
      }
      outcome.conflicts.push({ id: remote.id, type: 'incoming', local: local ?? null, remote });
    });
    if (puts.length) await db.records.bulkPut(puts);
    if (deletes.length) await db.records.bulkDelete(deletes);
    if (dropEntries.length) await db.$outbox.bulkDelete(dropEntries);
    // Blocked conflicts get the newest server version.
    for (const remote of blocked) {
      const stored = await db.$conflicts.get(remote.id);
      if (stored) await db.$conflicts.put({ ...stored, remote });
    }
    if (checkpoint) await writeCheckpoint(db, checkpoint);
  });
  return outcome;
}
