/**
 * The media type of a file: the one recorded in its record's `attachment.mimetype`, and how it
 * is served. A type is never taken from the multipart part alone — anyone can type an SVG with a
 * script `image/png`, or a PNG `text/html` — and never claims an *active* type (one a browser runs
 * script in: HTML, XHTML, SVG, any XML, JavaScript…) that the file's extension and first bytes do
 * not both bear out:
 *
 * 1. the operator's type for the extension (`attachment_mimetypes`), else the extension's;
 * 2. with no known extension, the part's `Content-Type` when it is a plain, inactive type;
 * 3. an active result stands only when the extension names that very type and the first bytes
 *    are markup (`<` after a BOM and blanks): `evil.png` stays `image/png`, and `x.svg` holding
 *    a PNG, or an unknown extension typed `text/html`, becomes `application/octet-stream`.
 *
 * The bytes are looked at only for that last question: a non-active type is harmless whatever the
 * bytes (`image/png` is never run as script), so no general signature library is needed; the
 * first bytes of the stream are peeked before it is stored (upload.ts).
 */
import { extname } from 'node:path';
import mime from 'mime-types';

export const OCTET_STREAM = 'application/octet-stream';

/** Media types the original sets for extensions its platform does not know. */
const BUILT_IN_TYPES: Record<string, string> = { '.pem': 'application/x-pem-file', '.geojson': 'application/geojson' };

/** `.txt:text/vnd.graphviz;.pem:application/x-pem-file` → extension → type. */
export function parseMimetypeOverrides(spec: string): Record<string, string> {
  const result: Record<string, string> = { ...BUILT_IN_TYPES };
  for (const entry of spec.split(';')) {
    const [extension, type] = entry.split(':').map((part) => part.trim());
    if (extension && type)
      result[extension.startsWith('.') ? extension.toLowerCase() : `.${extension.toLowerCase()}`] = type;
  }
  return result;
}

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/;

/** `Text/HTML; charset=x` → `text/html`; null when it is not a plain `type/subtype`. */
function essenceOf(type: string | undefined): string | null {
  const essence = type?.split(';')[0]?.trim().toLowerCase();
  return essence && MEDIA_TYPE.test(essence) ? essence : null;
}

const ACTIVE = new Set([
  'text/html',
  'application/xhtml+xml',
  'image/svg+xml',
  'text/xml',
  'application/xml',
  'text/xsl',
  'application/xslt+xml',
  'text/javascript',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'text/ecmascript',
  'text/jscript',
  'application/x-shockwave-flash',
  'application/x-httpd-php',
  'text/cache-manifest',
]);

/**
 * A type a browser may run script in when a document of it is opened: HTML, every XML type (an
 * XML document can hold XHTML and its scripts: `*\/xml`, `*+xml`), scripts, Flash, `multipart/*`.
 */
export function isActiveType(type: string): boolean {
  const essence = essenceOf(type) ?? type.toLowerCase();
  return (
    ACTIVE.has(essence) || essence.endsWith('+xml') || essence.endsWith('/xml') || essence.startsWith('multipart/')
  );
}

/** How many first bytes the markup check needs (a BOM, some blanks, a `<`). */
export const SNIFF_BYTES = 512;

/** Whether the first bytes read as markup: `<` after an optional UTF-8/16 BOM and whitespace. */
export function looksLikeMarkup(head: Uint8Array): boolean {
  let index = 0;
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) index = 3;
  else if ((head[0] === 0xfe && head[1] === 0xff) || (head[0] === 0xff && head[1] === 0xfe)) {
    // UTF-16: the first non-blank code unit is `<`, either byte order.
    for (let i = 2; i + 1 < head.length; i += 2) {
      const unit =
        head[0] === 0xfe ? ((head[i] ?? 0) << 8) | (head[i + 1] ?? 0) : ((head[i + 1] ?? 0) << 8) | (head[i] ?? 0);
      if (unit === 0x20 || unit === 0x09 || unit === 0x0a || unit === 0x0d || unit === 0x0c) continue;
      return unit === 0x3c;
    }
    return false;
  }
  for (; index < head.length; index++) {
    const byte = head[index];
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d || byte === 0x0c) continue;
    return byte === 0x3c;
  }
  return false;
}

/** The type the extension gives: the operator's first, then the common table; null when unknown. */
function extensionType(filename: string, overrides: Record<string, string>): string | null {
  const extension = extname(filename).toLowerCase();
  if (!extension) return null;
  if (Object.hasOwn(overrides, extension)) return essenceOf(overrides[extension]) ?? OCTET_STREAM;
  return mime.lookup(extension) || null;
}

/** The type recorded for a file (the rule at the top): `head` is its first bytes (up to SNIFF_BYTES). */
export function recordedTypeOf(
  filename: string,
  sent: string | undefined,
  head: Uint8Array,
  overrides: Record<string, string>,
): string {
  const byExtension = extensionType(filename, overrides);
  if (byExtension !== null) {
    if (!isActiveType(byExtension)) return byExtension;
    return looksLikeMarkup(head) ? byExtension : OCTET_STREAM;
  }
  const given = essenceOf(sent);
  return given && !isActiveType(given) ? given : OCTET_STREAM;
}

/** `image/png` against `image/*`, `image/png`; an empty list allows everything. */
export function mediaTypeAllowed(type: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return true;
  return allowed.some((pattern) => {
    const wanted = pattern.trim().toLowerCase();
    return wanted === type || wanted === '*/*' || (wanted.endsWith('/*') && type.startsWith(wanted.slice(0, -1)));
  });
}

/** The type a stored file is served with: by its name (the stored name keeps the extension). */
export function servedTypeOf(location: string): string {
  return mime.lookup(location) || OCTET_STREAM;
}

/**
 * Types a browser shows in a tab without running anything of the file: raster images, audio,
 * video, PDF (its viewer is sandboxed), plain text. Others are served as downloads.
 */
const INLINE = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/bmp',
  'image/x-icon',
  'image/vnd.microsoft.icon',
  'image/apng',
  'application/pdf',
  'text/plain',
]);
const MEDIA = /^(audio|video)\/[a-z0-9][a-z0-9.-]*$/;

function servedInline(type: string): boolean {
  const essence = essenceOf(type);
  return essence !== null && (INLINE.has(essence) || MEDIA.test(essence));
}

/** `Content-Disposition` of a file: inline for the types above, else a download (`attachment`). */
export function dispositionOf(type: string, filename: string): string {
  return `${servedInline(type) ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
