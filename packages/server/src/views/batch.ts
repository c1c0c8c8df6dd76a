/**
 * `POST /v1/batch` (protocol-reference §8). Sub-requests run in order, inside ONE unit of work:
 * one transaction. Those to the resource engine's endpoints are answered by them directly
 * (batch-direct.ts); the others go through the same routes as any request (http/internal-requests.ts). 4xx answers are just entries;
 * a 5xx — or a 409 integrity conflict — rolls the whole batch back and becomes the answer, so a
 * batch is never half-written. (Kinto keeps going after a 409 with an aborted transaction;
 * clients cannot rely on that state, so we refuse it whole.)
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ERRNO, invalidParameter } from '../errors.js';
import { requestHost } from '../http/base-url.js';
import { dispatchInternal } from '../http/internal-requests.js';
import { isPlainObject, rejectUnknownKeys } from '../engine/body.js';
import { registerMethods } from '../engine/routes.js';
import { UnitOfWork } from '../unit-of-work.js';
import { answerDirectly } from './batch-direct.js';

const BATCH_PATH = '/v1/batch';
const METHODS = new Set(['GET', 'HEAD', 'DELETE', 'TRACE', 'POST', 'PUT', 'PATCH']);
const BATCH_KEYS: ReadonlySet<string> = new Set(['defaults', 'requests']);
const REQUEST_KEYS: ReadonlySet<string> = new Set(['method', 'path', 'headers', 'body']);

interface SubRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

interface SubResponse {
  status: number;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  /** The body as written into the batch's answer (JSON). */
  bodyText: string;
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

function parseBatch(body: unknown, maxRequests: number | null): SubRequest[] {
  if (!isPlainObject(body)) throw invalidParameter('body', '', 'Should be a JSON object');
  rejectUnknownKeys(body, BATCH_KEYS, '');
  const { defaults = {}, requests } = body;
  if (!isPlainObject(defaults)) throw invalidParameter('body', 'defaults', 'defaults must be an object');
  if (!Array.isArray(requests)) throw invalidParameter('body', 'requests', 'Required');
  if (maxRequests && requests.length > maxRequests) {
    throw invalidParameter('body', 'requests', `Number of requests is limited to ${maxRequests}`);
  }
  rejectUnknownKeys(defaults, REQUEST_KEYS, 'defaults');

  return requests.map((raw: unknown, index: number) => {
    const name = `requests.${index}`;
    if (!isPlainObject(raw)) throw invalidParameter('body', name, 'Should be a JSON object');
    rejectUnknownKeys(raw, REQUEST_KEYS, name);
    const request = mergeDefaults(defaults, raw);
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
    const subBody = request.body;
    if (subBody !== undefined && !isPlainObject(subBody))
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
      body: subBody && Object.keys(subBody).length > 0 ? subBody : undefined,
    };
  });
}

function recursiveBatch(): ApiError {
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

function withHostOf(request: FastifyRequest, headers: Record<string, string>): Record<string, string> {
  delete headers['x-forwarded-host'];
  headers.host = requestHost(request.server.services.settings, request);
  return headers;
}

export function registerBatch(app: FastifyInstance): void {
  const { settings, storage, events } = app.services;

  async function execute(request: FastifyRequest, sub: SubRequest, work: UnitOfWork): Promise<SubResponse> {
    const headers: Record<string, string> = { ...inheritedHeaders(request) };
    for (const [name, value] of Object.entries(sub.headers)) headers[name.toLowerCase()] = value;
    withHostOf(request, headers); // a sub-request's own Host would reach its URLs
    if (sub.body !== undefined) headers['content-type'] = 'application/json; charset=utf-8';
    const direct = await answerDirectly(app, request, work, sub, headers);
    if (direct)
      return {
        status: direct.status,
        path: sub.path,
        headers: canonicalHeaders(direct.headers),
        body: direct.body,
        bodyText: direct.bodyText,
      };
    const payload = sub.body ? { payload: JSON.stringify(sub.body) } : {};
    // From the batch's client: its logins count against that address.
    const send = (url: string) =>
      dispatchInternal(app, work, { method: sub.method, url, headers, remoteAddress: request.ip, ...payload });
    let path = sub.path;
    let response = await send(path);
    // A redirect (e.g. trailing slash) is followed once, keeping method, headers and body.
    if (response.statusCode === 307 && typeof response.headers.location === 'string') {
      const location = new URL(response.headers.location, 'http://localhost');
      path = location.pathname + location.search;
      response = await send(path);
    }
    const responseHeaders: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      if (value !== undefined) responseHeaders[name] = Array.isArray(value) ? value.join(', ') : String(value);
    }
    let body: unknown = response.body;
    if (sub.method === 'HEAD' || response.body === '') body = '';
    else {
      try {
        body = JSON.parse(response.body);
      } catch {
        body = response.body;
      }
    }
    return {
      status: response.statusCode,
      path: safeDecode(path.split('?')[0] ?? path),
      headers: canonicalHeaders(responseHeaders),
      body,
      bodyText: JSON.stringify(body),
    };
  }

  registerMethods(app, '/v1/batch', {
    POST: async (request: FastifyRequest, reply: FastifyReply) => {
      // Whatever path led a sub-request here, a batch never runs inside a batch: it would wait
      // on its own transaction (the embedded store) or take one more connection per level.
      if (request.work.batch) throw recursiveBatch();
      const requests = parseBatch(request.body, settings.batch_max_requests);
      const deadline = new BatchDeadline(reply, settings.batch_timeout_seconds, settings.retry_after_seconds);
      try {
        // One unit of work for the whole batch: one transaction, and one request for events
        // (§10.4), grouped across sub-requests, delivered to in-transaction listeners before the
        // batch commits, to the others after.
        const work = new UnitOfWork(storage, events, true);
        const responses = await work.run('write', async () => {
          const results: SubResponse[] = [];
          for (const sub of requests) {
            await deadline.check();
            const result = await execute(request, sub, work);
            if (result.status >= 500 || result.status === 409) throw subResponseError(result);
            results.push(result);
          }
          await deadline.check(); // nothing is committed for a client gone or past the budget
          return results;
        });
        // Written by hand: the entries' bodies are JSON already (batch-direct.ts writes them when answered).
        reply.type('application/json; charset=utf-8');
        return `{"responses":[${responses.map(entryJson).join(',')}]}`;
      } finally {
        deadline.clear();
      }
    },
  });
}

