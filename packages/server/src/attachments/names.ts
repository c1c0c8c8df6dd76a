/**
 * Names of stored files and what a file name says: its folder (the `attachment_folder` pattern),
 * an unguessable name, the allowed extensions (the original's groups) and the media type
 * recorded. A location is `<folder>/<uuid><.ext>` (or `<folder>/<uuid>/<safe name>` without
 * randomisation): relative, never with `..`, `.`-segments nor a leading `/`, so it stays under
 * the base path and the reserved `.quire/` folder of the backends.
 */
import { randomUUID } from 'node:crypto';
import { extname } from 'node:path';
import mime from 'mime-types';

export const FOLDER_PLACEHOLDERS = ['bucket_id', 'collection_id'] as const;

/** The original's groups (pyramid_storage's), `default` being documents, text, images and data. */
const TEXT = ['txt'];
const DOCUMENTS = ['pdf', 'rtf', 'odf', 'ods', 'gnumeric', 'abw', 'doc', 'docx', 'xls', 'xlsx'];
const IMAGES = ['jpg', 'jpe', 'jpeg', 'png', 'gif', 'svg', 'bmp', 'tiff', 'webp', 'heic', 'avif'];
const AUDIO = ['wav', 'mp3', 'aac', 'ogg', 'oga', 'flac'];
const VIDEO = ['mpeg', '3gp', 'avi', 'divx', 'dvr', 'flv', 'mp4', 'wmv'];
const DATA = ['csv', 'ini', 'json', 'plist', 'xml', 'yaml', 'yml'];
const SCRIPTS = ['js', 'php', 'pl', 'py', 'rb', 'sh'];
const ARCHIVES = ['gz', 'bz2', 'zip', 'tar', 'tgz', 'txz', '7z'];
const EXECUTABLES = ['so', 'exe', 'dll'];
const GROUPS: Record<string, readonly string[]> = {
  text: TEXT,
  documents: DOCUMENTS,
  images: IMAGES,
  audio: AUDIO,
  video: VIDEO,
  data: DATA,
  scripts: SCRIPTS,
  archives: ARCHIVES,
  executables: EXECUTABLES,
  default: [...DOCUMENTS, ...TEXT, ...IMAGES, ...DATA],
};

/** `images+pdf`, `jpg png`, `default`… → the extensions (lower case, no dot); `any`: no check. */
export function resolveExtensions(spec: string): Set<string> | 'any' {
  const result = new Set<string>();
  for (const group of spec.split('+').map((part) => part.trim())) {
    if (group === 'any') return 'any';
    const named = Object.hasOwn(GROUPS, group) ? GROUPS[group] : undefined;
    for (const extension of named ?? group.split(/[\s,]+/))
      if (extension) result.add(extension.replace(/^\./, '').toLowerCase());
  }
  return result;
}

/** `report.PDF` → `pdf`; no extension → ''. */
export function extensionOf(filename: string): string {
  return extname(filename).slice(1).toLowerCase();
}

export function extensionAllowed(filename: string, allowed: Set<string> | 'any'): boolean {
  return allowed === 'any' || allowed.has(extensionOf(filename));
}

/** The folder of a record's files, from the pattern (ids are protocol ids: no `/`, no dots first). */
export function folderFor(pattern: string, ids: { bucket_id: string; collection_id: string }): string {
  return pattern
    .replace(/\{(bucket_id|collection_id)\}/g, (_match, name: keyof typeof ids) => ids[name])
    .split('/')
    .filter(Boolean)
    .join('/');
}

/**
 * The original's `secure_filename` (werkzeug's): ASCII letters, digits, `_`, `.` and `-` only,
 * spaces as `_`, no leading dots. Empty when nothing of the name is left.
 */
export function safeFilename(filename: string): string {
  const ascii = filename.normalize('NFKD').replace(/[^\x20-\x7e]/g, '');
  const spaced = ascii.replace(/[/\\]/g, ' ').split(/\s+/).filter(Boolean).join('_');
  return spaced.replace(/[^A-Za-z0-9_.-]/g, '').replace(/^[._]+|[._]+$/g, '');
}

/** An unguessable location under `folder` for a file sent as `filename`; `.gz` added when stored gzipped. */
export function newLocation(
  folder: string,
  filename: string,
  options: { randomize: boolean; gzipped: boolean },
): string {
  const id = randomUUID();
  const extension = extensionOf(filename);
  const suffix = options.gzipped ? '.gz' : '';
  let name: string;
  if (options.randomize) name = `${id}${extension ? `.${extension}` : ''}${suffix}`;
  else name = `${id}/${safeFilename(filename) || 'file'}${suffix}`;
  return folder ? `${folder}/${name}` : name;
}

const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

/**
 * A location this server may have written: relative, segments of safe characters, none starting
 * with a dot (so neither `..` nor the reserved `.quire/`). Files are served and deleted only at
 * such locations.
 */
export function isFileLocation(location: string): boolean {
  if (location.length === 0 || location.length > 1024) return false;
  return location.split('/').every((segment) => SEGMENT.test(segment));
}

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

/**
 * The media type recorded for a file: the configured one for its extension, else what the client
 * sent (when it is a plain `type/subtype`), else the extension's, else `application/octet-stream`.
 */
export function mediaTypeOf(filename: string, sent: string | undefined, overrides: Record<string, string>): string {
  const extension = extname(filename).toLowerCase();
  if (extension && Object.hasOwn(overrides, extension)) return overrides[extension] as string;
  const given = sent?.split(';')[0]?.trim().toLowerCase();
  if (given && MEDIA_TYPE.test(given) && given !== 'application/octet-stream') return given;
  return mime.lookup(filename) || given || 'application/octet-stream';
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
  return mime.lookup(location) || 'application/octet-stream';
}
