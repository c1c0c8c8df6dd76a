/**
 * A batch's sub-requests to the resource engine's endpoints, answered by them in-process: the
 * router finds the route (engine/route-table.ts), then the sub-request goes through what every
 * request goes through on its way there, in the same order — the service state (410, readonly),
 * the caller (the batch's, or its own credentials), content negotiation, the input limits of its
 * path and query string (engine/request-input.ts) — and is answered by the same endpoint
 * function, with the same errors, events and headers, logged and counted as a request of its
 * own; a sub-request under `/buckets/default` first passes the default bucket's checks and
 * implicit creations. What is not an endpoint of the engine (another route, a path the router
 * redirects or does not know) is the router's (`null`: batch-routed.ts).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyRequest, HTTPMethods } from 'fastify';
import { authenticate } from '../auth/authenticate.js';
import type { Identity } from '../auth/policy.js';
import { ApiError, ERRNO, unknownUrl } from '../errors.js';
import { JsonText } from '../engine/endpoints/answer.js';
import { CollectedHead, runRoute } from '../engine/in-process-call.js';
import { readInput } from '../engine/request-input.js';
import { type EngineRoute, engineRoutesOf } from '../engine/route-table.js';
import { baseUrl } from '../http/base-url.js';
import { checkNegotiation } from '../http/content.js';
import { isServerFault, toApiError } from '../http/error-handler.js';
import { checkServiceState, responseHeaders } from '../http/headers.js';
import { splitUrl } from '../http/url.js';
import { logRequestLine, REQUEST_ID_HEADER } from '../observability/request-log.js';
import type { UnitOfWork } from '../unit-of-work.js';
import { canonicalHeaders, entryPath, type SubRequest, type SubResponse } from './batch-entry.js';

const PERSONAL_PREFIX = '/v1/buckets/default';

/** One sub-request on its way to its endpoint. */
interface SubCall {
  app: FastifyInstance;
  batch: FastifyRequest;
  work: UnitOfWork;
  sub: SubRequest;
  /** Its headers as a request of its own carries them: the batch's, then its own. */
  headers: Record<string, string>;
  path: string;
  query: string;
  id: string;
  identity: Identity;
}

/**
 * Answers `sub` in `work` through the engine's endpoint, or null when it is the router's (see
 * above). `headers` are the sub-request's as a request of its own carries them.
 */
export async function answerDirectly(
  app: FastifyInstance,
  batch: FastifyRequest,
  work: UnitOfWork,
  sub: SubRequest,
  headers: Record<string, string>,
): Promise<SubResponse | null> {
  const started = performance.now();
  const { path, query } = splitUrl(sub.path);
  if (path.includes('#')) return null;
  const route = engineRoutesOf(app).find(app, sub.method, path) ?? personalRoute(app, sub.method, path);
  if (!route) return null;
  const id = headers[REQUEST_ID_HEADER] || randomUUID();
  const call: SubCall = { app, batch, work, sub, headers, path, query, id, identity: batch.identity };
  const head = new CollectedHead();
  head.header('X-Request-Id', id);
  let body: unknown;
  try {
    body = await runEndpoint(call, route, head);
  } catch (error) {
    body = errorBody(call, error, head);
  }
  const entry = entryOf(call, head, body);
  const seconds = (performance.now() - started) / 1000;
  const { method } = sub;
  const { status } = head;
  logRequestLine(batch.log, {
    method,
    route: route.pattern,
    status,
    ms: seconds * 1000,
    userId: call.identity.userId,
    quiet: true,
  });
  app.services.metrics?.count({
    method,
    route: route.pattern,
    status,
    seconds,
    url: sub.path,
    authorization: undefined,
    batched: true,
  });
  return entry;
}

