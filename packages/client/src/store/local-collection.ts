/**
 * One collection's replica, and the only writer of its `records`, `$outbox` and `$conflicts`
 * tables. A record and its pending change are always written in ONE transaction, so a crash can
 * never leave a change that will not be pushed. The app writes through create/update/delete, the
 * sync engine through applyPulledPage, acknowledgePushed and the conflict calls; how each write
 * changes a pending entry is decided by the rules of outbox.ts.
 */
import { type Collection, liveQuery, type Observable } from 'dexie';
import { StoreError } from '../errors.js';
import type { CollectionDb } from './db.js';
import { adjustServerCount, readServerCount, resetSyncMeta, writeCheckpoint, writeServerCount } from './meta.js';
import { afterPublish, afterSettlement, nextOutboxEntry } from './outbox.js';
import { asLocal } from './record-fields.js';
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

/** How a conflict is settled: the server's version, ours as the replica holds it now, or a merged record (null deletes). */
export type Settlement = 'remote' | 'local' | { merged: Record<string, unknown> | null };

function mapStoreError(error: unknown): never {
  if (error instanceof StoreError) throw error;
  throw new StoreError('QUIRE_ERR_STORE_FAILED', `IndexedDB failure: ${(error as Error).message}`, { cause: error });
}

/**
 * What one record adds to the count the server should show us: 1 when held, minus a pending
 * creation (not on the server yet), plus a pending deletion (still there). Local writes never
 * change the sum; only what sync writes does (see readServerCount).
 */
function serverShare(held: boolean, entry: OutboxEntry | null | undefined): number {
  return (held ? 1 : 0) - (entry?.op === 'create' ? 1 : 0) + (entry?.op === 'delete' ? 1 : 0);
}

/** The record with `last_modified` set to `version`, or without one when null: only the server sets it. */
function withServerVersion<T extends Record<string, unknown>>(record: T, version: number | null): T {
  const { last_modified: _previous, ...fields } = record;
  return (version === null ? fields : { ...fields, last_modified: version }) as T;
}

export class LocalCollection {
  readonly db: CollectionDb;
  readonly #newId: () => string;
  #lastSeq = 0;

  constructor(db: CollectionDb, newId: () => string) {
    this.db = db;
    this.#newId = newId;
  }

