/**
 * What every request handler can reach: the server's services (`app.services`) and, on the
 * request, who is calling (`request.identity`) and its unit of work (`request.work`: its
 * storage session and events, a batch's for a batch's sub-request; unit-of-work.ts).
 */
import type { AuthPolicy, Identity } from './auth/policy.js';
import type { Settings } from './config.js';
import type { EventBus } from './events/bus.js';
import type { Authorizer } from './permission/authorizer.js';
import type { Storage } from './storage/types.js';
import type { UnitOfWork } from './unit-of-work.js';

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
  capabilities: Record<string, Record<string, unknown>>;
  /** Resource events (§10): the unit of work gathers them, listeners (history, Redis queue...) subscribe. */
  events: EventBus;
  /** The id of a user's personal bucket (`/buckets/default`), when that feature is enabled. */
  personalBucketId?: (userId: string) => string;
}

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
  }
}
