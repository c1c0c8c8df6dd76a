/**
 * A batch's sub-requests answered straight by the resource engine, without a trip through
 * light-my-request and the router (about 0.3 ms of server CPU each): the common case of a
 * batch, object reads and writes and creations on a resource with the default access policy,
 * sent with the batch's own credentials. The entry is the one the router would give — same
 * endpoint function, same checks, errors and events, same headers — and anything this module
 * cannot answer the same way (another route, a query string, other headers, an unusual path, a
 * body past the limits, per-request logs or metrics) is left to the router (`null`).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isServerFault, toApiError } from '../http/error-handler.js';
import { responseHeaders } from '../http/headers.js';
import { measureJsonValue } from '../http/json-limits.js';
import { baseUrl } from '../http/base-url.js';
import { JsonText } from '../engine/endpoints/answer.js';
import type { ResponseHead } from '../engine/object-responses.js';
import type { RouteParams } from '../engine/objects.js';
import { EngineRequest, engineHeaders } from '../engine/request.js';
import { readQuery } from '../engine/request-input.js';
import { engineRoutesOf } from '../engine/route-table.js';
import type { UnitOfWork } from '../unit-of-work.js';

/** Headers a sub-request may set and still be answered here: none changes who the caller is, nor the content. */
const DIRECT_HEADERS: ReadonlySet<string> = new Set(['if-match', 'if-none-match', 'response-behavior']);
/** Paths the router reaches without decoding, redirecting or refusing them (NUL, trailing slashes). */
const PLAIN_PATH = /^(\/[A-Za-z0-9_-]+)+$/;
const REQUEST_ID_HEADER = 'x-request-id';

export interface DirectSubRequest {
  method: string;
  /** With its `/v1` prefix. */
  path: string;
  /** The sub-request's own headers, as sent. */
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

export interface DirectResponse {
  status: number;
  /** Lower-case names, as an injected response has them. */
  headers: Record<string, string>;
  body: unknown;
  /** The body as JSON text ('' for none), written when answered: later sub-requests may change what it shows. */
  bodyText: string;
}

/** The engine's endpoint the router would run for `method path`, when this module may run it. */
function resourceRoute(app: FastifyInstance, method: string, path: string) {
  const route = engineRoutesOf(app).find(app, method, path);
  if (route?.kind !== 'endpoint') return null;
  // The default policy answers from the identity and the ACLs alone; a resource with its own
  // (accounts, the history) may look at more of the request.
  if (route.model.def.access !== undefined) return null;
  const isObject = route.params[`${route.model.def.name}_id`] !== undefined;
  if (!isObject && method !== 'POST') return null;
  return route;
}

function debugLogged(request: FastifyRequest): boolean {
  const log = request.log as { isLevelEnabled?: (level: string) => boolean };
  return log.isLevelEnabled?.('debug') ?? false;
}

/** A status and headers collected as Fastify's reply keeps them: lower-case names, first position kept. */
class EntryHead implements ResponseHead {
  status = 200;
  readonly headers = new Map<string, [string, string]>();

  code(status: number): this {
    this.status = status;
    return this;
  }

  header(name: string, value: string): this {
    this.headers.set(name.toLowerCase(), [name, value]);
    return this;
  }
}

/** The sub-request as the engine sees a request: its own, with the batch's caller, server and client address. */
function subRequest(
  batch: FastifyRequest,
  sub: DirectSubRequest,
  headers: Record<string, string>,
  params: RouteParams,
  work: UnitOfWork,
): EngineRequest {
  const { settings } = batch.server.services;
  return new EngineRequest({
    method: sub.method,
    path: sub.path,
    params,
    query: readQuery(''),
    headers: engineHeaders(headers),
    body: sub.body,
    identity: batch.identity,
    settings,
    work,
    id: headers[REQUEST_ID_HEADER] || randomUUID(),
    log: batch.log,
    ip: batch.ip,
    origin: () => baseUrl(settings, batch),
  });
}

/**
 * Answers `sub` in `work` through the engine's endpoint, or null when the router must (see
 * above). `headers` are those an injected sub-request would carry (the batch's and its own).
 */
export async function answerDirectly(
  app: FastifyInstance,
  batch: FastifyRequest,
  work: UnitOfWork,
  sub: DirectSubRequest,
  headers: Record<string, string>,
): Promise<DirectResponse | null> {
  const { settings, metrics } = app.services;
  if (metrics || debugLogged(batch)) return null; // each sub-request is observed and logged by the router
  if (!PLAIN_PATH.test(sub.path)) return null;
  if (!Object.keys(sub.headers).every((name) => DIRECT_HEADERS.has(name.toLowerCase()))) return null;
  if (sub.body !== undefined) {
    // The limits the body parser applies, and the body limit (a merged body may exceed them).
    const limits = { maxDepth: settings.max_json_depth, maxKeys: settings.max_json_keys };
    if (measureJsonValue(sub.body, limits) || Buffer.byteLength(JSON.stringify(sub.body)) > settings.max_body_bytes)
      return null;
  }
  const route = resourceRoute(app, sub.method, sub.path);
  if (!route) return null;

  const request = subRequest(batch, sub, headers, route.params, work);
  const head = new EntryHead();
  head.header('X-Request-Id', request.id);
  let body: unknown;
  try {
    body = await route.endpoint(route.model, request, head);
  } catch (error) {
    const apiError = toApiError(error, settings);
    if (isServerFault(apiError.status)) batch.log.error({ err: error }, 'request failed');
    const errorBody = apiError.toBody();
    if (apiError.status === 500) errorBody.info = settings.error_info_link;
    for (const [name, value] of Object.entries(apiError.headers)) head.header(name, value);
    head.code(apiError.status);
    body = errorBody;
  }
  const text = body === null ? '' : body instanceof JsonText ? body.text : JSON.stringify(body);
  if (body instanceof JsonText) body = JSON.parse(body.text) as unknown;
  if (body !== null) head.header('Content-Type', 'application/json; charset=utf-8');
  for (const [name, value] of responseHeaders(settings, sub.method, headers.origin)) head.header(name, value);
  if (body !== null || head.status !== 304) head.header('Content-Length', String(Buffer.byteLength(text)));
  head.header('Date', new Date().toUTCString());
  head.header('Connection', 'keep-alive');
  const entryHeaders: Record<string, string> = {};
  for (const [name, [, value]] of head.headers) entryHeaders[name] = value;
  return {
    status: head.status,
    headers: entryHeaders,
    body: body === null ? '' : body,
    bodyText: body === null ? '""' : text,
  };
}
