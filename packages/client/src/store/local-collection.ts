/**
 * Local CRUD on one collection's replica. Every write puts the record and its outbox entry in ONE
 * transaction, so a crash can never leave a change that will not be pushed.
 */
import { liveQuery, type Observable } from 'dexie';
import { StoreError } from '../errors.js';
import type { CollectionDb } from './db.js';
import { nextOutboxEntry } from './outbox.js';
import type { ConflictEntry, LocalRecord, OutboxEntry } from './types.js';

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

export interface LocalChange {
  type: 'create' | 'update' | 'delete';
  id: string;
}

function mapStoreError(error: unknown): never {
  if (error instanceof StoreError) throw error;
  throw new StoreError('QUIRE_ERR_STORE_FAILED', `IndexedDB failure: ${(error as Error).message}`, { cause: error });
}

/** Strips what the app may not set: the server owns `last_modified`. */
function withoutServerFields<T extends Record<string, unknown>>(data: T): T {
  const { last_modified: _ignored, ...rest } = data;
  return rest as T;
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
    const record = { ...withoutServerFields(data), id };
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
        const fields = withoutServerFields(options.patch ? { ...current, ...data } : data);
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
    let collection;
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

  pending(): Promise<OutboxEntry[]> {
    return this.db.$outbox.orderBy('seq').toArray();
  }

  conflicts(): Promise<ConflictEntry[]> {
    return this.db.$conflicts.toArray();
  }

  /** Removes every local record, pending change, conflict and sync state. */
  async clear(): Promise<void> {
    await this.db.transaction('rw', [this.db.records, this.db.$outbox, this.db.$meta, this.db.$conflicts], async () => {
      await Promise.all([this.db.records.clear(), this.db.$outbox.clear(), this.db.$meta.clear(), this.db.$conflicts.clear()]);
    });
  }
}
