/**
 * One collection's replica, and the only writer of its `records`, `$outbox` and `$conflicts`
 * tables. A record and its pending change are always written in ONE transaction, so a crash can
 * never leave a change that will not be pushed. The app writes through create/update/delete, the
 * sync engine through applyPulledPage, acknowledgePushed and the conflict calls; how each write
 * changes a pending entry is decided by the rules of outbox.ts.
 */
import type { Collection } from 'dexie';
import type { CollectionDb } from './db.js';
import { adjustServerCount, readServerCount, resetSyncMeta, writeCheckpoint, writeServerCount } from './meta.js';
import { afterPublish, afterSettlement } from './outbox.js';
import { asLocal, withServerVersion } from './record-fields.js';
import { toStoreError } from './store-errors.js';
import { type LocalChange, WriteQueue } from './write-queue.js';
import type { ConflictEntry, LocalRecord, OutboxEntry, PullCheckpoint, RemoteRecord } from './types.js';

export type IndexValue = string | number | Date | ArrayBuffer | ArrayBufferView | IndexValue[];

/** A query served by an IndexedDB index (never by scanning in memory). */
export interface ListQuery {
  /** Declared index (or `id`, `last_modified`) used for filtering and ordering. */
  index?: string;
  equals?: IndexValue;
  anyOf?: IndexValue[];
  between?: [IndexValue, IndexValue];
  above?: IndexValue;
  below?: IndexValue;
  startsWith?: string;
  reverse?: boolean;
  offset?: number;
  limit?: number;
}

/** What the replica holds for the records of a pulled page, in the page's order. */
export interface HeldRecords {
  locals: (LocalRecord | undefined)[];
  entries: (OutboxEntry | undefined)[];
}

/** What a pulled page changes in the replica (decided by the sync engine from what it holds). */
export interface PageChanges {
  /** Server versions to store. */
  put: LocalRecord[];
  /** Records deleted on the server. */
  remove: string[];
  /** Pending changes the server already holds: nothing left to push. */
  settled: string[];
  /** Newer server versions of records whose conflict waits for the app: its stored conflict gets them. */
  waiting: RemoteRecord[];
}

/** A change the server accepted: `server` is its new version, null when deleted. */
export interface Published {
  sent: OutboxEntry;
  server: RemoteRecord | null;
}

/** What an emptied server copy left in the replica (`forgetEmptied`), by record id. */
export interface EmptiedOutcome {
  /** Synced records the server no longer has: removed. */
  dropped: string[];
  /** Pending updates of records the server no longer has: now creations, pushed as such. */
  recreated: string[];
  /** Pending deletions of records the server no longer has: nothing left to do. */
  settled: string[];
  /** Pending updates to settle as conflicts with the server's deletion (manual strategy). */
  conflicts: ConflictEntry[];
}

/** How a conflict is settled: the server's version, ours as held now, or a merged record (null deletes). */
export type Settlement = 'remote' | 'local' | { merged: Record<string, unknown> | null };

function mapStoreError(error: unknown): never {
  throw toStoreError(error, 'reading the replica');
}

/**
 * What one record adds to the count the server should show us: 1 when held, minus a pending
 * creation (not on the server yet), plus a pending deletion (still there). Local writes never
 * change the sum; only what sync writes does (see readServerCount).
 */
function serverShare(held: boolean, entry: OutboxEntry | null | undefined): number {
  return (held ? 1 : 0) - (entry?.op === 'create' ? 1 : 0) + (entry?.op === 'delete' ? 1 : 0);
}

export class LocalCollection {
  readonly db: CollectionDb;
  readonly #newId: () => string;
  readonly #writes: WriteQueue;
  #lastSeq = 0;

  /** `onLocalWrites`: what the app's writes changed, once per transaction, after its commit. */
  constructor(db: CollectionDb, newId: () => string, onLocalWrites: (changes: LocalChange[]) => void = () => {}) {
    this.db = db;
    this.#newId = newId;
    this.#writes = new WriteQueue(db, newId, () => this.#seq(), onLocalWrites);
  }

