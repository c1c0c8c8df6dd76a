/**
 * The app's local writes (create, update, delete) as they reach IndexedDB: every write made in
 * the same tick goes into ONE native transaction (a record and its outbox entry together, as
 * always), straight on the connection Dexie opened, without Dexie's per-call layers — the hot
 * path of an offline app, and the one the original client was faster on.
 *
 * A group is read, decided and written inside its transaction: the records and outbox entries of
 * the ids it touches are read first (all requests at once), each write is decided in call order
 * by the rules of outbox.ts (a later write of the same id sees the earlier one), then the writes
 * are issued. A write refused by the rules (the id exists / is not found) rejects alone; a
 * storage failure (quota, closed database) rolls the whole group back and rejects each write.
 * `onCommitted` hears what changed, once per group, after the commit.
 */
import { StoreError } from '../errors.js';
import type { CollectionDb } from './db.js';
import { nextOutboxEntry } from './outbox.js';
import { withServerVersion } from './record-fields.js';
import { toStoreError } from './store-errors.js';
import type { LocalRecord, OutboxEntry } from './types.js';

export interface LocalChange {
  type: 'create' | 'update' | 'delete';
  id: string;
}

type Outcome = { ok: true; value: LocalRecord | undefined; change: LocalChange } | { ok: false; error: unknown };

interface Write {
  kind: 'create' | 'update' | 'delete';
  id: string;
  /** The id was given by the app (a create may then collide); false: a fresh id, nothing to read. */
  lookup: boolean;
  data?: Record<string, unknown>;
  patch?: boolean;
  resolve(value: LocalRecord | undefined): void;
  reject(error: unknown): void;
}

interface Held {
  record: LocalRecord | undefined;
  entry: OutboxEntry | undefined;
}

export class WriteQueue {
  readonly #db: CollectionDb;
  readonly #newId: () => string;
  readonly #seq: () => number;
  readonly #onCommitted: (changes: LocalChange[]) => void;
  #queued: Write[] = [];

  constructor(db: CollectionDb, newId: () => string, seq: () => number, onCommitted: (changes: LocalChange[]) => void) {
    this.#db = db;
    this.#newId = newId;
    this.#seq = seq;
    this.#onCommitted = onCommitted;
  }

  create(data: Record<string, unknown>): Promise<LocalRecord> {
    const given = typeof data.id === 'string' && data.id !== '';
    const id = given ? (data.id as string) : this.#newId();
    return this.#enqueue({ kind: 'create', id, lookup: given, data }) as Promise<LocalRecord>;
  }

  update(id: string, data: Record<string, unknown>, patch: boolean): Promise<LocalRecord> {
    return this.#enqueue({ kind: 'update', id, lookup: true, data, patch }) as Promise<LocalRecord>;
  }

  async delete(id: string): Promise<void> {
    await this.#enqueue({ kind: 'delete', id, lookup: true });
  }

  #enqueue(write: Omit<Write, 'resolve' | 'reject'>): Promise<LocalRecord | undefined> {
    return new Promise((resolve, reject) => {
      if (this.#queued.length === 0) queueMicrotask(() => this.#flush());
      this.#queued.push({ ...write, resolve, reject });
    });
  }

  #flush(): void {
    const writes = this.#queued;
    this.#queued = [];
    let transaction: IDBTransaction;
    try {
      const idb = this.#db.backendDB();
      if (!idb) throw new StoreError('QUIRE_ERR_STORE_FAILED', `${this.#db.name} is closed`);
      transaction = idb.transaction(['records', '$outbox'], 'readwrite');
    } catch (error) {
      for (const write of writes) write.reject(toStoreError(error, 'writing locally'));
      return;
    }
    const records = transaction.objectStore('records');
    const outbox = transaction.objectStore('$outbox');
    const held = new Map<string, Held>();
    const outcomes: Outcome[] = [];

