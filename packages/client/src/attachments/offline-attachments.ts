/**
 * Offline attachments of one collection. `attach` keeps the bytes on the device and queues the
 * upload; it also records a local write of the record (its content unchanged), so the record is
 * in the outbox while its file waits: a record changed remotely meanwhile is a conflict like any
 * other (the collection's strategy settles it; if the server's version wins, the queued file is
 * dropped). After each sync, the queue is sent, oldest first, under the sync lock: each file with
 * `If-Match` on the version the replica holds, once its record has no pending change. A file
 * leaves the queue only when the server has it (a replayed upload whose first answer was lost is
 * recognised by its hash), so a sync cut short resumes where it stopped. Downloads follow the
 * policy: `eager` fetches every file after a sync, `lazy` on `getAttachment` and keeps it, `none`
 * on `getAttachment` and keeps nothing; each is checked against the record's `hash`; kept files
 * are evicted least recently used first beyond `cacheBytes`.
 */
import type {
  AttachmentsExtension,
  AttachmentsHost,
  AttachmentsSetup,
  AttachOptions,
  GetLocalAttachmentOptions,
  LocalAttachment,
} from '../api/attachments-host.js';
import { AttachmentError, PreconditionFailedError, QuireError, ServerError } from '../errors.js';
import { asBlob, type FileInput, sha256Hex } from '../remote/files.js';
import { safeBlobType } from '../remote/safe-type.js';
import type { Settlement } from '../store/local-collection.js';
import type { SyncOptions, SyncResult } from '../sync/engine.js';
import type { AttachmentInfo } from '../wire.js';
import { dropUnreferenced, type FilesDb, openFilesDb, type QueuedFile } from './files-db.js';

export type DownloadPolicy = 'eager' | 'lazy' | 'none';

export interface AttachmentsOptions {
  /** When files are downloaded (default `lazy`). */
  policy?: DownloadPolicy;
  /** Bytes of downloaded files kept on the device (default 64 MB); files waiting for upload do not count. */
  cacheBytes?: number;
}

/** Refusals that sending again cannot change: the queued file is dropped and reported. */
const PERMANENT = new Set([400, 403, 413, 415]);
/** Files sent or downloaded at once (browsers open up to 6 connections per origin over HTTP/1.1). */
const TRANSFERS = 3;
/** Rounds of send → sync after one sync (a conflict settled for us is sent in the next round). */
const MAX_ROUNDS = 3;

export function attachments(options: AttachmentsOptions = {}): AttachmentsSetup {
  return (host) => new OfflineAttachments(host, options);
}

function attachmentOf(record: Record<string, unknown> | undefined | null): AttachmentInfo | null {
  const value = record?.attachment as AttachmentInfo | null | undefined;
  return value && typeof value === 'object' && typeof value.hash === 'string' ? value : null;
}

class OfflineAttachments implements AttachmentsExtension {
  readonly #host: AttachmentsHost;
  readonly #policy: DownloadPolicy;
  readonly #cacheBytes: number;
  readonly #db: Promise<FilesDb>;
  #lastSeq = 0;

  constructor(host: AttachmentsHost, options: AttachmentsOptions) {
    this.#host = host;
    this.#policy = options.policy ?? 'lazy';
    this.#cacheBytes = options.cacheBytes ?? 64 * 1024 * 1024;
    this.#db = openFilesDb(`${host.dbName}#files`, host.env);
    this.#db.catch(() => {});
  }

