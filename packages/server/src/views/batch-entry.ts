/**
 * A batch's sub-requests and the entries of its answer (protocol-reference §8): the shapes the
 * modules of the batch share, and how an entry is written.
 */
import { ApiError } from '../errors.js';
import { isPlainObject } from '../engine/body.js';

export interface SubRequest {
  method: string;
  /** With its `/v1` prefix and its query string, as sent. */
  path: string;
  /** The sub-request's own headers, as sent. */
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

export interface SubResponse {
  status: number;
  /** The path answered (decoded, without its query string). */
  path: string;
  /** Canonical names (`ETag`, `Content-Length`), as clients read them from entries. */
  headers: Record<string, string>;
  /** The body as written into the batch's answer: JSON text, `""` for none. */
  bodyText: string;
  /** Set when its write is stamped at commit: makes it whole once the batch has committed. */
  settle?: (() => void) | undefined;
}

/** An entry of the batch's answer, as JSON.stringify would write it. */
export function entryJson(entry: SubResponse): string {
  const [head, body, tail] = entryParts(entry);
  return `${head}${body}${tail}`;
}

/** An entry's JSON in three parts, its body apart: written one after the other, the body is not copied. */
export function entryParts(entry: SubResponse): [string, string, string] {
  const path = JSON.stringify(entry.path);
  const head = `{"status":${entry.status},"path":${path},"headers":${JSON.stringify(entry.headers)}`;
  return [`${head},"body":`, entry.bodyText, '}'];
}

/** The error a failed sub-request (5xx, 409) makes of the whole batch: its status, errno and message. */
export function subResponseError(result: SubResponse): ApiError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(result.bodyText);
  } catch {
    parsed = null;
  }
  const body = isPlainObject(parsed) ? parsed : {};
  const headers: Record<string, string> = {};
  if (result.headers['Retry-After']) headers['Retry-After'] = result.headers['Retry-After'];
  return new ApiError(result.status, typeof body.errno === 'number' ? body.errno : 999, {
    ...(typeof body.message === 'string' ? { message: body.message } : {}),
    ...(typeof body.error === 'string' ? { error: body.error } : {}),
    details: body.details,
    headers,
  });
}

export function canonicalHeaders(headers: Record<string, string>): Record<string, string> {
  const named: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) named[canonicalHeader(name)] = value;
  return named;
}

/** `etag` → `ETag`, `last-modified` → `Last-Modified`, as clients read them from batch entries. */
function canonicalHeader(name: string): string {
  if (name === 'etag') return 'ETag';
  return name.replace(/(^|-)([a-z])/g, (_match, dash: string, letter: string) => dash + letter.toUpperCase());
}

/** The path of an entry: decoded, without its query string. */
export function entryPath(path: string): string {
  const bare = path.split('?')[0] ?? path;
  try {
    return decodeURIComponent(bare);
  } catch {
    return bare;
  }
}