  /** Outbox order: time-based so tabs interleave sensibly, strictly increasing within this tab. */
  #seq(): number {
    this.#lastSeq = Math.max(this.#lastSeq + 1, Date.now() * 1000);
    return this.#lastSeq;
  }

  async create(data: Record<string, unknown>): Promise<LocalRecord> {
    const given = typeof data.id === 'string' && data.id !== '';
    const id = given ? (data.id as string) : this.#newId();
    const record = { ...withServerVersion(data, null), id };
    try {
      if (!given) {
        // A fresh UUID has neither a record nor a pending entry: two inserts, no lookups
        // (`add` would still refuse a collision).
        const entry = nextOutboxEntry(id, undefined, 'create', null, this.#seq(), this.#newId())!;
        await this.db.transaction('rw', this.db.records, this.db.$outbox, () => Promise.all([this.db.records.add(record), this.db.$outbox.add(entry)]));
        return record;
      }
      return await this.db.transaction('rw', this.db.records, this.db.$outbox, async () => {
        const [existing, pending] = await Promise.all([this.db.records.get(id), this.db.$outbox.get(id)]);
        if (existing) throw new StoreError('QUIRE_ERR_STORE_EXISTS', `Record ${id} already exists`);
        const entry = nextOutboxEntry(id, pending, 'create', null, this.#seq(), this.#newId());
        // Re-creating an id deleted locally but not yet pushed: keep the server version as base.
        const stored: LocalRecord = entry && entry.base !== null ? { ...record, last_modified: entry.base } : record;
        await Promise.all([this.db.records.put(stored), entry ? this.db.$outbox.put(entry) : undefined]);
        return stored;
      });
    } catch (error) {
      return mapStoreError(error);
    }
  }

  async get(id: string): Promise<LocalRecord | undefined> {
    try {
      return await this.db.records.get(id);
    } catch (error) {
      return mapStoreError(error);
    }
  }

  /** Replaces the record's fields (or merges them with `patch`). */
  async update(id: string, data: Record<string, unknown>, options: { patch?: boolean } = {}): Promise<LocalRecord> {
    try {
      return await this.db.transaction('rw', this.db.records, this.db.$outbox, async () => {
        const [current, pending] = await Promise.all([this.db.records.get(id), this.db.$outbox.get(id)]);
        if (!current) throw new StoreError('QUIRE_ERR_STORE_NOT_FOUND', `Record ${id} not found`);
        const fields = withServerVersion(options.patch ? { ...current, ...data } : data, null);
        const record: LocalRecord = { ...fields, id, ...(current.last_modified !== undefined ? { last_modified: current.last_modified } : {}) };
        const entry = nextOutboxEntry(id, pending, 'update', current.last_modified ?? null, this.#seq(), this.#newId());
        await Promise.all([this.db.records.put(record), entry ? this.db.$outbox.put(entry) : undefined]);
        return record;
      });
    } catch (error) {
      return mapStoreError(error);
    }
  }

  async delete(id: string): Promise<void> {
    try {
      await this.db.transaction('rw', this.db.records, this.db.$outbox, async () => {
        const [current, pending] = await Promise.all([this.db.records.get(id), this.db.$outbox.get(id)]);
        if (!current) throw new StoreError('QUIRE_ERR_STORE_NOT_FOUND', `Record ${id} not found`);
        const entry = nextOutboxEntry(id, pending, 'delete', current.last_modified ?? null, this.#seq(), this.#newId());
        await this.db.records.delete(id);
        if (entry) await this.db.$outbox.put(entry);
        else await this.db.$outbox.delete(id);
      });
    } catch (error) {
      mapStoreError(error);
    }
  }

  #collection(query: ListQuery) {
    const table = this.db.records;
    const index = query.index ?? 'id';
    let collection: Collection<LocalRecord, string>;
    if (query.equals !== undefined) collection = table.where(index).equals(query.equals as never);
    else if (query.anyOf !== undefined) collection = table.where(index).anyOf(query.anyOf as never[]);
    else if (query.between !== undefined) collection = table.where(index).between(query.between[0] as never, query.between[1] as never, true, true);
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

  /** An observable re-run whenever the records it read change (in this tab or another one). */
  watch(query: ListQuery = {}): Observable<LocalRecord[]> {
    return liveQuery(() => this.#collection(query).toArray());
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
  async applyPulledPage<P extends PageChanges>(ids: string[], checkpoint: PullCheckpoint | null, cold: boolean, decide: (held: HeldRecords | null) => P): Promise<P> {
    const { db } = this;
    return db.transaction('rw', [db.records, db.$outbox, db.$conflicts, db.$meta], async () => {
      const nothingPending = (await db.$outbox.count()) === 0;
      let held: HeldRecords | null = null;
      if (!cold || !nothingPending) {
        const [locals, entries] = await Promise.all([db.records.bulkGet(ids), nothingPending ? ids.map(() => undefined) : db.$outbox.bulkGet(ids)]);
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
      let delta = 0;
      for (const { sent, server } of published) {
        const [current, local] = await Promise.all([db.$outbox.get(sent.id), db.records.get(sent.id)]);
        const next = afterPublish(sent, current, server?.last_modified ?? null, this.#newId);
        if (next) await db.$outbox.put(next);
        else await db.$outbox.delete(sent.id);
        let held = local !== undefined;
        if (current?.rev === sent.rev) {
          if (server) {
            await db.records.put(asLocal(server));
            held = true;
          }
        } else if (local && next) {
          // Written again meanwhile: the local version now stands on the version just published.
          await db.records.put(withServerVersion(local, next.base));
        }
        delta += serverShare(held, next) - serverShare(local !== undefined, current);
      }
      await adjustServerCount(db, delta);
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