  #seq(): number {
    this.#lastSeq = Math.max(this.#lastSeq + 1, Date.now() * 1000);
    return this.#lastSeq;
  }

  /**
   * Throws unless the server accepts files. Offline, the last answer the server gave decides; a
   * server never reached is assumed to accept them (the upload then reports its refusal).
   */
  async #requireCapability(): Promise<void> {
    const db = await this.#db;
    if (this.#host.online.isOnline()) {
      try {
        await this.#host.remote.attachments();
        await db.meta.put({ key: 'capability', value: true });
        return;
      } catch (error) {
        if (error instanceof AttachmentError) {
          await db.meta.put({ key: 'capability', value: false });
          throw error;
        }
        if (error instanceof ServerError) throw error;
        // Unreachable: decide as offline.
      }
    }
    if ((await db.meta.get('capability'))?.value === false) {
      throw new AttachmentError(
        'QUIRE_ERR_ATTACHMENT_UNSUPPORTED',
        'The server does not accept attachments (no "attachments" capability)',
      );
    }
  }

  /** A local write of the record with its content unchanged: it stays in the outbox until its file is sent. */
  #touch(id: string) {
    return this.#host.local.update(id, {}, { patch: true });
  }

  async attach(id: string, file: FileInput, options: AttachOptions): Promise<LocalAttachment> {
    await this.#requireCapability();
    if (!(await this.#host.local.get(id))) await this.#touch(id); // throws QUIRE_ERR_STORE_NOT_FOUND
    const blob = asBlob(file, options.mimetype);
    const bytes = await blob.arrayBuffer();
    const entry: QueuedFile = {
      id,
      op: 'upload',
      seq: this.#seq(),
      filename: options.filename ?? (file as { name?: string }).name ?? 'file',
      mimetype: blob.type || 'application/octet-stream',
      size: bytes.byteLength,
      hash: await sha256Hex(bytes),
    };
    await this.#enqueue(entry, bytes);
    await this.#touch(id);
    return (await this.info(id))!;
  }

  async detach(id: string): Promise<void> {
    await this.#requireCapability();
    const record = await this.#host.local.get(id);
    if (!record) await this.#touch(id); // throws QUIRE_ERR_STORE_NOT_FOUND
    if (!attachmentOf(record)) {
      // Nothing on the server: forgetting the queued upload is enough.
      await this.#dequeue(id);
      this.#host.emit({ type: 'removed', id });
      return;
    }
    await this.#enqueue({ id, op: 'removal', seq: this.#seq() });
    await this.#touch(id);
  }

  async #enqueue(entry: QueuedFile, bytes?: ArrayBuffer): Promise<void> {
    const db = await this.#db;
    await db.transaction('rw', db.queue, db.blobs, db.cache, async () => {
      const previous = await db.queue.get(entry.id);
      if (bytes && entry.hash) await db.blobs.put({ hash: entry.hash, bytes });
      await db.queue.put(entry);
      if (previous?.hash !== entry.hash) await dropUnreferenced(db, previous?.hash);
    });
  }

  async #dequeue(id: string, sent?: QueuedFile): Promise<void> {
    const db = await this.#db;
    await db.transaction('rw', db.queue, db.blobs, db.cache, async () => {
      const current = await db.queue.get(id);
      // A change queued while this one was being sent stays.
      if (!current || (sent && current.seq !== sent.seq)) return;
      await db.queue.delete(id);
      await dropUnreferenced(db, current.hash);
    });
  }

  async info(id: string): Promise<LocalAttachment | null> {
    const db = await this.#db;
    const queued = await db.queue.get(id);
    if (queued?.op === 'removal') {
      const synced = attachmentOf(await this.#host.local.get(id));
      return synced
        ? { ...this.#describe(synced), state: 'removal', local: !!(await db.cache.get(synced.hash)) }
        : null;
    }
    if (queued) {
      return {
        filename: queued.filename!,
        mimetype: queued.mimetype!,
        size: queued.size!,
        hash: queued.hash!,
        location: null,
        state: 'upload',
        local: true,
      };
    }
    const synced = attachmentOf(await this.#host.local.get(id));
    return synced ? { ...this.#describe(synced), state: 'synced', local: !!(await db.cache.get(synced.hash)) } : null;
  }

  #describe(info: AttachmentInfo) {
    return {
      filename: info.filename,
      mimetype: info.mimetype,
      size: info.size,
      hash: info.hash,
      location: info.location,
    };
  }

  async get(id: string, options: GetLocalAttachmentOptions): Promise<Blob> {
    const db = await this.#db;
    const queued = await db.queue.get(id);
    if (queued?.op === 'upload') {
      const stored = await db.blobs.get(queued.hash!);
      if (stored) return new Blob([stored.bytes], { type: safeBlobType(queued.mimetype) });
    }
    const synced = queued?.op === 'removal' ? null : attachmentOf(await this.#host.local.get(id));
    if (!synced) throw new AttachmentError('QUIRE_ERR_ATTACHMENT_NONE', `Record ${id} has no attachment`);
    const cached = await this.#cached(synced);
    if (cached) return cached;
    return this.#download(id, synced, options);
  }

  async #cached(info: AttachmentInfo): Promise<Blob | null> {
    const db = await this.#db;
    const stored = await db.blobs.get(info.hash);
    if (!stored) return null;
    await db.cache.update(info.hash, { usedAt: Date.now() });
    return new Blob([stored.bytes], { type: safeBlobType(info.mimetype) });
  }

  async #download(id: string, info: AttachmentInfo, options: GetLocalAttachmentOptions): Promise<Blob> {
    const host = this.#host;
    const blob = await host.remote.getAttachment(host.bucket, host.collection, id, {
      attachment: info,
      ...(options.signal ? { signal: options.signal } : {}),
      onProgress: (progress) => {
        options.onProgress?.(progress);
        host.emit({ type: 'progress', id, direction: 'download', ...progress });
      },
    });
    if (this.#policy !== 'none') {
      await this.#keep(info.hash, await blob.arrayBuffer());
      host.emit({ type: 'downloaded', id });
    }
    return blob;
  }

  /** Keeps bytes in the cache, then evicts the least recently used beyond the cap. */
  async #keep(hash: string, bytes: ArrayBuffer | null): Promise<void> {
    const db = await this.#db;
    await db.transaction('rw', db.queue, db.blobs, db.cache, async () => {
      if (bytes) await db.blobs.put({ hash, bytes });
      await db.cache.put({
        hash,
        size: (bytes ?? (await db.blobs.get(hash))?.bytes)?.byteLength ?? 0,
        usedAt: Date.now(),
      });
      let total = 0;
      const entries = await db.cache.orderBy('usedAt').reverse().toArray();
      for (const entry of entries) {
        total += entry.size;
        if (total > this.#cacheBytes && entry.hash !== hash) {
          await db.cache.delete(entry.hash);
          await dropUnreferenced(db, entry.hash);
        }
      }
    });
  }

  async settled(id: string, settlement: Settlement): Promise<void> {
    if (settlement === 'remote') await this.#drop(id);
  }

  async #drop(id: string): Promise<void> {
    const db = await this.#db;
    if (!(await db.queue.get(id))) return;
    await this.#dequeue(id);
    this.#host.emit({ type: 'dropped', id });
  }

  async afterSync(first: SyncResult, options: SyncOptions): Promise<SyncResult> {
    const db = await this.#db;
    let result = first;
    const stats = { uploaded: 0, removed: 0, dropped: 0, downloaded: 0 };
    let latest = first;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      // The server's version won a conflict: the file queued on ours goes with it.
      for (const conflict of latest.conflicts) {
        if (conflict.resolution === 'remote' && (await db.queue.get(conflict.id))) {
          await this.#drop(conflict.id);
          stats.dropped++;
        }
      }
      if ((await db.queue.count()) === 0 || options.pullOnly) break;
      const outcome = await this.#host.engine.exclusive(() => this.#sendQueue(result, stats, options.signal));
      if (!outcome.sent && !outcome.retouched) break;
      // Fetch what the server made of the records (their `attachment`), and push a conflict's settlement.
      latest = await this.#host.engine.sync(options);
      result = merge(result, latest);
      // The network failed: what is left waits for the next sync.
      if (outcome.stopped) break;
    }
    if (this.#policy === 'eager' && this.#host.online.isOnline())
      stats.downloaded += await this.#downloadMissing(result, options.signal);
    result.attachments = stats;
    result.ok = result.errors.length === 0 && result.conflicts.every((conflict) => conflict.resolution !== 'manual');
    return result;
  }

  /**
   * Sends the queue, oldest first, `TRANSFERS` at a time; stops starting new ones at the first
   * failure that is not the file's own (network, backoff): the rest stays queued.
   */
  async #sendQueue(
    result: SyncResult,
    stats: Stats,
    signal?: AbortSignal,
  ): Promise<{ sent: boolean; retouched: boolean; stopped: boolean }> {
    const db = await this.#db;
    const waiting = new Set((await this.#host.local.pending()).map((entry) => entry.id));
    // Its record's change goes first (or waits for the app to settle its conflict).
    const entries = (await db.queue.orderBy('seq').toArray()).filter((entry) => !waiting.has(entry.id));
    const outcome = { sent: false, retouched: false, stopped: false };
    await inParallel(entries, async (entry) => {
      if (outcome.stopped) return;
      const verdict = await this.#sendOne(entry, result, stats, signal);
      if (verdict === 'sent') outcome.sent = true;
      else if (verdict === 'retouched') outcome.retouched = true;
      else if (verdict === 'stop') outcome.stopped = true;
    });
    return outcome;
  }

  /** Sends one queued change; false when its bytes are missing. */
  async #transfer(entry: QueuedFile, version: number, signal?: AbortSignal): Promise<boolean> {
    const host = this.#host;
    if (entry.op === 'removal') {
      await host.remote.removeAttachment(host.bucket, host.collection, entry.id, { ifMatch: version });
      return true;
    }
    const stored = await (await this.#db).blobs.get(entry.hash!);
    if (!stored) return false;
    await host.remote.addAttachment(
      host.bucket,
      host.collection,
      entry.id,
      new Blob([stored.bytes], { type: entry.mimetype! }),
      {
        filename: entry.filename!,
        ifMatch: version,
        ...(signal ? { signal } : {}),
        onProgress: (progress) => host.emit({ type: 'progress', id: entry.id, direction: 'upload', ...progress }),
      },
    );
    return true;
  }

  async #sendOne(
    entry: QueuedFile,
    result: SyncResult,
    stats: Stats,
    signal?: AbortSignal,
  ): Promise<'sent' | 'skipped' | 'retouched' | 'stop'> {
    const host = this.#host;
    const record = await host.local.get(entry.id);
    if (!record) {
      await this.#drop(entry.id);
      return 'skipped';
    }
    if (record.last_modified === undefined) return 'skipped';
    // Already as queued (a send whose answer was lost, then pulled): nothing to send again.
    const done = entry.op === 'upload' ? attachmentOf(record)?.hash === entry.hash : !attachmentOf(record);
    try {
      if (!done && !(await this.#transfer(entry, record.last_modified, signal))) {
        // Its bytes are gone (storage cleared by the browser): nothing can be sent.
        await this.#dequeue(entry.id, entry);
        return 'skipped';
      }
    } catch (error) {
      const existing = error instanceof PreconditionFailedError ? error.existing : null;
      const replayed =
        entry.op === 'upload'
          ? attachmentOf(existing)?.hash === entry.hash
          : existing !== null && !attachmentOf(existing);
      const gone = entry.op === 'removal' && error instanceof ServerError && error.status === 404;
      if (!replayed && !gone) {
        if (error instanceof PreconditionFailedError) {
          // Changed on the server since the replica's version: back to the outbox, where the
          // next pull or push meets the change as a conflict.
          await this.#touch(entry.id);
          return 'retouched';
        }
        const status = error instanceof ServerError ? error.status : undefined;
        result.errors.push({
          id: entry.id,
          ...(status ? { status } : {}),
          code: error instanceof QuireError ? error.code : 'QUIRE_ERR_ATTACHMENT',
          message: (error as Error).message,
        });
        if (status !== undefined && PERMANENT.has(status)) {
          await this.#drop(entry.id);
          stats.dropped++;
          return 'skipped';
        }
        return 'stop';
      }
    }
    await this.#dequeue(entry.id, entry);
    if (entry.op === 'upload') {
      stats.uploaded++;
      // The device has the bytes: keep them as the downloaded file (unless nothing is kept).
      if (this.#policy !== 'none') await this.#keep(entry.hash!, null);
      host.emit({ type: 'uploaded', id: entry.id });
    } else {
      stats.removed++;
      host.emit({ type: 'removed', id: entry.id });
    }
    return 'sent';
  }

  async #downloadMissing(result: SyncResult, signal?: AbortSignal): Promise<number> {
    const db = await this.#db;
    let downloaded = 0;
    let stopped = false;
    const missing: { id: string; info: AttachmentInfo }[] = [];
    for (const record of await this.#host.local.list()) {
      const info = attachmentOf(record);
      if (info && (await db.blobs.where('hash').equals(info.hash).count()) === 0) missing.push({ id: record.id, info });
    }
    await inParallel(missing, async ({ id, info }) => {
      if (stopped) return;
      try {
        await this.#download(id, info, signal ? { signal } : {});
        downloaded++;
      } catch (error) {
        result.errors.push({
          id,
          code: error instanceof QuireError ? error.code : 'QUIRE_ERR_ATTACHMENT',
          message: (error as Error).message,
        });
        // A file of its own (a hash mismatch) does not stop the others; the network does.
        if (!(error instanceof AttachmentError)) stopped = true;
      }
    });
    return downloaded;
  }

  close(): void {
    void this.#db.then(
      (db) => db.close(),
      () => {},
    );
  }
}

type Stats = { uploaded: number; removed: number; dropped: number };

/** Runs `work` on every item, `TRANSFERS` at a time, in the items' order. */
async function inParallel<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(TRANSFERS, items.length) }, worker));
}

function merge(a: SyncResult, b: SyncResult): SyncResult {
  return {
    ...a,
    pulled: a.pulled + b.pulled,
    pushed: a.pushed + b.pushed,
    conflicts: [...a.conflicts, ...b.conflicts],
    errors: [...a.errors, ...b.errors],
    skipped: a.skipped + b.skipped,
    removed: a.removed + b.removed,
    serverFlushed: a.serverFlushed || b.serverFlushed,
    notModified: a.notModified && b.notModified,
  };
}
