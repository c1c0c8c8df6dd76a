/**
 * Moving a record's file (the `attachments` capability): the upload's multipart body and its
 * progress, and the checked download. Loaded by the remote API on first use: apps without files
 * do not download this code.
 */
import { AttachmentError } from '../errors.js';
import type { HttpTransport } from '../transport/http.js';
import type { AttachmentInfo } from '../wire.js';
import { asBlob, type FileInput, multipartBody, readBody, sha256Hex } from './files.js';
import type { AddAttachmentOptions, GetAttachmentOptions } from './options.js';
import { safeBlobType } from './safe-type.js';

/** POSTs `file` to `path` (a record's `/attachment`): the record's new `attachment`. */
export async function upload(
  http: HttpTransport,
  path: string,
  headers: Record<string, string>,
  file: FileInput,
  options: AddAttachmentOptions,
): Promise<AttachmentInfo> {
  const blob = asBlob(file, options.mimetype);
  const filename = options.filename ?? (file as { name?: string }).name ?? 'file';
  const total = blob.size;
  const report = options.onProgress;
  report?.({ loaded: 0, total });
  const response = await http.request<AttachmentInfo>({
    method: 'POST',
    path,
    headers,
    body: multipartBody(blob, filename, blob.type || 'application/octet-stream', {
      data: options.data,
      permissions: options.permissions,
    }),
    timeoutMs: options.timeoutMs ?? 30_000 + total / 50,
    ...(report ? { onUploadProgress: (loaded: number) => report({ loaded: Math.min(loaded, total - 1), total }) } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  report?.({ loaded: total, total });
  return response.body;
}

/** Downloads the file at `url` (credentials only to the API's own origin) and checks it against its hash. */
export async function download(
  http: HttpTransport,
  url: string,
  attachment: AttachmentInfo,
  id: string,
  options: GetAttachmentOptions,
): Promise<Blob> {
  const response = await http.stream(url, {
    headers: { Accept: '*/*' },
    anonymous: new URL(url).origin !== new URL(http.remote).origin,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const blob = await readBody(response, safeBlobType(attachment.mimetype), attachment.size, options.onProgress);
  if ((await sha256Hex(blob)) !== attachment.hash)
    throw new AttachmentError('QUIRE_ERR_ATTACHMENT_HASH', `The file of record ${id} does not match its hash`);
  return blob;
}
