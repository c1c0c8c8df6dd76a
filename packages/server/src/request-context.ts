/**
 * Per-request services and the batch transaction. Sub-requests of `POST /batch` run through the
 * same routes (via `inject`), inside the batch's storage transaction, which they find on their
 * request (`request.batch`).
 *
 * The batch hands its transaction over in a header naming it, honoured only on injected
 * requests. Not through AsyncLocalStorage: on Node 20 that enables async hooks for every
 * promise of every later request, about 0.1 ms of server CPU per write (bench/history.ts).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
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

const BATCH_HEADER = 'x-quire-batch';

interface BatchScope {
  session: StorageSession;
  token: string;
  /** The address of the client that sent the batch: its sub-requests' logins count against it. */
  ip: string;
}

/** Batches being run by this process, by the token their sub-requests carry. */
const runningBatches = new Map<string, BatchScope>();

/** Runs `fn` with the headers that put an injected sub-request into the batch's `session`. */
export async function runInBatch<T>(session: StorageSession, ip: string, fn: (headers: Record<string, string>) => Promise<T>): Promise<T> {
  const token = randomUUID();
  runningBatches.set(token, { session, token, ip });
  try {
    return await fn({ [BATCH_HEADER]: token });
  } finally {
    runningBatches.delete(token);
  }
}

/**
 * First thing on every request: sets `request.batch`. The header is removed whoever sent it,
 * and trusted only on a request injected by this process (never one from the network).
 */
export function attachBatch(request: FastifyRequest): void {
  const token = request.headers[BATCH_HEADER];
  if (token === undefined) return;
  delete request.headers[BATCH_HEADER];
  const injected = (request.raw as { isLightMyRequest?: boolean }).isLightMyRequest === true;
  if (injected && typeof token === 'string') request.batch = runningBatches.get(token) ?? null;
}

/** The session of the batch `request` runs in, if any. */
export function batchSession(request: FastifyRequest): StorageSession | undefined {
  return request.batch?.session;
}

/** Headers that keep a request injected on behalf of `request` in `request`'s batch, if any. */
export function batchHeaders(request: FastifyRequest): Record<string, string> {
  return request.batch ? { [BATCH_HEADER]: request.batch.token } : {};
}

/** Runs `fn` on the batch's transaction, else on plain reads (`Storage.read`) or a new transaction (writes). */
export function withSession<T>(request: FastifyRequest, storage: Storage, mode: 'read' | 'write', fn: (session: StorageSession) => Promise<T>): Promise<T> {
  const batch = batchSession(request);
  if (batch) return fn(batch);
  return mode === 'read' ? storage.read(fn) : storage.transaction(fn);
}

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
  interface FastifyRequest {
    identity: Identity;
    /** The parsed body was sent with a content type we do not parse (415 on writes). */
    unsupportedContentType: string | null;
    /** The batch this sub-request belongs to (null outside a batch). */
    batch: BatchScope | null;
  }
}
