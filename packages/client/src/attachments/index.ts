/**
 * `@quire/client/attachments`: files on records, offline. `attachments({ policy })` is given to a
 * collection (its `attachments` option) and enables `collection.attach`, `detach` and
 * `getAttachment`. A separate entry point: apps without files never download this code.
 * queue.ts (what waits to be sent) · transfer.ts (the network) · cache.ts (files kept for reading)
 * · store/files.ts (their database, beside the replica).
 */
import type { AttachmentsSetup } from '../api/attachments-host.js';
import { FilesStore } from '../store/files.js';
import { AttachmentCache, type DownloadPolicy } from './cache.js';
import { AttachmentQueue } from './queue.js';

export type { DownloadPolicy };
export type { AttachOptions, GetLocalAttachmentOptions, LocalAttachment } from '../api/attachments-host.js';
export type { AttachmentEvent } from '../api/events.js';
export { isSafeBlobType, safeBlobType } from '../remote/safe-type.js';

export interface AttachmentsOptions {
  /** When files are downloaded (default `lazy`). */
  policy?: DownloadPolicy;
  /** Bytes of downloaded files kept on the device (default 64 MB); files waiting for upload do not count. */
  cacheBytes?: number;
}

export function attachments(options: AttachmentsOptions = {}): AttachmentsSetup {
  return (host) => {
    const files = FilesStore.open(`${host.dbName}#files`, host.env);
    files.catch(() => {});
    const cache = new AttachmentCache(host, files, options.policy ?? 'lazy', options.cacheBytes ?? 64 * 1024 * 1024);
    return new AttachmentQueue(host, files, cache);
  };
}
