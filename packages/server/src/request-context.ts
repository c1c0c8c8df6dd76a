/**
 * What every request handler can reach: the server's services (`app.services`) and, on the
 * request, who is calling (`request.identity`) and its unit of work (`request.work`: its
 * storage session and events, a batch's for a batch's sub-request; unit-of-work.ts).
 */
import type { AuthPolicy, Identity } from './auth/policy.js';
import type { Settings } from './config.js';
import type { FastifyRequest } from 'fastify';
import type { EventBus } from './events/bus.js';
import type { Metrics } from './observability/metrics.js';
import type { Authorizer } from './permission/authorizer.js';
import type { ResourceExtension } from './engine/extensions.js';
import type { Storage } from './storage/types.js';
import type { EventSource, UnitOfWork } from './unit-of-work.js';
import type { RequestQuery } from './engine/request-input.js';
import type { EngineCall } from './engine/request.js';

/** Who asks for a call under `/buckets/default`: identity and unit of work, and the request its events name. */
export interface PersonalCaller {
  identity: Identity;
  work: UnitOfWork;
  source: EventSource;
}

export interface Services {
  settings: Settings;
  storage: Storage;
  authorizer: Authorizer;
  policies: AuthPolicy[];
  version: string;
  /**
   * Capabilities shown in `GET /` (§11.1). Each feature adds its own entry when it is
   * enabled, so the list is exactly what this server does.
   */
  capabilities: Record<string, Capability>;
  /** Resource events (§10): the unit of work gathers them, listeners (history, Redis queue...) subscribe. */
  events: EventBus;
  /** The id of a user's personal bucket (`/buckets/default`), when that feature is enabled. */
  personalBucketId?: (userId: string) => string;
  /**
   * Creates the caller's personal bucket and its collection `collectionId` if missing, in the
   * request's unit of work, as any request under `/buckets/default/…` does; returns the bucket id.
   */
  ensurePersonalCollection?: (request: FastifyRequest, collectionId: string) => Promise<string>;
  /**
   * A request under `/buckets/default` checked, with its implicit creations made, as the same
   * request on the caller's real bucket (views/default-bucket.ts), when that feature is enabled.
   */
  personalCall?: (caller: PersonalCaller, call: EngineCall) => Promise<EngineCall>;
  /** Hooks features add to the protocol's resources (attachments on records…), applied as the routes register. */
  resourceExtensions: ResourceExtension[];
  /** Checks of `__heartbeat__` beside the storage's, by name (a feature's backend). */
  heartbeats: Record<string, () => Promise<boolean>>;
  /** Prometheus metrics, with `metrics_enabled`. */
  metrics: Metrics | null;
}

/** A capability of `GET /`, or what it is for one request (a URL on the request's host). */
export type Capability = Record<string, unknown> | ((request: FastifyRequest) => Record<string, unknown>);

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
  interface FastifyRequest {
    identity: Identity;
    /** The parsed body was sent with a content type we do not parse (415 on writes). */
    unsupportedContentType: string | null;
    /** Its storage session and events: its own, or the batch's it runs in (`work.batch`). */
    work: UnitOfWork;
    /** Its URL's query, read and bounded before the handler (http/query-limits.ts). */
    input: RequestQuery;
  }
}
