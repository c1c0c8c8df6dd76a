/**
 * Request bodies of writes (protocol-reference §4): the `{data, permissions}` wrapper, ids,
 * permission names, and the three PATCH content types.
 */
import jsonPatch, { type Operation } from 'fast-json-patch';
import mergePatch from 'json-merge-patch';
import { invalidParameter } from '../errors.js';
import { countJsonKeys, describeExcess, measureJsonValue, type JsonLimits } from '../http/json-limits.js';
import type { Permissions } from '../storage/types.js';
import { ID_PATTERN, type PatchType, type ResourceDefinition } from './definition.js';

export interface WriteBody {
  data: Record<string, unknown> | undefined;
  permissions: Permissions | undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function describe(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** 400 when `object` has keys outside `allowed` (Kinto's "Unrecognized keys in mapping"). */
export function rejectUnknownKeys(object: Record<string, unknown>, allowed: ReadonlySet<string>, name: string): void {
  const unknown = Object.keys(object).filter((key) => !allowed.has(key));
  if (unknown.length > 0) {
    throw invalidParameter(
      'body',
      name,
      `Unrecognized keys in mapping: ${unknown.map((key) => JSON.stringify(key)).join(', ')}`,
    );
  }
}

const BODY_KEYS: ReadonlySet<string> = new Set(['data', 'permissions']);

/**
 * Validates `{data?, permissions?}`: nothing else at the top level, data an object, known
 * permissions. For PATCH (`patch: true`) a null `permissions`, or a null permission, is allowed.
 */
export function parseWriteBody(body: unknown, def: ResourceDefinition, options: { patch?: boolean } = {}): WriteBody {
  if (body === undefined) return { data: undefined, permissions: undefined };
  if (!isPlainObject(body)) throw invalidParameter('body', '', 'Should be a JSON object');
  rejectUnknownKeys(body, BODY_KEYS, '');
  const { data, permissions } = body;
  if (data !== undefined && !isPlainObject(data)) {
    throw invalidParameter(
      'body',
      'data',
      `${describe(data)} is not a mapping type: Does not implement dict-like functionality.`,
    );
  }
  const absent = permissions === undefined || (options.patch === true && permissions === null);
  return { data, permissions: absent ? undefined : parsePermissions(permissions, def, options.patch === true) };
}

/**
 * `permissions`: an object whose keys are the resource's permission names and whose values are
 * lists of principal strings. With `allowNull` (PATCH), a null value clears that permission.
 */
function parsePermissions(value: unknown, def: ResourceDefinition, allowNull: boolean): Permissions {
  if (!isPlainObject(value)) throw invalidParameter('body', 'permissions', `${describe(value)} is not a mapping type`);
  const result: Permissions = {};
  for (const [name, principals] of Object.entries(value)) {
    if (!def.permissions.includes(name)) {
      throw invalidParameter('body', `permissions.${name}`, `"${name}" is not one of ${def.permissions.join(', ')}`);
    }
    if (principals === null && allowNull) {
      Object.defineProperty(result, name, { value: null, enumerable: true, writable: true });
      continue;
    }
    if (!Array.isArray(principals) || !principals.every((principal) => typeof principal === 'string')) {
      throw invalidParameter('body', `permissions.${name}`, `${describe(principals)} is not a list of principals`);
    }
    Object.defineProperty(result, name, { value: [...new Set(principals)], enumerable: true, writable: true });
  }
  return result;
}

/**
 * 400 unless `id` follows the resource's id rule (default: §4.2) and is at most `maxLength` long
 * (`max_object_id_length`: an object whose URL would not fit in a request line could never be
 * read, changed or deleted again).
 */
export function validateId(id: unknown, pattern: RegExp = ID_PATTERN, maxLength = Number.POSITIVE_INFINITY): string {
  if (typeof id !== 'string' || !pattern.test(id)) throw invalidParameter('path', null, 'Invalid object id');
  if (id.length > maxLength)
    throw invalidParameter('path', null, `Invalid object id: longer than ${maxLength} characters`);
  return id;
}

/** Strips the fields the server owns from client data (it keeps its own `id`/`last_modified`). */
export function userFields(data: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, last_modified: _lastModified, deleted: _deleted, ...rest } = data;
  return rest;
}

/** §5.2: a client-supplied `last_modified` counts only when it is an integer. */
export function suppliedTimestamp(data: Record<string, unknown> | undefined): number | undefined {
  const value = data?.last_modified;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

export interface PatchResult {
  data: Record<string, unknown>;
  /** Permission changes: a list replaces, null clears; absent names untouched. */
  permissions: Permissions | undefined;
  /** For JSON-Patch on permissions: the full new ACL. */
  replacePermissions: Permissions | undefined;
  /** The data fields the client sent (for Response-Behavior light/diff). */
  sentData: Record<string, unknown>;
}

/** Bounds of a PATCH (settings `max_json_patch_operations`, `max_json_depth`, `max_json_keys`). */
export interface PatchLimits extends JsonLimits {
  maxOperations: number;
}

/**
 * Applies a PATCH body of the given type to the current object and ACL (§4.4). The body was
 * bounded when parsed, but several PATCHes, or a JSON-Patch `copy`, can grow an object past the
 * limits: its data must stay as it could be written in one body.
 */
export function applyPatch(
  type: PatchType,
  body: unknown,
  current: Record<string, unknown>,
  acl: Permissions,
  def: ResourceDefinition,
  limits: PatchLimits,
): PatchResult {
  const result =
    type === 'json-patch' ? applyJsonPatch(body, current, acl, def, limits) : applyMerge(type, body, current, def);
  // Measured as the data of a body `{"data": …}`: level 2, after one key.
  const excess = measureJsonValue(result.data, limits, { depth: 2, keys: 1 });
  if (excess) throw invalidParameter('body', 'data', `the patched object would have ${describeExcess(excess, limits)}`);
  return result;
}

function applyMerge(
  type: 'json' | 'merge-patch',
  body: unknown,
  current: Record<string, unknown>,
  def: ResourceDefinition,
): PatchResult {
  const { data, permissions } = parseWriteBody(body, def, { patch: true });
  if (data === undefined && permissions === undefined) {
    throw invalidParameter('body', 'data', 'Provide at least one of data or permissions');
  }
  const sent = data ?? {};
  if (type === 'json') {
    // Shallow merge: top-level keys replaced wholesale, null stored as null.
    return { data: { ...current, ...userFields(sent) }, permissions, replacePermissions: undefined, sentData: sent };
  }
  const merged = mergePatch.apply(structuredClone(current), userFields(sent)) as Record<string, unknown>;
  return { data: merged, permissions, replacePermissions: undefined, sentData: sent };
}

/**
 * RFC 6902 on `{data, permissions}` (§4.4). Data operations go through fast-json-patch on
 * `{data}`. Permission operations are `add`/`remove` on `/permissions/<perm>/<principal>`, the
 * principal being the rest of the path, unescaped: kinto-http sends group principals such as
 * `/buckets/b/groups/g` verbatim there, so the path is not split on its later slashes.
 */
function applyJsonPatch(
  body: unknown,
  current: Record<string, unknown>,
  acl: Permissions,
  def: ResourceDefinition,
  limits: PatchLimits,
): PatchResult {
  if (!Array.isArray(body) || body.length === 0) {
    throw invalidParameter('body', '', 'JSON Patch must be a non-empty list of operations');
  }
  if (body.length > limits.maxOperations) {
    throw invalidParameter(
      'body',
      '',
      `JSON Patch has more than max_json_patch_operations (${limits.maxOperations}) operations`,
    );
  }
  const permissions = new Map(def.permissions.map((name) => [name, new Set(acl[name] ?? [])]));
  const dataOperations: Operation[] = [];
  for (const operation of body as unknown[]) {
    if (!isPlainObject(operation) || typeof operation.op !== 'string' || typeof operation.path !== 'string') {
      throw invalidParameter('body', '', 'JSON Patch operation failed: each operation needs "op" and "path"');
    }
    const { op, path } = operation;
    if (path === '/data' || path.startsWith('/data/')) {
      dataOperations.push(operation as unknown as Operation);
      continue;
    }
    const match = /^\/permissions\/([^/]+)\/(.+)$/.exec(path);
    const principals = match ? permissions.get(match[1] as string) : undefined;
    if (!match || !principals || (op !== 'add' && op !== 'remove')) {
      throw invalidParameter('body', '', `JSON Patch operation failed: unsupported operation ${op} on ${path}`);
    }
    const principal = (match[2] as string).replace(/~1/g, '/').replace(/~0/g, '~');
    if (op === 'add') principals.add(principal);
    else principals.delete(principal);
  }

  const document = { data: structuredClone(current) };
  // What `copy` operations duplicate: the one operation that multiplies the object's size (five
  // hundred copies of a 2,000-key subtree are a million keys), counted before it is made.
  let copied = 0;
  for (const [index, operation] of dataOperations.entries()) {
    if (operation.op === 'copy') {
      copied += countJsonKeys(valueAt(document, operation.from), limits.maxKeys);
      if (copied > limits.maxKeys) {
        throw invalidParameter('body', 'data', `the patched object would have ${describeExcess('keys', limits)}`);
      }
    }
    try {
      // Validated first (a failed `test` included); banPrototypeModifications keeps `__proto__` paths out.
      jsonPatch.applyOperation(document, operation, true, true, true, index);
    } catch (error) {
      throw invalidParameter('body', '', `JSON Patch operation failed: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  if (!isPlainObject(document.data))
    throw invalidParameter('body', 'data', 'JSON Patch operation failed: data must stay an object');
  const replacePermissions: Permissions = {};
  for (const [name, principals] of permissions) replacePermissions[name] = [...principals];
  return { data: document.data, permissions: undefined, replacePermissions, sentData: document.data };
}

/** The value at a JSON pointer, or undefined where there is none (the operation then fails as it should). */
function valueAt(document: unknown, pointer: unknown): unknown {
  if (typeof pointer !== 'string') return undefined;
  try {
    return jsonPatch.getValueByPointer(document, pointer);
  } catch {
    return undefined;
  }
}
