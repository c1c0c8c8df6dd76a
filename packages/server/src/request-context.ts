/**
 * Per-request services and the batch transaction. Sub-requests of `POST /batch` run through the
 * same routes (via `inject`), inside the batch's storage transaction, which they find here
 * through AsyncLocalStorage.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AuthPolicy, Identity } from './auth/policy.js';
import type { Settings } from './config.js';
import type { EventBus } from './events/bus.js';
import type { Authorizer } from './permission/authorizer.js';
import type { Storage, StorageSession } from './storage/types.js';

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
  /** Resource events (§10): handlers emit, listeners (history, Redis queue...) subscribe. */
  events: EventBus;
  /** The id of a user's personal bucket (`/buckets/default`), when that feature is enabled. */
  personalBucketId?: (userId: string) => string;
}

interface BatchScope {
  session: StorageSession;
}

const batchScope = new AsyncLocalStorage<BatchScope>();

export function runInBatch<T>(session: StorageSession, fn: () => Promise<T>): Promise<T> {
  return batchScope.run({ session }, fn);
}

/** The session of the batch being run, if any. */
export function batchSession(): StorageSession | undefined {
  return batchScope.getStore()?.session;
}

/** Runs `fn` on the batch's transaction, else on a snapshot (reads) or a new transaction (writes). */
export function withSession<T>(storage: Storage, mode: 'read' | 'write', fn: (session: StorageSession) => Promise<T>): Promise<T> {
  const scope = batchScope.getStore();
  if (scope) return fn(scope.session);
  return mode === 'read' ? storage.snapshot(fn) : storage.transaction(fn);
}

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
  interface FastifyRequest {
    identity: Identity;
    /** The parsed body was sent with a content type we do not parse (415 on writes). */
    unsupportedContentType: string | null;
  }
}
