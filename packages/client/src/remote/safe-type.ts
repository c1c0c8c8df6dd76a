/**
 * The type of a Blob handed to an app. A record's `attachment.mimetype` is whatever the uploader
 * (or their server) said: a Blob typed `image/svg+xml` or `text/html` and opened in a tab — a
 * `blob:` URL — is a document of the app's own origin, whose scripts read its storage. So only
 * types a browser shows without running anything of the file keep their type; every other Blob
 * is `application/octet-stream`, which a browser downloads rather than renders.
 */

export const OCTET_STREAM = 'application/octet-stream';

/** Shown by a browser, never run: raster images, PDF (its viewer is sandboxed), plain text. */
const SAFE = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/bmp',
  'image/apng',
  'image/x-icon',
  'image/vnd.microsoft.icon',
  'application/pdf',
  'text/plain',
]);
/** Audio and video, by a plain subtype: no `+xml` (an XML type, rendered as a document). */
const MEDIA = /^(audio|video)\/[a-z0-9][a-z0-9.-]*$/;

/** Whether a file of this type may keep it in a Blob (parameters and case ignored). */
export function isSafeBlobType(type: string | null | undefined): boolean {
  const essence = type?.split(';')[0]?.trim().toLowerCase() ?? '';
  return SAFE.has(essence) || MEDIA.test(essence);
}

/** The type to give a Blob of a file said to be of `type`: its essence when safe, else octet-stream. */
export function safeBlobType(type: string | null | undefined): string {
  return isSafeBlobType(type) ? (type as string).split(';')[0]!.trim().toLowerCase() : OCTET_STREAM;
}
