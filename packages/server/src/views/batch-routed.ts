/**
 * A batch's sub-request to a route outside the resource engine (`GET /`, the change monitor,
 * `/permissions`, attachments, the accounts' validation, a path the router redirects or does not
 * know): dispatched through the very same routes and hooks as a request from the network
 * (http/internal-requests.ts), in the batch's unit of work, from the batch client's address. The
 * engine's own endpoints, and `/buckets/default`'s, are answered in-process instead
 * (batch-direct.ts); docs/internals.md lists what still comes here, and why.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requestHost } from '../http/base-url.js';
import { dispatchInternal } from '../http/internal-requests.js';
import type { UnitOfWork } from '../unit-of-work.js';
import { canonicalHeaders, entryPath, type SubRequest, type SubResponse } from './batch-entry.js';

/**
 * The caller's headers (credentials included) for an internal sub-request, minus the body's.
 * Its Host is the one the caller's URLs use (base-url.ts): an injected request's is trusted.
 */
export function inheritedHeaders(request: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === 'content-length' || name === 'content-type' || name === 'transfer-encoding')
      continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return withHostOf(request, headers);
}

/** `headers` with the Host of the caller's URLs (a sub-request's own Host would reach its URLs). */
export function withHostOf(request: FastifyRequest, headers: Record<string, string>): Record<string, string> {
  delete headers['x-forwarded-host'];
  headers.host = requestHost(request.server.services.settings, request);
  return headers;
}

/**
 * The sub-request answered by the router; a redirect (a trailing slash) is followed once,
 * keeping method, headers and body.
 */
export async function answerByRouter(
  app: FastifyInstance,
  batch: FastifyRequest,
  work: UnitOfWork,
  sub: SubRequest,
  headers: Record<string, string>,
): Promise<SubResponse> {
  const payload = sub.body ? { payload: JSON.stringify(sub.body) } : {};
  // From the batch's client: its logins count against that address.
  const send = (url: string) =>
    dispatchInternal(app, work, { method: sub.method, url, headers, remoteAddress: batch.ip, ...payload });
  let path = sub.path;
  let response = await send(path);
  if (response.statusCode === 307 && typeof response.headers.location === 'string') {
    const location = new URL(response.headers.location, 'http://localhost');
    path = location.pathname + location.search;
    response = await send(path);
  }
  const responseHeaders: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) responseHeaders[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return {
    status: response.statusCode,
    path: entryPath(path),
    headers: canonicalHeaders(responseHeaders),
    bodyText: bodyTextOf(sub.method, response.body),
  };
}

/** The body as an entry carries it: JSON as answered, other text as a JSON string, none as `""`. */
function bodyTextOf(method: string, body: string): string {
  if (method === 'HEAD' || body === '') return '""';
  try {
    // Our routes answer compact JSON (JSON.stringify's): it goes into the entry as it is, once known to parse.
    JSON.parse(body);
    return body;
  } catch {
    return JSON.stringify(body);
  }
}
