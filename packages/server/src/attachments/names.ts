/**
 * Names of stored files and what a file name says: its folder (the `attachment_folder` pattern),
 * an unguessable name, the allowed extensions (the original's groups) and the media type
 * recorded. A location is `<folder>/<uuid><.ext>` (or `<folder>/<uuid>/<safe name>` without
 * randomisation): relative, never with `..`, `.`-segments nor a leading `/`, so it stays under
 * the base path and the reserved `.quire/` folder of the backends.
 */
import { randomUUID } from 'node:crypto';
import { extname } from 'node:path';

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
function extensionOf(filename: string): string {
  return extname(filename).slice(1).toLowerCase();
}

export function extensionAllowed(filename: string, allowed: Set<string> | 'any'): boolean {
  return allowed === 'any' || allowed.has(extensionOf(filename));
}

/** Longest file name taken, in characters (a file system's usual limit). */
const MAX_FILENAME_LENGTH = 255;
/** What an extension may be: it becomes part of the stored location (`<uuid>.<ext>`). */
const EXTENSION = /^[a-z0-9_-]{1,24}$/;

/**
 * What is wrong with a file name sent by a client, worded as the rule it breaks; null when it is
 * fine. A name the backends could not store is the caller's mistake (400), never theirs.
 */
export function filenameProblem(filename: string): string | null {
  if (filename.length > MAX_FILENAME_LENGTH) return `File name is longer than ${MAX_FILENAME_LENGTH} characters.`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(filename)) return 'File name contains control characters.';
  const extension = extensionOf(filename);
  if (extension !== '' && !EXTENSION.test(extension))
    return "File extension must be 1 to 24 ASCII letters, digits, '_' or '-'.";
  return null;
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
 * Where every folder of these patterns begins (the text before the first placeholder, up to a
 * `/`): the prefixes under which this server's files are. `['']` when one may be anywhere.
 */
export function folderPrefixes(patterns: string[]): string[] {
  const prefixes = new Set<string>();
  for (const pattern of patterns) {
    const fixed = pattern.split('{')[0] ?? '';
    const folder = pattern.includes('{') ? fixed.slice(0, fixed.lastIndexOf('/') + 1) : fixed;
    const clean = folder.split('/').filter(Boolean).join('/');
    if (clean === '') return [''];
    prefixes.add(`${clean}/`);
  }
  return [...prefixes].filter((prefix) => ![...prefixes].some((other) => other !== prefix && prefix.startsWith(other)));
}

/**
 * The original's `secure_filename` (werkzeug's): ASCII letters, digits, `_`, `.` and `-` only,
 * spaces as `_`, no leading dots. Empty when nothing of the name is left.
 */
function safeFilename(filename: string): string {
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
