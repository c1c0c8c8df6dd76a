/**
 * Applies one page of server changes to the replica, in one transaction with the pull checkpoint
 * that describes it. Decides per record (§15.4 of the protocol reference, rethought around the
 * outbox): no pending change → take the server version; pending change → converge when equal,
 * ignore our own base version, otherwise report a conflict.
 */
import type { HeldRecords, LocalCollection, PageChanges } from '../store/local-collection.js';
import { asLocal, sameRecord } from '../store/record-fields.js';
import type { ConflictEntry as Conflict, PullCheckpoint, RemoteRecord } from '../store/types.js';

export interface ImportOutcome {
  /** Records created, updated or deleted locally. */
  applied: { type: 'create' | 'update' | 'delete'; id: string }[];
  /** Changes with no local effect (already known, tombstone of an unknown record, blocked). */
  skipped: number;
  /** Of `applied`, the deletions of records that left a partial replica's subset (the server's stubs). */
  left: number;
  conflicts: Conflict[];
}

interface PagePlan extends PageChanges {
  outcome: ImportOutcome;
}

/**
 * @param cold the replica has never completed a pull: with no pending change either, every record
 *   is simply stored (no per-record lookups — what makes a large first sync fast). Records already
 *   stored by an earlier page of this pull are only ever replaced by newer versions.
 */
export async function importPage(
  local: LocalCollection,
  page: readonly RemoteRecord[],
  checkpoint: PullCheckpoint | null,
  cold = false,
): Promise<ImportOutcome> {
  const ids = page.map((record) => record.id);
  const plan = await local.applyPulledPage(ids, checkpoint, cold, (held) =>
    held ? reconcile(page, held) : storeAll(page),
  );
  return plan.outcome;
}

/** Nothing held but this pull's records, nothing pending: every version is stored, every tombstone removes. */
function storeAll(page: readonly RemoteRecord[]): PagePlan {
  const live = page.filter((record) => record.deleted !== true);
  const gone = page.filter((record) => record.deleted === true).map((record) => record.id);
  return {
    put: live.map(asLocal),
    remove: gone,
    settled: [],
    waiting: [],
    outcome: {
      applied: live.map((record) => ({ type: 'create', id: record.id })),
      skipped: gone.length,
      left: 0,
      conflicts: [],
    },
  };
}

function reconcile(page: readonly RemoteRecord[], { locals, entries }: HeldRecords): PagePlan {
  const plan: PagePlan = {
    put: [],
    remove: [],
    settled: [],
    waiting: [],
    outcome: { applied: [], skipped: 0, left: 0, conflicts: [] },
  };
  const { outcome } = plan;
  page.forEach((remote, i) => {
    const local = locals[i];
    const entry = entries[i];
    const tombstone = remote.deleted === true;
    if (remote.unmatched === true) {
      // Left the subset (a partial replica's stub; the record still exists): dropped unless a
      // local change waits, which is pushed (or waits for the app) as usual.
      if (local && !entry) {
        plan.remove.push(remote.id);
        outcome.applied.push({ type: 'delete', id: remote.id });
        outcome.left++;
      } else outcome.skipped++;
      return;
    }
    if (entry?.blocked) {
      // A manual conflict waits for the app: keep its server side current.
      plan.waiting.push(remote);
      outcome.skipped++;
      return;
    }
    if (!entry) {
      if (tombstone) {
        if (local) {
          plan.remove.push(remote.id);
          outcome.applied.push({ type: 'delete', id: remote.id });
        } else outcome.skipped++;
      } else if (local?.last_modified === remote.last_modified) outcome.skipped++;
      else {
        plan.put.push(asLocal(remote));
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
        plan.settled.push(remote.id);
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
      plan.put.push(asLocal(remote));
      plan.settled.push(remote.id);
      outcome.applied.push({ type: 'update', id: remote.id });
      return;
    }
    outcome.conflicts.push({ id: remote.id, type: 'incoming', local: local ?? null, remote });
  });
  return plan;
}
