/**
 * The network side of offline attachments: sending one queued file change (an upload with its
 * bytes, or a removal) with `If-Match` on the record's version, downloading a file, and running
 * transfers a few at a time. What to send and what to keep is queue.ts's and cache.ts's.
 */
import type { AttachmentsHost, GetLocalAttachmentOptions } from '../api/attachments-host.js';
import type { FilesStore, QueuedFile } from '../store/files.js';
import type { AttachmentInfo } from '../wire.js';

/** Files sent or downloaded at once (browsers open up to 6 connections per origin over HTTP/1.1). */
const TRANSFERS = 3;

/** The record's attachment as the server describes it, null when it has none. */
export function attachmentOf(record: Record<string, unknown> | undefined | null): AttachmentInfo | null {
  const value = record?.attachment as AttachmentInfo | null | undefined;
  return value && typeof value === 'object' && typeof value.hash === 'string' ? value : null;
}

/** Sends one queued change on top of the record's `version`; false when its bytes are gone. */
export async function sendChange(
  host: AttachmentsHost,
  files: FilesStore,
  entry: QueuedFile,
  version: number,
  signal?: AbortSignal,
): Promise<boolean> {
  if (entry.op === 'removal') {
    await host.remote.removeAttachment(host.bucket, host.collection, entry.id, { ifMatch: version });
    return true;
  }
  const bytes = await files.bytes(entry.hash!);
  if (!bytes) return false;
  await host.remote.addAttachment(
    host.bucket,
    host.collection,
    entry.id,
    new Blob([bytes], { type: entry.mimetype! }),
    {
      filename: entry.filename!,
      ifMatch: version,
      ...(signal ? { signal } : {}),
      onProgress: (progress) => host.emit({ type: 'progress', id: entry.id, direction: 'upload', ...progress }),
    },
  );
  return true;
}

/** Downloads a record's file (checked against its hash by the remote API), reporting progress. */
export function download(
  host: AttachmentsHost,
  id: string,
  info: AttachmentInfo,
  options: GetLocalAttachmentOptions,
): Promise<Blob> {
  return host.remote.getAttachment(host.bucket, host.collection, id, {
    attachment: info,
    ...(options.signal ? { signal: options.signal } : {}),
    onProgress: (progress) => {
      options.onProgress?.(progress);
      host.emit({ type: 'progress', id, direction: 'download', ...progress });
    },
  });
}

/** Runs `work` on every item, `TRANSFERS` at a time, in the items' order. */
export async function inParallel<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(TRANSFERS, items.length) }, worker));
}
