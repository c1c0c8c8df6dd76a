/**
 * Offline attachments of one collection: the queue of file changes. `attach` keeps the bytes on
 * the device and queues the upload; it also records a local write of the record (its content
 * unchanged), so the record is in the outbox while its file waits: a record changed remotely
 * meanwhile is a conflict like any other (the collection's strategy settles it; if the server's
 * version wins, the queued file is dropped). After each sync, the queue is sent, oldest first,
 * under the sync lock: each file with `If-Match` on the version the replica holds, once its record
 * has no pending change. A file leaves the queue only when the server has it (a replayed upload
 * whose first answer was lost is recognised by its hash), so a sync cut short resumes where it
 * stopped. The queue's tables are written through store/files.ts only; transfers are
 * transfer.ts's, reading and keeping files cache.ts's.
 */
import type {
  AttachmentsExtension,
  AttachmentsHost,
  AttachOptions,
  GetLocalAttachmentOptions,
  LocalAttachment,
} from '../api/attachments-host.js';
import { AttachmentError, PreconditionFailedError, QuireError, ServerError } from '../errors.js';
import { asBlob, type FileInput, sha256Hex } from '../remote/files.js';
import type { FilesStore, QueuedFile } from '../store/files.js';
import type { Settlement } from '../store/local-collection.js';
import type { SyncOptions, SyncResult } from '../sync/engine.js';
import type { AttachmentInfo } from '../wire.js';
import type { AttachmentCache } from './cache.js';
import { attachmentOf, inParallel, sendChange } from './transfer.js';

/** Refusals that sending again cannot change: the queued file is dropped and reported. */
const PERMANENT = new Set([400, 403, 413, 415]);
/** Rounds of send → sync after one sync (a conflict settled for us is sent in the next round). */
const MAX_ROUNDS = 3;

type Stats = { uploaded: number; removed: number; dropped: number };
type Verdict = 'sent' | 'skipped' | 'retouched' | 'stop';

export class AttachmentQueue implements AttachmentsExtension {
  readonly #host: AttachmentsHost;
  readonly #files: Promise<FilesStore>;
  readonly #cache: AttachmentCache;
  #lastSeq = 0;

