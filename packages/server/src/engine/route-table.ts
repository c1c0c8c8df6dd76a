/**
 * The engine's routes, as registered (routes.ts): which model and endpoint answer a URL pattern
 * and method. A batch answers a sub-request by the endpoint the router would run
 * (views/batch-direct.ts): the router finds the route (`findRoute`, so a static route such as
 * the change monitor's wins over a resource's pattern, as it does for any request) and gives its
 * parameters; this table says whether that route is one of the engine's, and which.
 */
import type { FastifyInstance, HTTPMethods } from 'fastify';
import type { ResourceModel } from './model.js';
import type { RouteParams } from './objects.js';
import type { EngineRequest } from './request.js';
import type { ResponseHead } from './object-responses.js';
import type { Answer } from './endpoints/answer.js';

/** An endpoint of the engine: the resource model, the request, where its status and headers go. */
export type Endpoint = (model: ResourceModel, request: EngineRequest, reply: ResponseHead) => Promise<Answer>;

/** One URL pattern of the engine: its segments (`:name` for a parameter) and what each method runs. */
interface EnginePattern {
  /** `/v1/buckets/:bucket_id` (a metric's and a log line's route). */
  url: string;
  segments: string[];
  model: ResourceModel;
  endpoints: Partial<Record<HTTPMethods, Endpoint>>;
  /** The methods it serves, in order (a 405's `Allow`). */
  allowed: HTTPMethods[];
}

/** What the router found for a sub-request, when it is one of the engine's routes. */
export type EngineRoute = { pattern: string } & (
  | { kind: 'endpoint'; model: ResourceModel; endpoint: Endpoint; params: RouteParams }
  /** The pattern is the engine's but not the method: 405 with these. */
  | { kind: 'not-allowed'; allowed: HTTPMethods[] }
);

export class EngineRouteTable {
  /** Patterns by their parameter names (sorted, joined): the few a route's parameters can be. */
  readonly #byParams = new Map<string, EnginePattern[]>();

  add(url: string, model: ResourceModel, endpoints: Partial<Record<HTTPMethods, Endpoint>>): void {
    const segments = url.split('/');
    const names = segments.filter((segment) => segment.startsWith(':')).map((segment) => segment.slice(1));
    const key = paramsKey(names);
    const patterns = this.#byParams.get(key) ?? [];
    patterns.push({ url, segments, model, endpoints, allowed: Object.keys(endpoints) as HTTPMethods[] });
    this.#byParams.set(key, patterns);
  }

  /**
   * The engine's route for `method path` (path without its query string), as the router finds
   * it; null when the router finds none (a 404 or a redirect to come) or another route.
   */
  find(app: FastifyInstance, method: string, path: string): EngineRoute | null {
    const found = app.findRoute({ method: method as HTTPMethods, url: path });
    if (!found) return null;
    const params = found.params as RouteParams;
    const candidates = this.#byParams.get(paramsKey(Object.keys(params)));
    if (!candidates) return null;
    const segments = path.split('/');
    const pattern = candidates.find((candidate) => sameShape(candidate.segments, segments, params));
    if (!pattern) return null;
    const endpoint = pattern.endpoints[method as HTTPMethods];
    if (!endpoint) return { kind: 'not-allowed', pattern: pattern.url, allowed: pattern.allowed };
    return { kind: 'endpoint', pattern: pattern.url, model: pattern.model, endpoint, params };
  }
}

function paramsKey(names: string[]): string {
  return [...names].sort().join(',');
}

/** Whether `segments` (a path the router matched with `params`) are an instance of `pattern`. */
function sameShape(pattern: string[], segments: string[], params: RouteParams): boolean {
  if (pattern.length !== segments.length) return false;
  for (let index = 0; index < pattern.length; index++) {
    const expected = pattern[index] as string;
    if (expected.startsWith(':')) {
      if (params[expected.slice(1)] === undefined) return false;
    } else if (expected !== segments[index]) return false;
  }
  return true;
}

const TABLES = new WeakMap<FastifyInstance, EngineRouteTable>();

/** The engine's route table of `app` (filled as resources register). */
export function engineRoutesOf(app: FastifyInstance): EngineRouteTable {
  let table = TABLES.get(app);
  if (!table) {
    table = new EngineRouteTable();
    TABLES.set(app, table);
  }
  return table;
}