    const decide = () => {
      for (const write of writes) {
        try {
          outcomes.push(this.#apply(write, held, records, outbox));
        } catch (error) {
          // Not a valid IndexedDB value (DataCloneError…): this write only.
          outcomes.push({ ok: false, error: toStoreError(error, `writing ${write.id}`) });
        }
      }
    };

    const ids = [...new Set(writes.filter((write) => write.lookup).map((write) => write.id))];
    let reads = ids.length * 2;
    if (reads === 0) decide();
    for (const id of ids) {
      const slot: Held = { record: undefined, entry: undefined };
      held.set(id, slot);
      const done = () => {
        if (--reads === 0) decide();
      };
      records.get(id).onsuccess = (event) => {
        slot.record = (event.target as IDBRequest<LocalRecord | undefined>).result;
        done();
      };
      outbox.get(id).onsuccess = (event) => {
        slot.entry = (event.target as IDBRequest<OutboxEntry | undefined>).result;
        done();
      };
    }

    transaction.oncomplete = () => {
      const changes = outcomes.flatMap((outcome) => (outcome.ok ? [outcome.change] : []));
      if (changes.length > 0) this.#onCommitted(changes);
      writes.forEach((write, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) write.resolve(outcome.value);
        else write.reject(outcome.error);
      });
    };
    transaction.onabort = () => {
      const failure = toStoreError(transaction.error ?? new Error('transaction aborted'), 'writing locally');
      writes.forEach((write, i) => {
        const outcome = outcomes[i];
        write.reject(outcome && !outcome.ok ? outcome.error : failure);
      });
    };
  }

  /** Decides one write from what is held (and what earlier writes of the group did), and issues it. */
  #apply(write: Write, held: Map<string, Held>, records: IDBObjectStore, outbox: IDBObjectStore): Outcome {
    const { id } = write;
    const seq = this.#seq();
    const rev = this.#newId();
    if (write.kind === 'create') {
      const record = { ...withServerVersion(write.data!, null), id } as LocalRecord;
      if (!write.lookup) {
        // A fresh id has neither a record nor a pending entry: two inserts, no lookups
        // (`add` still refuses a collision: the group is then rolled back).
        records.add(record);
        outbox.add(nextOutboxEntry(id, undefined, 'create', null, seq, rev)!);
        return { ok: true, value: record, change: { type: 'create', id } };
      }
      const current = held.get(id)!;
      if (current.record)
        return { ok: false, error: new StoreError('QUIRE_ERR_STORE_EXISTS', `Record ${id} already exists`) };
      const entry = nextOutboxEntry(id, current.entry, 'create', null, seq, rev);
      // Re-creating an id deleted locally but not yet pushed: keep the server version as base.
      const stored: LocalRecord = entry && entry.base !== null ? { ...record, last_modified: entry.base } : record;
      records.put(stored);
      if (entry) outbox.put(entry);
      held.set(id, { record: stored, entry: entry ?? undefined });
      return { ok: true, value: stored, change: { type: 'create', id } };
    }
    const current = held.get(id)!;
    if (!current.record)
      return { ok: false, error: new StoreError('QUIRE_ERR_STORE_NOT_FOUND', `Record ${id} not found`) };
    const base = current.record.last_modified ?? null;
    if (write.kind === 'update') {
      const fields = withServerVersion(write.patch ? { ...current.record, ...write.data } : write.data!, null);
      const record: LocalRecord = { ...fields, id, ...(base !== null ? { last_modified: base } : {}) };
      const entry = nextOutboxEntry(id, current.entry, 'update', base, seq, rev);
      records.put(record);
      if (entry) outbox.put(entry);
      held.set(id, { record, entry: entry ?? undefined });
      return { ok: true, value: record, change: { type: 'update', id } };
    }
    const entry = nextOutboxEntry(id, current.entry, 'delete', base, seq, rev);
    records.delete(id);
    if (entry) outbox.put(entry);
    else outbox.delete(id);
    held.set(id, { record: undefined, entry: entry ?? undefined });
    return { ok: true, value: undefined, change: { type: 'delete', id } };
  }
}