/**
 * When a batch must stop: its client went away (nobody would read the answer, and its locks
 * would be held for nothing) or it ran past `batch_timeout_seconds`. Checked before each
 * sub-request and before commit; throwing rolls the transaction back.
 */
const YIELD_EVERY_MS = 5;

class BatchDeadline {
  readonly #expiresAt: number;
  readonly #seconds: number;
  readonly #retryAfter: number;
  readonly #reply: FastifyReply;
  #clientGone = false;
  #lastYield = performance.now();
  readonly #onClose = () => {
    if (!this.#reply.raw.writableFinished) this.#clientGone = true;
  };

  constructor(reply: FastifyReply, seconds: number, retryAfter: number) {
    this.#reply = reply;
    this.#seconds = seconds;
    this.#retryAfter = retryAfter;
    this.#expiresAt = performance.now() + seconds * 1000;
    reply.raw.on('close', this.#onClose);
  }

  /**
   * Throws when the batch must stop. An in-process store answers without ever leaving the
   * microtask queue, so the batch first lets the event loop poll I/O now and then: that is how
   * a closed connection is noticed, and how other requests keep being served meanwhile.
   */
  async check(): Promise<void> {
    if (performance.now() - this.#lastYield > YIELD_EVERY_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.#lastYield = performance.now();
    }
    if (this.#clientGone) {
      // Never sent: there is nobody to send it to. Status 499 as proxies log a client gone.
      throw new ApiError(499, ERRNO.UNDEFINED, {
        message: 'The client closed the connection: the batch was rolled back.',
      });
    }
    if (performance.now() > this.#expiresAt) {
      throw new ApiError(503, ERRNO.BACKEND, {
        message: `The batch ran longer than batch_timeout_seconds (${this.#seconds} s) and was rolled back: send fewer requests per batch.`,
        headers: { 'Retry-After': String(this.#retryAfter) },
      });
    }
  }

  clear(): void {
    this.#reply.raw.off('close', this.#onClose);
  }
}

function subResponseError(result: SubResponse): ApiError {
  const body = isPlainObject(result.body) ? result.body : {};
  const headers: Record<string, string> = {};
  if (result.headers['Retry-After']) headers['Retry-After'] = result.headers['Retry-After'];
  return new ApiError(result.status, typeof body.errno === 'number' ? body.errno : 999, {
    ...(typeof body.message === 'string' ? { message: body.message } : {}),
    ...(typeof body.error === 'string' ? { error: body.error } : {}),
    details: body.details,
    headers,
  });
}

function safeDecode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** An entry of the batch's answer, as JSON.stringify would write it. */
function entryJson(entry: SubResponse): string {
  return `{"status":${entry.status},"path":${JSON.stringify(entry.path)},"headers":${JSON.stringify(entry.headers)},"body":${entry.bodyText}}`;
}

function canonicalHeaders(headers: Record<string, string>): Record<string, string> {
  const named: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) named[canonicalHeader(name)] = value;
  return named;
}

/** `etag` → `ETag`, `last-modified` → `Last-Modified`, as clients read them from batch entries. */
function canonicalHeader(name: string): string {
  if (name === 'etag') return 'ETag';
  return name.replace(/(^|-)([a-z])/g, (_match, dash: string, letter: string) => dash + letter.toUpperCase());
}
