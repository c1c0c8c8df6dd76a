/**
 * An endpoint of the engine called in process by a feature with routes of its own (attachments
 * write a record, `/buckets/default` answers on the real bucket), as kinto-attachment patches a
 * record through the model rather than through HTTP. The router finds the route a request for
 * `method path` would take (route-table.ts); its endpoint runs with the caller's identity, unit
 * of work, address and request id, the headers the engine reads, and the input limits of that
 * path (request-input.ts). No request is dispatched: no second authentication, log line or metric.
 */
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import type { Identity } from '../auth/policy.js';
import { methodNotAllowed, unknownUrl } from '../errors.js';
import { baseUrl } from '../http/base-url.js';
import type { Answer } from './endpoints/answer.js';
import type { ResponseHead } from './object-responses.js';
import { type EngineCall, EngineRequest, engineHeaders } from './request.js';
import { readInput } from './request-input.js';
import { type EngineRoute, engineRoutesOf } from './route-table.js';
import type { UnitOfWork } from '../unit-of-work.js';

/** A status and headers collected as Fastify's reply keeps them: lower-case names. */
export class CollectedHead implements ResponseHead {
  status = 200;
  readonly headers = new Map<string, string>();

  code(status: number): this {
    this.status = status;
    return this;
  }

  header(name: string, value: string): this {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  readonly #later: Array<() => void> = [];

  later(settle: () => void): void {
    this.#later.push(settle);
  }

  /** Whether some of it waits for a timestamp given at commit (`settle` once committed). */
  get unsettled(): boolean {
    return this.#later.length > 0;
  }

  settle(): void {
    for (const settle of this.#later.splice(0)) settle();
  }
}

/** On whose behalf an endpoint runs, and where its answer's URLs point. */
export interface EngineCaller {
  identity: Identity;
  work: UnitOfWork;
  /** The request id (its log lines). */
  id: string;
  log: FastifyBaseLogger;
  /** The client's address. */
  ip: string;
  /** `scheme://host` of the answer's absolute URLs (computed when first asked). */
  origin: () => string;
}

/** The caller a request from the router is. */
function callerOf(request: FastifyRequest): EngineCaller {
  const { settings } = request.server.services;
  return {
    identity: request.identity,
    work: request.work,
    id: request.id,
    log: request.log,
    ip: request.ip,
    origin: () => baseUrl(settings, request),
  };
}

/**
 * The answer of the endpoint a request for `call` would reach, on behalf of `caller`; its status
 * and headers go to `head`. A path that is no route of the engine is a 404, a method it does not
 * serve a 405, as the router answers them.
 */
export async function callEndpoint(
  app: FastifyInstance,
  caller: FastifyRequest,
  call: EngineCall,
  head: ResponseHead,
): Promise<Answer> {
  const route = engineRoutesOf(app).find(app, call.method, call.path);
  if (!route) throw unknownUrl();
  return runRoute(app, route, callerOf(caller), call, head);
}

/** `call` answered on the engine's `route` (as the router found it): its input limits, its 405, its endpoint. */
export async function runRoute(
  app: FastifyInstance,
  route: EngineRoute,
  caller: EngineCaller,
  call: EngineCall,
  head: ResponseHead,
): Promise<Answer> {
  const { settings } = app.services;
  const query = readInput(call.path, call.query, settings);
  if (route.kind === 'not-allowed') throw methodNotAllowed(route.allowed);
  const request = new EngineRequest({
    method: call.method,
    path: call.path,
    params: route.params,
    query,
    headers: engineHeaders(call.headers),
    body: call.body,
    settings,
    ...caller,
  });
  return route.endpoint(route.model, request, head);
}