  constructor(host: AttachmentsHost, files: Promise<FilesStore>, cache: AttachmentCache) {
    this.#host = host;
    this.#files = files;
    this.#cache = cache;
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
    const files = await this.#files;
    if (this.#host.online.isOnline()) {
      try {
        await this.#host.remote.attachments();
        await files.setCapability(true);
        return;
      } catch (error) {
        if (error instanceof AttachmentError) {
          await files.setCapability(false);
          throw error;
        }
        if (error instanceof ServerError) throw error;
        // Unreachable: decide as offline.
      }
    }
    if ((await files.capability()) === false) {
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
    await (await this.#files).enqueue(entry, bytes);
    await this.#touch(id);
    return (await this.info(id))!;
  }

  async detach(id: string): Promise<void> {
    await this.#requireCapability();
    const record = await this.#host.local.get(id);
    if (!record) await this.#touch(id); // throws QUIRE_ERR_STORE_NOT_FOUND
    if (!attachmentOf(record)) {
      // Nothing on the server: forgetting the queued upload is enough.
      await (await this.#files).dequeue(id);
      this.#host.emit({ type: 'removed', id });
      return;
    }
    await (await this.#files).enqueue({ id, op: 'removal', seq: this.#seq() });
    await this.#touch(id);
  }

  async info(id: string): Promise<LocalAttachment | null> {
    const files = await this.#files;
    const queued = await files.queued(id);
    if (queued?.op === 'upload') {
      const { filename, mimetype, size, hash } = queued as Required<QueuedFile>;
      return { filename, mimetype, size, hash, location: null, state: 'upload', local: true };
    }
    const synced = attachmentOf(await this.#host.local.get(id));
    if (!synced) return null;
    return { ...describe(synced), state: queued ? 'removal' : 'synced', local: await files.cached(synced.hash) };
  }

  get(id: string, options: GetLocalAttachmentOptions): Promise<Blob> {
    return this.#cache.get(id, options);
  }

  async settled(id: string, settlement: Settlement): Promise<void> {
    if (settlement === 'remote') await this.#drop(id);
  }

  async #drop(id: string): Promise<boolean> {
    if (!(await (await this.#files).dequeue(id))) return false;
    this.#host.emit({ type: 'dropped', id });
    return true;
  }

  async afterSync(first: SyncResult, options: SyncOptions): Promise<SyncResult> {
    const files = await this.#files;
    let result = first;
    const stats = { uploaded: 0, removed: 0, dropped: 0, downloaded: 0 };
    let latest = first;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      // The server's version won a conflict: the file queued on ours goes with it.
      for (const conflict of latest.conflicts)
        if (conflict.resolution === 'remote' && (await this.#drop(conflict.id))) stats.dropped++;
      if ((await files.queuedCount()) === 0 || options.pullOnly) break;
      const outcome = await this.#host.engine.exclusive(() => this.#sendQueue(result, stats, options.signal));
      if (!outcome.sent && !outcome.retouched) break;
      // Fetch what the server made of the records (their `attachment`), and push a conflict's settlement.
      latest = await this.#host.engine.sync(options);
      result = merge(result, latest);
      // The network failed: what is left waits for the next sync.
      if (outcome.stopped) break;
    }
    if (this.#cache.policy === 'eager' && this.#host.online.isOnline())
      stats.downloaded += await this.#cache.downloadMissing(result, options.signal);
    result.attachments = stats;
    result.ok = result.errors.length === 0 && result.conflicts.every((conflict) => conflict.resolution !== 'manual');
    return result;
  }

  /**
   * Sends the queue, oldest first, a few at a time; stops starting new ones at the first
   * failure that is not the file's own (network, backoff): the rest stays queued.
   */
  async #sendQueue(result: SyncResult, stats: Stats, signal?: AbortSignal) {
    const waiting = new Set((await this.#host.local.pending()).map((entry) => entry.id));
    // Its record's change goes first (or waits for the app to settle its conflict).
    const entries = (await (await this.#files).queue()).filter((entry) => !waiting.has(entry.id));
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

  async #sendOne(entry: QueuedFile, result: SyncResult, stats: Stats, signal?: AbortSignal): Promise<Verdict> {
    const files = await this.#files;
    const record = await this.#host.local.get(entry.id);
    if (!record) {
      await this.#drop(entry.id);
      return 'skipped';
    }
    if (record.last_modified === undefined) return 'skipped';
    // Already as queued (a send whose answer was lost, then pulled): nothing to send again.
    const done = entry.op === 'upload' ? attachmentOf(record)?.hash === entry.hash : !attachmentOf(record);
    try {
      if (!done && !(await sendChange(this.#host, files, entry, record.last_modified, signal))) {
        // Its bytes are gone (storage cleared by the browser): nothing can be sent.
        await files.dequeue(entry.id, entry);
        return 'skipped';
      }
    } catch (error) {
      const verdict = await this.#failed(entry, error, result, stats);
      if (verdict) return verdict;
    }
    await files.dequeue(entry.id, entry);
    if (entry.op === 'upload') {
      stats.uploaded++;
      await this.#cache.uploaded(entry.hash!);
      this.#host.emit({ type: 'uploaded', id: entry.id });
    } else {
      stats.removed++;
      this.#host.emit({ type: 'removed', id: entry.id });
    }
    return 'sent';
  }

  /** What a failed send means; null when the server has the change after all (a replay, a removal already done). */
  async #failed(entry: QueuedFile, error: unknown, result: SyncResult, stats: Stats): Promise<Verdict | null> {
    const existing = error instanceof PreconditionFailedError ? error.existing : null;
    const replayed =
      entry.op === 'upload'
        ? attachmentOf(existing)?.hash === entry.hash
        : existing !== null && !attachmentOf(existing);
    const gone = entry.op === 'removal' && error instanceof ServerError && error.status === 404;
    if (replayed || gone) return null;
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

  close(): void {
    void this.#files.then(
      (files) => files.close(),
      () => {},
    );
  }
}

function describe(info: AttachmentInfo) {
  const { filename, mimetype, size, hash, location } = info;
  return { filename, mimetype, size, hash, location };
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