  /** Outbox order: time-based so tabs interleave sensibly, strictly increasing within this tab. */
  #seq(): number {
    this.#lastSeq = Math.max(this.#lastSeq + 1, Date.now() * 1000);
    return this.#lastSeq;
  }

  /** Creates a record and its pending entry (id: `data.id` or a new one); writes of one tick share a transaction. */
  create(data: Record<string, unknown>): Promise<LocalRecord> {
    return this.#writes.create(data);
  }

  async get(id: string): Promise<LocalRecord | undefined> {
    try {
      return await this.db.records.get(id);
    } catch (error) {
      return mapStoreError(error);
    }
  }

  /** Replaces the record's fields (or merges them with `patch`). */
  update(id: string, data: Record<string, unknown>, options: { patch?: boolean } = {}): Promise<LocalRecord> {
    return this.#writes.update(id, data, options.patch === true);
  }

  delete(id: string): Promise<void> {
    return this.#writes.delete(id);
  }

  #collection(query: ListQuery) {
    const table = this.db.records;
    const index = query.index ?? 'id';
    let collection: Collection<LocalRecord, string>;
    if (query.equals !== undefined) collection = table.where(index).equals(query.equals as never);
    else if (query.anyOf !== undefined) collection = table.where(index).anyOf(query.anyOf as never[]);
    else if (query.between !== undefined)
      collection = table.where(index).between(query.between[0] as never, query.between[1] as never, true, true);
    else if (query.above !== undefined) collection = table.where(index).above(query.above as never);
    else if (query.below !== undefined) collection = table.where(index).below(query.below as never);
    else if (query.startsWith !== undefined) collection = table.where(index).startsWith(query.startsWith);
    else collection = table.orderBy(index);
    if (query.reverse) collection = collection.reverse();
    if (query.offset) collection = collection.offset(query.offset);
    if (query.limit !== undefined) collection = collection.limit(query.limit);
    return collection;
  }

  async list(query: ListQuery = {}): Promise<LocalRecord[]> {
    try {
      return await this.#collection(query).toArray();
    } catch (error) {
      return mapStoreError(error);
    }
  }

  async count(query: ListQuery = {}): Promise<number> {
    try {
      return await this.#collection(query).count();
    } catch (error) {
      return mapStoreError(error);
    }
  }

  /** Pending changes, oldest first (those blocked by a manual conflict included). */
  pending(): Promise<OutboxEntry[]> {
    return this.db.$outbox.orderBy('seq').toArray();
  }

  pendingCount(): Promise<number> {
    return this.db.$outbox.count();
  }

  /** The records of `ids`, in that order (undefined where there is none). */
  getMany(ids: string[]): Promise<(LocalRecord | undefined)[]> {
    return this.db.records.bulkGet(ids);
  }

  conflicts(): Promise<ConflictEntry[]> {
    return this.db.$conflicts.toArray();
  }

  /**
   * Records the server should show us: those held, plus pending deletions, minus pending
   * creations. Kept as a number (readServerCount): counted only when unknown.
   */
  expectedServerCount(): Promise<number> {
    const { db } = this;
    return db.transaction('rw', db.records, db.$outbox, db.$meta, async () => {
      const kept = await readServerCount(db);
      if (kept !== null) return kept;
      const count = await this.#countServerShare();
      await writeServerCount(db, count);
      return count;
    });
  }

  async #countServerShare(): Promise<number> {
    const { db } = this;
    const [records, creates, deletes] = await Promise.all([
      db.records.count(),
      db.$outbox.filter((entry) => entry.op === 'create').count(),
      db.$outbox.filter((entry) => entry.op === 'delete').count(),
    ]);
    return records - creates + deletes;
  }

  /**
   * Writes one pulled page and the checkpoint that describes it, in one transaction. `decide` sees
   * what the replica holds for `ids`, read in that transaction; it gets null instead when the pull
   * is `cold` (the replica holds only what this pull brought) and nothing is pending, since then
   * there is nothing to look up: what makes a large first sync fast.
   */
  async applyPulledPage<P extends PageChanges>(
    ids: string[],
    checkpoint: PullCheckpoint | null,
    cold: boolean,
    decide: (held: HeldRecords | null) => P,
  ): Promise<P> {
    const { db } = this;
    return db.transaction('rw', [db.records, db.$outbox, db.$conflicts, db.$meta], async () => {
      const nothingPending = (await db.$outbox.count()) === 0;
      let held: HeldRecords | null = null;
      if (!cold || !nothingPending) {
        const [locals, entries] = await Promise.all([
          db.records.bulkGet(ids),
          nothingPending ? ids.map(() => undefined) : db.$outbox.bulkGet(ids),
        ]);
        held = { locals, entries };
      }
      const changes = decide(held);
      await Promise.all([
        changes.put.length ? db.records.bulkPut(changes.put) : undefined,
        changes.remove.length ? db.records.bulkDelete(changes.remove) : undefined,
        changes.settled.length ? db.$outbox.bulkDelete(changes.settled) : undefined,
        // A cold page is stored without looking at what is held: the count becomes unknown.
        held ? adjustServerCount(db, pageShareDelta(ids, held, changes)) : writeServerCount(db, null),
      ]);
      for (const remote of changes.waiting) {
        const stored = await db.$conflicts.get(remote.id);
        if (stored) await db.$conflicts.put({ ...stored, remote });
      }
      if (checkpoint) await writeCheckpoint(db, checkpoint);
      return changes;
    });
  }

  /** Records changes the server accepted, in one transaction; what the app wrote meanwhile stays pending. */
  async acknowledgePushed(published: readonly Published[]): Promise<void> {
    if (published.length === 0) return;
    const { db } = this;
    await db.transaction('rw', db.records, db.$outbox, db.$meta, async () => {
      // Read everything at once, decide, write everything at once: two round trips per chunk.
      const ids = published.map(({ sent }) => sent.id);
      const [currents, locals] = await Promise.all([db.$outbox.bulkGet(ids), db.records.bulkGet(ids)]);
      const entries: OutboxEntry[] = [];
      const done: string[] = [];
      const records: LocalRecord[] = [];
      let delta = 0;
      published.forEach(({ sent, server }, i) => {
        const current = currents[i];
        const local = locals[i];
        const next = afterPublish(sent, current, server?.last_modified ?? null, this.#newId);
        if (next) entries.push(next);
        else done.push(sent.id);
        let held = local !== undefined;
        if (current?.rev === sent.rev) {
          if (server) {
            records.push(asLocal(server));
            held = true;
          }
        } else if (local && next) {
          // Written again meanwhile: the local version now stands on the version just published.
          records.push(withServerVersion(local, next.base));
        }
        delta += serverShare(held, next) - serverShare(local !== undefined, current);
      });
      await Promise.all([
        entries.length ? db.$outbox.bulkPut(entries) : undefined,
        done.length ? db.$outbox.bulkDelete(done) : undefined,
        records.length ? db.records.bulkPut(records) : undefined,
        adjustServerCount(db, delta),
      ]);
    });
  }

  /** Keeps a conflict for the app (manual strategy): its change is not pushed until it is settled. */
  async deferConflict(conflict: ConflictEntry): Promise<void> {
    const { db } = this;
    await db.transaction('rw', db.$outbox, db.$conflicts, async () => {
      const entry = await db.$outbox.get(conflict.id);
      await db.$conflicts.put(conflict);
      if (entry) await db.$outbox.put({ ...entry, blocked: true });
    });
  }

  /**
   * Settles a conflict. Returns true when it left a change to push (the local side won). The local
   * state is re-read inside the transaction: a write made since the conflict was found is kept.
   */
  async settleConflict(conflict: ConflictEntry, settlement: Settlement): Promise<boolean> {
    const { db } = this;
    return db.transaction('rw', [db.records, db.$outbox, db.$conflicts, db.$meta], async () => {
      const id = conflict.id;
      const [entry, held] = await Promise.all([db.$outbox.get(id), db.records.get(id)]);
      const remote = conflict.remote && !conflict.remote.deleted ? conflict.remote : null;
      await db.$conflicts.delete(id);
      let keep: Record<string, unknown> | null;
      if (settlement === 'remote') keep = remote;
      else if (settlement === 'local') keep = entry?.op === 'delete' ? null : (held ?? conflict.local);
      else keep = settlement.merged;
      const next = afterSettlement(id, keep, remote, entry?.seq ?? this.#seq(), this.#newId);
      await Promise.all([
        next.record ? db.records.put(next.record) : db.records.delete(id),
        next.entry ? db.$outbox.put(next.entry) : db.$outbox.delete(id),
        adjustServerCount(db, serverShare(next.record !== null, next.entry) - serverShare(held !== undefined, entry)),
      ]);
      return next.entry !== null;
    });
  }

  /** Removes the records `isReadable` rejects, except those with a pending change; returns their ids. */
  async removeUnreadable(isReadable: (id: string) => boolean): Promise<string[]> {
    const { db } = this;
    return db.transaction('rw', db.records, db.$outbox, db.$meta, async () => {
      const pending = new Set((await db.$outbox.toCollection().primaryKeys()) as string[]);
      const ids = (await db.records.toCollection().primaryKeys()) as string[];
      const gone = ids.filter((id) => !pending.has(id) && !isReadable(id));
      await db.records.bulkDelete(gone);
      // Every record was looked at: count exactly (this also repairs any drift).
      await writeServerCount(db, await this.#countServerShare());
      return gone;
    });
  }

  /**
   * The server's copy was emptied (the collection deleted and re-created, or the server flushed)
   * and now holds only the records `onServer` accepts. In one transaction, for every record or
   * pending change it no longer has:
   * - a synced record (nothing pending) is dropped;
   * - a pending update now creates the record again (base null, no server version), unless
   *   `asConflicts`, when it is returned as an incoming conflict against a deletion (`remote`
   *   null) for the manual strategy to keep;
   * - a pending creation stays as it is; a pending deletion is done (gone on both sides, so
   *   is a conflict it waited in);
   * - a conflict already waiting for the app gets the server side it has now: none.
   */
  async forgetEmptied(onServer: (id: string) => boolean, asConflicts: boolean): Promise<EmptiedOutcome> {
    const { db } = this;
    return db.transaction('rw', [db.records, db.$outbox, db.$conflicts, db.$meta], async () => {
      const outcome: EmptiedOutcome = { dropped: [], recreated: [], settled: [], conflicts: [] };
      const entries = new Map((await db.$outbox.toArray()).map((entry) => [entry.id, entry]));
      const ids = (await db.records.toCollection().primaryKeys()) as string[];
      const gone = ids.filter((id) => !onServer(id));
      const records = await db.records.bulkGet(gone);
      for (const [i, id] of gone.entries()) {
        const entry = entries.get(id);
        const record = records[i]!;
        if (!entry) {
          outcome.dropped.push(id);
        } else if (entry.blocked) {
          const conflict = await db.$conflicts.get(id);
          if (conflict) await db.$conflicts.put({ ...conflict, remote: null });
        } else if (entry.op === 'update') {
          if (asConflicts) outcome.conflicts.push({ id, type: 'incoming', local: record, remote: null });
          else {
            await db.$outbox.put({ ...entry, op: 'create', base: null });
            await db.records.put(withServerVersion(record, null));
            outcome.recreated.push(id);
          }
        }
      }
      // Deleted here and gone there: done, and so is a conflict it waited in.
      for (const entry of entries.values())
        if (entry.op === 'delete' && !onServer(entry.id)) outcome.settled.push(entry.id);
      await Promise.all([
        db.records.bulkDelete(outcome.dropped),
        db.$outbox.bulkDelete(outcome.settled),
        db.$conflicts.bulkDelete(outcome.settled),
      ]);
      // Every record was looked at: count exactly.
      await writeServerCount(db, await this.#countServerShare());
      return outcome;
    });
  }

  /** Removes every local record, pending change, conflict and sync state. */
  async clear(): Promise<void> {
    const { db } = this;
    await db.transaction('rw', [db.records, db.$outbox, db.$meta, db.$conflicts], async () => {
      await Promise.all([db.records.clear(), db.$outbox.clear(), resetSyncMeta(db), db.$conflicts.clear()]);
      await writeServerCount(db, 0);
    });
  }
}

/** How a pulled page changes the server count, from what was held before it and what it changed. */
function pageShareDelta(ids: readonly string[], held: HeldRecords, changes: PageChanges): number {
  const put = new Set(changes.put.map((record) => record.id));
  const removed = new Set(changes.remove);
  const settled = new Set(changes.settled);
  let delta = 0;
  ids.forEach((id, i) => {
    const wasHeld = held.locals[i] !== undefined;
    const entry = held.entries[i];
    const isHeld = put.has(id) ? true : removed.has(id) ? false : wasHeld;
    delta += serverShare(isHeld, settled.has(id) ? undefined : entry) - serverShare(wasHeld, entry);
  });
  return delta;
}
