/**
 * `multipart/form-data` bodies built by hand, byte for byte: what the attachment tests send,
 * including what no browser would (misnamed parts, files as fields, broken framing).
 */
import { randomBytes } from 'node:crypto';

export interface Part {
  name: string;
  /** Makes it a file part (`filename=""` too). */
  filename?: string;
  contentType?: string;
  value: string | Buffer;
}

export function multipart(
  parts: Part[],
  boundary = `quire-${randomBytes(8).toString('hex')}`,
): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if (part.filename !== undefined) head += `; filename="${part.filename}"`;
    head += '\r\n';
    if (part.contentType) head += `Content-Type: ${part.contentType}\r\n`;
    chunks.push(
      Buffer.from(`${head}\r\n`),
      Buffer.isBuffer(part.value) ? part.value : Buffer.from(part.value),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** The usual upload: a file in `attachment`, and optional `data` / `permissions` JSON. */
export function fileForm(
  file: { filename: string; content: string | Buffer; contentType?: string },
  fields: { data?: unknown; permissions?: unknown } = {},
) {
  const parts: Part[] = [
    {
      name: 'attachment',
      filename: file.filename,
      contentType: file.contentType ?? 'application/octet-stream',
      value: file.content,
    },
  ];
  if (fields.data !== undefined) parts.push({ name: 'data', value: JSON.stringify(fields.data) });
  if (fields.permissions !== undefined) parts.push({ name: 'permissions', value: JSON.stringify(fields.permissions) });
  return multipart(parts);
}
