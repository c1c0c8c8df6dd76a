/**
 * What `quire import` accepts of one line, by the API's rules: the resource types the store
 * holds, each under the parent its kind has, ids as the API checks them (ID_PATTERN, accounts'
 * own pattern), integer timestamps, a tombstone's exact shape, permissions the resource has,
 * group members as principals, and a line no larger or deeper than a request body may be.
 * Whether parents exist and ids repeat needs the lines before: staging.ts checks that.
 * Each refusal is an ImportError whose message starts with `line <n>: `.
 */
import secureJson from 'secure-json-parse';
import { ACCOUNT_ID_PATTERN } from '../accounts/ids.js';
import { INDEX_RESOURCE } from '../attachments/file-index.js';
import { isFileLocation } from '../attachments/names.js';
import { findUnstorableValue } from '../http/content.js';
import { measureJsonText } from '../http/json-limits.js';
import { HTTP_SETTINGS } from '../http/settings.js';
import { QUOTA_RESOURCE } from '../quotas/listener.js';
import { ID_PATTERN } from '../engine/definition.js';
import { RESOURCE_SETTINGS } from '../engine/settings.js';
import { RESOURCES } from '../resources/registry.js';
import { HISTORY_RESOURCE, type Permissions, type StoredObject, type Tombstone } from '../storage/types.js';
import type { HeaderLine, Line, ObjectLine, ScopeLine } from './format.js';

export class ImportError extends Error {
  override name = 'ImportError';
}

/** Bounds on one line, from the API's own limits on a request body (see `importLimits`). */
export interface LineLimits {
  maxLineBytes: number;
  maxDepth: number;
  maxKeys: number;
  /** The API's `max_object_id_length`: a longer id could never be addressed by URL. */
  maxIdLength: number;
}

/**
 * A line holds an object as a request body would, inside a small envelope (`object`,
 * `permissions`, `parent`, `resource`); a history entry holds a whole object and its
 * permissions one level further down. So: twice the body size and keys, three levels more.
 */
export function importLimits(settings: {
  max_body_bytes: number;
  max_json_depth: number;
  max_json_keys: number;
  max_object_id_length: number;
}): LineLimits {
  return {
    maxLineBytes: 2 * settings.max_body_bytes,
    maxDepth: settings.max_json_depth + 3,
    maxKeys: 2 * settings.max_json_keys + 100,
    maxIdLength: settings.max_object_id_length,
  };
}

/** With the API's default limits. */
export const DEFAULT_LIMITS: LineLimits = importLimits({
  max_body_bytes: HTTP_SETTINGS.max_body_bytes.default,
  max_json_depth: HTTP_SETTINGS.max_json_depth.default,
  max_json_keys: HTTP_SETTINGS.max_json_keys.default,
  max_object_id_length: RESOURCE_SETTINGS.max_object_id_length.default,
});

/** Where an object of each kind lives: the parent's URI pattern and the id rule. */
interface Kind {
  /** The parent URI this kind lives under, its captured ids the ancestors' (`''`: the root). */
  parent: RegExp;
  id: RegExp;
  /** Permission names its ACL may have (none: no ACL). */
  permissions: readonly string[];
}

const SEGMENT = ID_PATTERN.source.slice(1, -1);
const IN_BUCKET = new RegExp(`^/buckets/(${SEGMENT})$`);
const IN_COLLECTION = new RegExp(`^/buckets/(${SEGMENT})/collections/(${SEGMENT})$`);
const permissionsOf = (name: string) => RESOURCES.find((def) => def.name === name)?.permissions ?? [];

/** Every resource an export holds (export.ts), as the API names them. */
const KINDS: Readonly<Record<string, Kind>> = {
  bucket: { parent: /^$/, id: ID_PATTERN, permissions: permissionsOf('bucket') },
  account: { parent: /^$/, id: ACCOUNT_ID_PATTERN, permissions: ['read', 'write'] },
  collection: { parent: IN_BUCKET, id: ID_PATTERN, permissions: permissionsOf('collection') },
  group: { parent: IN_BUCKET, id: ID_PATTERN, permissions: permissionsOf('group') },
  record: { parent: IN_COLLECTION, id: ID_PATTERN, permissions: permissionsOf('record') },
  // The attachments' file index: one entry per record holding a file, beside the records.
  [INDEX_RESOURCE]: { parent: IN_COLLECTION, id: ID_PATTERN, permissions: [] },
  [HISTORY_RESOURCE]: { parent: IN_BUCKET, id: ID_PATTERN, permissions: [] },
  [QUOTA_RESOURCE]: { parent: IN_BUCKET, id: ID_PATTERN, permissions: [] },
};