/** The checks of every request, in their order, then the endpoint. */
async function runEndpoint(call: SubCall, route: DirectRoute, head: CollectedHead): Promise<unknown> {
  const { app, batch, work, sub, headers } = call;
  const { settings, policies } = app.services;
  checkServiceState(settings, sub.method);
  // NUL can be neither stored nor part of an id (as app.ts refuses it for every request).
  if (/%00/.test(call.path))
    throw new ApiError(400, ERRNO.INVALID_PARAMETERS, { error: 'Bad Request', message: 'Invalid URL path.' });
  // Its own credentials, checked as any request's are, from the batch client's address.
  if (Object.keys(sub.headers).some((name) => name.toLowerCase() === 'authorization'))
    call.identity = await authenticate(policies, { headers, ip: batch.ip, read: work.read.bind(work) });
  checkNegotiation(sub.method, headers.accept, headers['content-type'], sub.body !== undefined);
  const caller = {
    identity: call.identity,
    work,
    id: call.id,
    log: batch.log,
    ip: batch.ip,
    origin: () => baseUrl(settings, batch),
  };
  const engineCall = { method: sub.method, path: call.path, query: call.query, headers, body: sub.body };
  // Its entry is written once the batch has committed: its writes may be stamped at commit.
  if (route.kind !== 'personal') return work.answeringAfterCommit(() => runRoute(app, route, caller, engineCall, head));
  // `/buckets/default/…`: its own input limits first (the router's hook reads them before the
  // view), then the view's checks and implicit creations, then the engine on the real path.
  readInput(call.path, call.query, settings);
  const source = { params: route.params, url: sub.path, identity: call.identity };
  const real = await app.services.personalCall!({ identity: call.identity, work, source }, engineCall);
  const found = engineRoutesOf(app).find(app, real.method, real.path);
  if (!found) throw unknownUrl();
  return runRoute(app, found, caller, real, head);
}

/** A route the batch answers in process: the engine's, or the default bucket's alias of them. */
type DirectRoute = EngineRoute | { kind: 'personal'; pattern: string; params: unknown };

/**
 * The default bucket's route, when the router gives it `path` (its only routes with no parameter
 * but a wildcard); a trailing slash is the router's, which redirects it.
 */
function personalRoute(app: FastifyInstance, method: string, path: string): DirectRoute | null {
  if (!app.services.personalCall || path.endsWith('/')) return null;
  if (path !== PERSONAL_PREFIX && !path.startsWith(`${PERSONAL_PREFIX}/`)) return null;
  const found = app.findRoute({ method: method as HTTPMethods, url: path });
  if (!found) return null;
  const names = Object.keys(found.params as object);
  if (names.length > 1 || (names.length === 1 && names[0] !== '*')) return null;
  return { kind: 'personal', pattern: names.length ? `${PERSONAL_PREFIX}/*` : PERSONAL_PREFIX, params: found.params };
}

/** The error's body and head, as the error handler answers it (http/error-handler.ts). */
function errorBody(call: SubCall, error: unknown, head: CollectedHead): unknown {
  const { settings } = call.app.services;
  const apiError = toApiError(error, settings);
  if (isServerFault(apiError.status)) call.batch.log.error({ err: error }, 'request failed');
  const body = apiError.toBody();
  if (apiError.status === 500) body.info = settings.error_info_link;
  for (const [name, value] of Object.entries(apiError.headers)) head.header(name, value);
  head.code(apiError.status);
  return body;
}

/** The entry: the answer's body as JSON text, with the headers the router's answer would carry. */
function entryOf(call: SubCall, head: CollectedHead, body: unknown): SubResponse {
  const { settings } = call.app.services;
  const { method } = call.sub;
  const text = body === null ? '' : body instanceof JsonText ? body.text : JSON.stringify(body);
  if (body !== null) head.header('Content-Type', 'application/json; charset=utf-8');
  for (const [name, value] of responseHeaders(settings, method, call.headers.origin)) head.header(name, value);
  if (body !== null) head.header('Content-Length', String(Buffer.byteLength(text)));
  if (!head.headers.has('date')) head.header('Date', new Date().toUTCString());
  head.header('Connection', 'keep-alive');
  const entry: SubResponse = {
    status: head.status,
    path: entryPath(call.path),
    headers: canonicalHeaders(Object.fromEntries(head.headers)),
    // A HEAD's answer has no body, whatever it would have said (as an answer from the network).
    bodyText: body === null || method === 'HEAD' ? '""' : text,
  };
  // Stamped at commit: written again then, with its timestamps (the body holds the stored object).
  if (head.unsettled) {
    entry.settle = () => {
      head.settle();
      Object.assign(entry, entryOf(call, head, body), { settle: undefined });
    };
  }
  return entry;
}
