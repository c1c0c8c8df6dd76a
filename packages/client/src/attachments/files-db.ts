/**
 * The database of a collection's files, beside its replica (`<replica>#files`): the bytes
 * (`blobs`, by SHA-256: one copy however many records or queued changes share them), the queue of
 * file changes waiting for a sync (one entry per record, the latest change wins, as the outbox),
 * the downloaded files kept (`cache`, least recently used first out) and what the server said of
 * the capability (`meta`).
 */
import Dexie, { type Table } from 'dexie';
import { StoreError } from '../errors.js';
import type { DexieEnvironment } from '../store/db.js';

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

export interface StoredBlob {
  hash: string;
  bytes: ArrayBuffer;
}

export interface CachedFile {
  hash: string;
  size: number;
  usedAt: number;
}

export interface FilesDb extends Dexie {
  queue: Table<QueuedFile, string>;
  blobs: Table<StoredBlob, string>;
  cache: Table<CachedFile, string>;
  meta: Table<{ key: string; value: unknown }, string>;
}

export async function openFilesDb(name: string, env: DexieEnvironment | undefined): Promise<FilesDb> {
  const db = new Dexie(name, { ...(env ?? {}), cache: 'disabled' }) as FilesDb;
  db.version(1).stores({ queue: 'id,seq,hash', blobs: 'hash', cache: 'hash,usedAt', meta: 'key' });
  try {
    await db.open();
  } catch (error) {
    throw new StoreError('QUIRE_ERR_STORE_OPEN', `Cannot open ${name}`, { cause: error });
  }
  return db;
}

/** Deletes bytes no queued upload and no cache entry refers to (call inside a transaction on all three). */
export async function dropUnreferenced(db: FilesDb, hash: string | undefined): Promise<void> {
  if (!hash) return;
  if ((await db.queue.where('hash').equals(hash).count()) > 0 || (await db.cache.get(hash))) return;
  await db.blobs.delete(hash);
}