const refuse = (number: number, reason: string): never => {
  throw new ImportError(`line ${number}: ${reason}`);
};

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isTimestamp = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const show = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

/** Whether a parsed value holds a number JSON wrote but a double cannot hold (1e400 → Infinity). */
function hasInfinity(value: unknown): boolean {
  if (typeof value === 'number') return !Number.isFinite(value);
  if (value === null || typeof value !== 'object') return false;
  for (const item of Array.isArray(value) ? value : Object.values(value)) if (hasInfinity(item)) return true;
  return false;
}

/** The line's JSON value, measured first (a hostile line costs one pass over its text). */
export function parseLine(text: string, number: number, limits: LineLimits): unknown {
  const excess = measureJsonText(text, { maxDepth: limits.maxDepth, maxKeys: limits.maxKeys });
  if (excess === 'depth') refuse(number, `nested deeper than ${limits.maxDepth} levels`);
  if (excess === 'keys') refuse(number, `more than ${limits.maxKeys} keys and items`);
  let value: unknown;
  const escapes = text.includes('\\u');
  try {
    // As the API parses a body: keys that could pollute prototypes are refused. secure-json-parse
    // looks for them with two regular expressions over the text: a line that neither names them
    // nor escapes a character (\u…), nor starts with a byte order mark, cannot hold one.
    value =
      escapes || text.includes('__proto__') || text.includes('constructor') || text.charCodeAt(0) === 0xfeff
        ? (secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }) as unknown)
        : (JSON.parse(text) as unknown);
  } catch (error) {
    const pollution = /forbidden (prototype|constructor) property/.test((error as Error).message);
    return refuse(
      number,
      pollution ? 'a key could pollute prototypes (__proto__ or constructor.prototype)' : 'not JSON',
    );
  }
  // What the API refuses in a body (NUL, unpaired surrogates, 1e400): neither store could hold it as
  // given. Only a \u escape makes NUL or a lone surrogate (decoded UTF-8 cannot): without one, the
  // strings need no look.
  const unstorable = escapes ? findUnstorableValue(value) : hasInfinity(value) ? findUnstorableValue(value) : null;
  if (unstorable) refuse(number, unstorable);
  return value;
}

export function checkHeader(value: unknown, format: string, version: number): HeaderLine {
  const header = isPlainObject(value) ? value : {};
  if (header.format !== format)
    throw new ImportError(`not a ${format} stream (its first line must be {"format":"${format}",…})`);
  if (header.version !== version)
    throw new ImportError(
      `${format} version ${show(header.version)} is not supported (this quire reads version ${version})`,
    );
  return header as unknown as HeaderLine;
}

/** The kind of `resource`, and that `parent` is where such objects live. */
function checkPlace(resource: unknown, parent: unknown, number: number): Kind {
  if (typeof resource !== 'string' || !Object.hasOwn(KINDS, resource))
    return refuse(number, `unknown resource type ${show(resource)} (known: ${Object.keys(KINDS).join(', ')})`);
  const kind = KINDS[resource]!;
  if (typeof parent !== 'string' || !kind.parent.test(parent))
    return refuse(number, `a ${resource} cannot be under ${show(parent)}`);
  return kind;
}

function checkPermissions(
  permissions: unknown,
  kind: Kind,
  resource: string,
  number: number,
): asserts permissions is Permissions | undefined {
  if (permissions === undefined) return;
  if (!isPlainObject(permissions)) return refuse(number, 'permissions must be an object');
  for (const [name, principals] of Object.entries(permissions)) {
    if (!kind.permissions.includes(name))
      refuse(
        number,
        `${show(name)} is not a permission of a ${resource}` +
          `${kind.permissions.length ? ` (${kind.permissions.join(', ')})` : ''}`,
      );
    if (
      !Array.isArray(principals) ||
      !principals.every((principal) => typeof principal === 'string' && principal !== '')
    )
      refuse(number, `permissions.${name} must be a list of principals`);
  }
}

