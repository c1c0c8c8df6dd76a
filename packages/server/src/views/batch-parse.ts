/**
 * A batch's body read into its sub-requests (protocol-reference §8.1): `defaults` merged under
 * each request, methods and paths checked, the batch endpoint itself refused. What `defaults`
 * adds is bounded as a body is: each merged body by `max_body_bytes`, `max_json_depth` and
 * `max_json_keys`, and the copies of `defaults.body` together by `max_body_bytes` (one body
 * must not become 25 bodies of that size).
 */
import { ApiError, ERRNO, invalidParameter } from '../errors.js';
import { isPlainObject, rejectUnknownKeys } from '../engine/body.js';
import { describeExcess, type JsonLimits, measureJsonValue } from '../http/json-limits.js';
import type { SubRequest } from './batch-entry.js';

export const BATCH_PATH = '/v1/batch';
const METHODS = new Set(['GET', 'HEAD', 'DELETE', 'TRACE', 'POST', 'PUT', 'PATCH']);
const BATCH_KEYS: ReadonlySet<string> = new Set(['defaults', 'requests']);
const REQUEST_KEYS: ReadonlySet<string> = new Set(['method', 'path', 'headers', 'body']);

export interface BatchLimits {
  maxRequests: number | null;
  maxBodyBytes: number;
  json: JsonLimits;
}

/** Deep-merges `defaults` under `request`: what the request sets wins, objects merge key by key. */
function mergeDefaults(defaults: Record<string, unknown>, request: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...defaults };
  for (const [key, value] of Object.entries(request)) {
    const base = merged[key];
    merged[key] = isPlainObject(base) && isPlainObject(value) ? mergeDefaults(base, value) : value;
  }
  return merged;
}

export function parseBatch(body: unknown, limits: BatchLimits): SubRequest[] {
  if (!isPlainObject(body)) throw invalidParameter('body', '', 'Should be a JSON object');
  rejectUnknownKeys(body, BATCH_KEYS, '');
  const { defaults = {}, requests } = body;
  if (!isPlainObject(defaults)) throw invalidParameter('body', 'defaults', 'defaults must be an object');
  if (!Array.isArray(requests)) throw invalidParameter('body', 'requests', 'Required');
  if (limits.maxRequests && requests.length > limits.maxRequests) {
    throw invalidParameter('body', 'requests', `Number of requests is limited to ${limits.maxRequests}`);
  }
  rejectUnknownKeys(defaults, REQUEST_KEYS, 'defaults');
  const defaultsBody = isPlainObject(defaults.body) ? defaults.body : null;
  const defaultsBytes = defaultsBody ? Buffer.byteLength(JSON.stringify(defaultsBody)) : 0;
  if (defaultsBytes * requests.length > limits.maxBodyBytes) {
    throw bodyTooLarge(
      `defaults.body, merged into ${requests.length} requests, makes more than max_body_bytes ` +
        `(${limits.maxBodyBytes} bytes)`,
    );
  }
  return requests.map((raw: unknown, index: number) => {
    const name = `requests.${index}`;
    if (!isPlainObject(raw)) throw invalidParameter('body', name, 'Should be a JSON object');
    rejectUnknownKeys(raw, REQUEST_KEYS, name);
    const request = mergeDefaults(defaults, raw);
    if (defaultsBody && isPlainObject(raw.body)) checkMergedBody(request.body, raw.body, defaultsBytes, name, limits);
    return subRequestOf(request, name);
  });
}

/** A body `defaults.body` was merged into: within the limits of a body sent whole. */
function checkMergedBody(
  merged: unknown,
  own: Record<string, unknown>,
  defaultsBytes: number,
  name: string,
  limits: BatchLimits,
): void {
  // At most the two together: the merged body is no larger than its parts.
  if (defaultsBytes + Buffer.byteLength(JSON.stringify(own)) > limits.maxBodyBytes)
    throw bodyTooLarge(`${name}.body with defaults.body is larger than max_body_bytes (${limits.maxBodyBytes} bytes)`);
  const excess = measureJsonValue(merged, limits.json);
  if (excess) throw invalidParameter('body', `${name}.body`, `Invalid JSON: ${describeExcess(excess, limits.json)}`);
}

function bodyTooLarge(message: string): ApiError {
  return new ApiError(413, ERRNO.REQUEST_TOO_LARGE, { message: `Request body is too large: ${message}.` });
}

function subRequestOf(request: Record<string, unknown>, name: string): SubRequest {
  const method = request.method ?? 'GET';
  if (typeof method !== 'string' || !METHODS.has(method)) {
    throw invalidParameter(
      'body',
      `${name}.method`,
      `${JSON.stringify(method)} is not one of ${[...METHODS].join(', ')}`,
    );
  }
  const path = request.path;
  if (typeof path !== 'string' || !path.startsWith('/'))
    throw invalidParameter('body', `${name}.path`, 'Required: a path starting with /');
  const headers = request.headers ?? {};
  if (!isPlainObject(headers) || !Object.values(headers).every((value) => typeof value === 'string')) {
    throw invalidParameter('body', `${name}.headers`, 'headers must be an object of strings');
  }
  const body = request.body;
  if (body !== undefined && !isPlainObject(body))
    throw invalidParameter('body', `${name}.body`, 'body must be a JSON object');
  const prefixed = /^\/v1(\/|\?|$)/.test(path) ? path : `/v1${path}`;
  // Only the batch endpoint itself is refused, however the path is written. (Kinto refuses
  // any path *containing* "/batch", e.g. a collection named "batched" — a bug we do not copy.)
  if (routedPath(prefixed) === BATCH_PATH) throw recursiveBatch();
  return {
    method,
    path: prefixed,
    headers: headers as Record<string, string>,
    // An empty body counts as no body (§8.1).
    body: body && Object.keys(body).length > 0 ? body : undefined,
  };
}

export function recursiveBatch(): ApiError {
  return invalidParameter('body', 'requests', 'Recursive call on /batch endpoint is forbidden.');
}

/**
 * The route `path` reaches, as the router and the redirects see it: resolved like a URL (dot
 * segments, no fragment), percent-decoded, duplicate and trailing slashes dropped (the
 * not-found handler redirects those, and a batch follows one redirect).
 */
export function routedPath(path: string): string {
  const { pathname } = new URL(path, 'http://batch.invalid');
  let decoded = pathname;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    // Malformed escapes: the router answers 400 for such a path, never a route.
  }
  return decoded.replace(/\/{2,}/g, '/').replace(/(.)\/+$/, '$1');
}
