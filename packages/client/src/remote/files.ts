/**
 * The bytes of attachments on the wire: the multipart body of an upload (built by hand, so any
 * `fetch` sends it the same way, as a Blob), a download read chunk by chunk for its progress, and
 * the SHA-256 that names a file's content.
 */

/** How far a transfer got, in bytes. */
export interface TransferProgress {
  loaded: number;
  total: number;
}

export type FileInput = Blob | Uint8Array;

/** A quoted-string: `"` and `\\` escaped (the server reads them back), line breaks made spaces. */
function quoted(value: string): string {
  return value.replace(/[\r\n]/g, ' ').replace(/["\\]/g, '\\$&');
}

/** `multipart/form-data` with the file part `attachment` and optional JSON fields, as one Blob. */
export function multipartBody(file: Blob, filename: string, mimetype: string, fields: Record<string, unknown>): Blob {
  const boundary = `----quire${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  const parts: BlobPart[] = [];
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined)
      parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${JSON.stringify(value)}\r\n`);
  }
  parts.push(
    `--${boundary}\r\nContent-Disposition: form-data; name="attachment"; filename="${quoted(filename)}"\r\n` +
      `Content-Type: ${mimetype}\r\n\r\n`,
    file,
    `\r\n--${boundary}--\r\n`,
  );
  return new Blob(parts, { type: `multipart/form-data; boundary=${boundary}` });
}

export function asBlob(file: FileInput, mimetype?: string): Blob {
  if (file instanceof Blob) return mimetype && file.type !== mimetype ? new Blob([file], { type: mimetype }) : file;
  return new Blob([file as Uint8Array<ArrayBuffer>], mimetype ? { type: mimetype } : {});
}

/** Lowercase hex SHA-256, as the server's `attachment.hash`. */
export async function sha256Hex(data: Blob | ArrayBuffer): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', data instanceof Blob ? await data.arrayBuffer() : data);
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Reads a response body whole, reporting each chunk. */
export async function readBody(
  response: Response,
  type: string,
  total: number,
  onProgress?: (progress: TransferProgress) => void,
): Promise<Blob> {
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  const reader = response.body?.getReader();
  onProgress?.({ loaded, total });
  for (;;) {
    const next = await reader?.read();
    if (!next || next.done) break;
    chunks.push(next.value);
    loaded += next.value.length;
    onProgress?.({ loaded, total: Math.max(total, loaded) });
  }
  return new Blob(chunks as Uint8Array<ArrayBuffer>[], { type });
}
