/**
 * Protocol rules of the object endpoints: timestamp headers, the client-timestamp rule, the
 * body-id check, the PATCH content types and `Response-Behavior`, and the permissions a PATCH
 * merges.
 */
import { isDeepStrictEqual } from 'node:util';
import { invalidParameter } from '../errors.js';
import type { Permissions, StoredObject, WriteOptions } from '../storage/types.js';
import type { PatchType } from './definition.js';
import type { EngineHeaders } from './request.js';

/** What an endpoint sets besides its body: a FastifyReply, or a batch entry being written. */
export interface ResponseHead {
  code(status: number): unknown;
  header(name: string, value: string): unknown;
  /** Work to do once the change is stamped, before the answer is written (a batch's entries). */
  later?(settle: () => void): void;
}

export function setTimestampHeaders(reply: ResponseHead, timestamp: number): void {
  reply.header('ETag', `"${timestamp}"`);
  reply.header('Last-Modified', httpDate(timestamp));
}

/** HTTP dates of recent timestamps: a poll answers the same one again and again (a Date each: ~1% of its CPU). */
const HTTP_DATES = new Map<number, string>();
const HTTP_DATES_KEPT = 1_024;

function httpDate(timestamp: number): string {
  let date = HTTP_DATES.get(timestamp);
  if (date === undefined) {
    date = new Date(timestamp).toUTCString();
    if (HTTP_DATES.size >= HTTP_DATES_KEPT) HTTP_DATES.clear();
    HTTP_DATES.set(timestamp, date);
  }
  return date;
}

/**
 * The timestamp headers of what a write stored. A batch's write stamped at commit has no
 * timestamp yet: its headers are set again once it has one (their place in the head kept).
 */
export function setStoredTimestampHeaders(reply: ResponseHead, stored: { last_modified: number }): void {
  setTimestampHeaders(reply, stored.last_modified);
  if (Number.isNaN(stored.last_modified) && reply.later)
    reply.later(() => setTimestampHeaders(reply, stored.last_modified));
}

/** §5.2: a supplied timestamp counts on creation, or on update when newer than the current one. */
export function writeOptions(supplied: number | undefined, existing: StoredObject | null): WriteOptions {
  if (supplied === undefined || (existing && supplied <= existing.last_modified)) return {};
  return { lastModified: supplied };
}

export function assertBodyMatchesId(data: Record<string, unknown> | undefined, id: string): void {
  if (data && data.id !== undefined && data.id !== id) {
    throw invalidParameter('body', 'id', 'Object id does not match existing object');
  }
}

/** The media type of each PATCH flavour (§4.4). */
export const PATCH_MEDIA_TYPES: Record<PatchType, string> = {
  json: 'application/json',
  'merge-patch': 'application/merge-patch+json',
  'json-patch': 'application/json-patch+json',
};

/** The PATCH flavour named by `Content-Type` (content negotiation has refused the others). */
export function patchType(headers: EngineHeaders): PatchType {
  const type = (headers['content-type'] ?? 'application/json').split(';')[0]?.trim().toLowerCase();
  if (type === PATCH_MEDIA_TYPES['merge-patch']) return 'merge-patch';
  if (type === PATCH_MEDIA_TYPES['json-patch']) return 'json-patch';
  return 'json';
}

export type ResponseBehavior = 'full' | 'light' | 'diff';

/** The `Response-Behavior` header of a PATCH (§4.5); another value is a 400. */
export function responseBehavior(headers: EngineHeaders): ResponseBehavior {
  const behavior = String(headers['response-behavior'] ?? 'full').toLowerCase();
  if (behavior !== 'full' && behavior !== 'light' && behavior !== 'diff') {
    throw invalidParameter(
      'header',
      'Response-Behavior',
      `${JSON.stringify(behavior)} is not one of full, light, diff`,
    );
  }
  return behavior;
}

/**
 * The `data` a PATCH answers with (§4.5): everything (`full`); the sent fields whose value
 * changed (`light`); the sent fields stored differently from what was sent (`diff`).
 */
export function patchResponseData(
  behavior: ResponseBehavior,
  sent: Record<string, unknown>,
  stored: Record<string, unknown>,
  existing: Record<string, unknown>,
): Record<string, unknown> {
  if (behavior === 'full') return stored;
  const shown: Record<string, unknown> = {};
  for (const key of Object.keys(sent)) {
    if (!Object.hasOwn(stored, key)) continue;
    const reference = behavior === 'light' ? existing[key] : sent[key];
    if (!isDeepStrictEqual(stored[key], reference)) shown[key] = stored[key];
  }
  return shown;
}

/**
 * The permissions sent with a PATCH, merged into the current ones: `null` clears a permission only
 * with merge-patch (§4.4).
 */
export function mergePermissions(
  current: Permissions,
  sent: Record<string, string[] | null>,
  type: PatchType,
): Permissions {
  const acl = { ...current };
  for (const [name, principals] of Object.entries(sent)) {
    if (principals !== null) acl[name] = principals;
    else if (type === 'merge-patch') delete acl[name];
  }
  return acl;
}