/** What `checkLine` checks beyond the line's shape. */
export interface LineChecks extends Pick<LineLimits, 'maxIdLength'> {
  /** The attachments' folder pattern (`attachment_folder`): no index entry names a file in another collection's. */
  attachmentFolder?: string;
}

/**
 * An attachment index entry (what deletions trust: attachments/file-index.ts) names a file this
 * server could have written (relative, no `..`, no dot-segment), outside the folder the pattern
 * gives any other collection. (Two entries naming one file: the stores check that.)
 */
function checkFileEntry(object: Record<string, unknown>, parent: string, number: number, folder?: string): void {
  const { location } = object;
  if (typeof location !== 'string' || !isFileLocation(location))
    refuse(number, `the attachment location ${show(location)} is not a file location (relative, without "..")`);
  if (folder && inAnotherFolder(folder, location as string, parent))
    refuse(
      number,
      `the attachment location ${show(location)} is in the folder of another collection ` +
        `(attachment_folder "${folder}")`,
    );
}

/** Whether `location` lies in the folder `pattern` gives a collection other than `collectionUri`. */
function inAnotherFolder(pattern: string, location: string, collectionUri: string): boolean {
  const [, , bucket, , collection] = collectionUri.split('/');
  const own: Record<string, string | undefined> = { bucket_id: bucket, collection_id: collection };
  const names: string[] = [];
  const source = pattern
    .split('/')
    .filter(Boolean)
    .join('/')
    .split(/\{(bucket_id|collection_id)\}/)
    .map((part, i) => {
      if (i % 2 === 0) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(part);
      return '([^/]+)';
    })
    .join('');
  if (names.length === 0) return false; // one folder for every collection: nothing to tell them apart
  const match = new RegExp(`^${source}/`).exec(location);
  return match !== null && names.some((name, i) => match[i + 1] !== own[name]);
}

/** An object or scope line, checked on its own (its parents and what repeats: the stores, storage/bulk-import.ts). */
export function checkLine(value: unknown, number: number, limits: LineChecks = DEFAULT_LIMITS): Line {
  if (!isPlainObject(value)) return refuse(number, 'neither an object nor a scope line');
  if ('scope' in value) {
    const scope = value.scope;
    if (!isPlainObject(scope) || Object.keys(value).length !== 1)
      return refuse(number, 'neither an object nor a scope line');
    checkPlace(scope.resource, scope.parent, number);
    if (!isTimestamp(scope.timestamp))
      refuse(number, `scope timestamp ${show(scope.timestamp)} is not a whole number of milliseconds`);
    return value as unknown as ScopeLine;
  }
  const { resource, parent, object, permissions, ...rest } = value;
  if (object === undefined || Object.keys(rest).length > 0) return refuse(number, 'neither an object nor a scope line');
  const kind = checkPlace(resource, parent, number);
  if (!isPlainObject(object)) return refuse(number, 'object must be a JSON object');
  if (typeof object.id !== 'string' || !kind.id.test(object.id))
    refuse(number, `invalid ${resource as string} id ${show(object.id)}`);
  if ((object.id as string).length > limits.maxIdLength) {
    refuse(
      number,
      `${resource as string} id longer than ${limits.maxIdLength} characters ` +
        '(max_object_id_length: the API refuses it, it could not be addressed by URL)',
    );
  }
  if (!isTimestamp(object.last_modified))
    refuse(number, `last_modified ${show(object.last_modified)} is not a whole number of milliseconds`);
  if ('deleted' in object) {
    if (object.deleted !== true || Object.keys(object).length !== 3)
      refuse(number, 'a tombstone is exactly {"deleted":true,"id":…,"last_modified":…}');
    if (permissions !== undefined) refuse(number, 'a tombstone has no permissions');
  } else {
    checkPermissions(permissions, kind, resource as string, number);
    if (resource === INDEX_RESOURCE) checkFileEntry(object, parent as string, number, limits.attachmentFolder);
    if (
      resource === 'group' &&
      object.members !== undefined &&
      (!Array.isArray(object.members) || !object.members.every((member) => typeof member === 'string'))
    ) {
      refuse(number, 'group members must be a list of principals');
    }
  }
  return value as unknown as ObjectLine;
}

export function isTombstone(object: StoredObject | Tombstone): object is Tombstone {
  return (object as Partial<Tombstone>).deleted === true;
}
