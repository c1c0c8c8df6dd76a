/**
 * Files on this device for reading: a queued upload's own bytes, else the cache of downloaded
 * files, else a download (checked against the record's `hash`) kept as the policy says — `eager`
 * fetches every missing file after a sync, `lazy` fetches on `getAttachment` and keeps it, `none`
 * keeps nothing. Kept files are evicted least recently used first beyond `cacheBytes`; files
 * waiting for upload never count and are never evicted (store/files.ts).
 */
import type { AttachmentsHost, GetLocalAttachmentOptions } from '../api/attachments-host.js';
import { AttachmentError, QuireError } from '../errors.js';
import { safeBlobType } from '../remote/safe-type.js';
import type { FilesStore } from '../store/files.js';
import type { SyncResult } from '../sync/engine.js';
import type { AttachmentInfo } from '../wire.js';
import { attachmentOf, download, inParallel } from './transfer.js';

export type DownloadPolicy = 'eager' | 'lazy' | 'none';

export class AttachmentCache {
  readonly #host: AttachmentsHost;
  readonly #files: Promise<FilesStore>;
  readonly policy: DownloadPolicy;
  readonly #capBytes: number;

  constructor(host: AttachmentsHost, files: Promise<FilesStore>, policy: DownloadPolicy, capBytes: number) {
    this.#host = host;
    this.#files = files;
    this.policy = policy;
    this.#capBytes = capBytes;
  }

  /** The record's file: its queued upload, the cached copy, or downloaded (and kept by policy). */
  async get(id: string, options: GetLocalAttachmentOptions): Promise<Blob> {
    const files = await this.#files;
    const queued = await files.queued(id);
    if (queued?.op === 'upload') {
      const bytes = await files.bytes(queued.hash!);
      if (bytes) return new Blob([bytes], { type: safeBlobType(queued.mimetype) });
    }
    const synced = queued?.op === 'removal' ? null : attachmentOf(await this.#host.local.get(id));
    if (!synced) throw new AttachmentError('QUIRE_ERR_ATTACHMENT_NONE', `Record ${id} has no attachment`);
    const bytes = await files.bytes(synced.hash);
    if (bytes) {
      await files.used(synced.hash);
      return new Blob([bytes], { type: safeBlobType(synced.mimetype) });
    }
    return this.#download(id, synced, options);
  }

  /** Whether the bytes of `hash` are on this device. */
  async holds(hash: string): Promise<boolean> {
    return (await this.#files).has(hash);
  }

  /** An upload the server now has: its bytes stay as the downloaded file (unless nothing is kept). */
  async uploaded(hash: string): Promise<void> {
    if (this.policy !== 'none') await (await this.#files).keep(hash, null, this.#capBytes);
  }

  /** `eager`: downloads every file the replica's records have and the device does not; returns how many. */
  async downloadMissing(result: SyncResult, signal?: AbortSignal): Promise<number> {
    const files = await this.#files;
    let downloaded = 0;
    let stopped = false;
    const missing: { id: string; info: AttachmentInfo }[] = [];
    for (const record of await this.#host.local.list()) {
      const info = attachmentOf(record);
      if (info && !(await files.has(info.hash))) missing.push({ id: record.id, info });
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

  async #download(id: string, info: AttachmentInfo, options: GetLocalAttachmentOptions): Promise<Blob> {
    const blob = await download(this.#host, id, info, options);
    if (this.policy !== 'none') {
      await (await this.#files).keep(info.hash, await blob.arrayBuffer(), this.#capBytes);
      this.#host.emit({ type: 'downloaded', id });
    }
    return blob;
  }
}
