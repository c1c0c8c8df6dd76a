/**
 * The database of a collection's files, beside its replica (`<replica>#files`), and the only
 * writer of its tables: the bytes (`blobs`, by SHA-256: one copy however many records or queued
 * changes share them), the queue of file changes waiting for a sync (one entry per record, the
 * latest change wins, as in the outbox), the downloaded files kept (`cache`, least recently used
 * first out) and what the server said of the capability (`meta`). Bytes no queued upload and no
 * cache entry refers to are deleted in the transaction that dropped the last reference.
 */
import Dexie, { type Table } from 'dexie';
import { StoreError } from '../errors.js';
import type { DexieEnvironment } from './db.js';

export interface QueuedFile {
  /** The record's id. */
  id: string;
  op: 'upload' | 'removal';
  /** Queue order (oldest first). */
  seq: number;
  filename?: string;
  mimetype?: string;
  size?: number;
  /** Key of the bytes in `blobs` (uploads). */
  hash?: string;
}

interface StoredBlob {
  hash: string;
  bytes: ArrayBuffer;
}

interface CachedFile {
  hash: string;
  size: number;
  usedAt: number;
}

interface FilesDb extends Dexie {
  queue: Table<QueuedFile, string>;
  blobs: Table<StoredBlob, string>;
  cache: Table<CachedFile, string>;
  meta: Table<{ key: string; value: unknown }, string>;
}

const CAPABILITY = 'capability';

export class FilesStore {
  readonly #db: FilesDb;

  private constructor(db: FilesDb) {
    this.#db = db;
  }

  static async open(name: string, env: DexieEnvironment | undefined): Promise<FilesStore> {
    const db = new Dexie(name, { ...(env ?? {}), cache: 'disabled' }) as FilesDb;
    db.version(1).stores({ queue: 'id,seq,hash', blobs: 'hash', cache: 'hash,usedAt', meta: 'key' });
    try {
      await db.open();
    } catch (error) {
      throw new StoreError('QUIRE_ERR_STORE_OPEN', `Cannot open ${name}`, { cause: error });
    }
    return new FilesStore(db);
  }

  /** What the server last said of the attachments capability (null: never asked). */
  async capability(): Promise<boolean | null> {
    const value = (await this.#db.meta.get(CAPABILITY))?.value;
    return typeof value === 'boolean' ? value : null;
  }

  async setCapability(accepted: boolean): Promise<void> {
    await this.#db.meta.put({ key: CAPABILITY, value: accepted });
  }

  queued(id: string): Promise<QueuedFile | undefined> {
    return this.#db.queue.get(id);
  }

  queuedCount(): Promise<number> {
    return this.#db.queue.count();
  }

  /** The queue, oldest first. */
  queue(): Promise<QueuedFile[]> {
    return this.#db.queue.orderBy('seq').toArray();
  }

  async bytes(hash: string): Promise<ArrayBuffer | null> {
    return (await this.#db.blobs.get(hash))?.bytes ?? null;
  }

  async has(hash: string): Promise<boolean> {
    return (await this.#db.blobs.where('hash').equals(hash).count()) > 0;
  }

  /** Whether `hash` is a kept download (or an upload the server has since accepted). */
  async cached(hash: string): Promise<boolean> {
    return (await this.#db.cache.get(hash)) !== undefined;
  }

  /** Queues a file change (replacing the record's previous one), with its bytes for an upload. */
  async enqueue(entry: QueuedFile, bytes?: ArrayBuffer): Promise<void> {
    const db = this.#db;
    await db.transaction('rw', db.queue, db.blobs, db.cache, async () => {
      const previous = await db.queue.get(entry.id);
      if (bytes && entry.hash) await db.blobs.put({ hash: entry.hash, bytes });
      await db.queue.put(entry);
      if (previous?.hash !== entry.hash) await this.#dropUnreferenced(previous?.hash);
    });
  }

  /** Takes the record's change off the queue; with `sent`, only if it is still that one (not replaced meanwhile). */
  async dequeue(id: string, sent?: QueuedFile): Promise<boolean> {
    const db = this.#db;
    return db.transaction('rw', db.queue, db.blobs, db.cache, async () => {
      const current = await db.queue.get(id);
      if (!current || (sent && current.seq !== sent.seq)) return false;
      await db.queue.delete(id);
      await this.#dropUnreferenced(current.hash);
      return true;
    });
  }

  /** A cached file was read: it is the most recently used. */
  async used(hash: string): Promise<void> {
    await this.#db.cache.update(hash, { usedAt: Date.now() });
  }

  /**
   * Keeps a file in the cache (`bytes`, or those already stored under `hash`), then evicts the
   * least recently used beyond `capBytes` (never the file just kept, never a queued upload's bytes).
   */
  async keep(hash: string, bytes: ArrayBuffer | null, capBytes: number): Promise<void> {
    const db = this.#db;
    await db.transaction('rw', db.queue, db.blobs, db.cache, async () => {
      if (bytes) await db.blobs.put({ hash, bytes });
      const size = (bytes ?? (await db.blobs.get(hash))?.bytes)?.byteLength ?? 0;
      await db.cache.put({ hash, size, usedAt: Date.now() });
      let total = 0;
      for (const entry of await db.cache.orderBy('usedAt').reverse().toArray()) {
        total += entry.size;
        if (total > capBytes && entry.hash !== hash) {
          await db.cache.delete(entry.hash);
          await this.#dropUnreferenced(entry.hash);
        }
      }
    });
  }

  close(): void {
    this.#db.close();
  }

  /** Deletes bytes no queued upload and no cache entry refers to (inside a transaction on all three). */
  async #dropUnreferenced(hash: string | undefined): Promise<void> {
    if (!hash) return;
    const db = this.#db;
    if ((await db.queue.where('hash').equals(hash).count()) > 0 || (await db.cache.get(hash))) return;
    await db.blobs.delete(hash);
  }
}
