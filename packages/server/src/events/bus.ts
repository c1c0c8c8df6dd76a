/**
 * The event bus (protocol-reference §10.4). Handlers `emit` events while they work; the bus
 * gathers them per request — a whole batch counts as one request — grouped by
 * `(resource_name, parent, action)`, then hands them to the subscribers in two phases:
 * in the transaction, just before commit (a failure rolls everything back and fails the
 * request), and after commit (never delays nor fails the response).
 *
 * Usage from a view: open the storage session with `events.withSession()` instead of
 * `withSession()`, and call `events.emit(session, ...)` once the change is stored. A request's
 * events are gathered by its session (the batch's, for a batch), not through AsyncLocalStorage,
 * whose async hooks would cost every promise (see request-context.ts).
 */
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { splitUrl } from '../http/url.js';
import { batchSession } from '../request-context.js';
import type { Storage, StorageSession } from '../storage/types.js';
import type { Action, EventPayload, EventSubscriber, ImpactedObject, ResourceEvent } from './types.js';

/** The events of one request (or batch), in order of first occurrence, by grouping key. */
class EventCollector {
  readonly events: ResourceEvent[] = [];
  readonly #byKey = new Map<string, ResourceEvent>();
  /** Timestamps to read once the change is stamped: before delivery. */
  readonly #stamps: Array<() => void> = [];

  stampLater(payload: EventPayload, timestamp: () => number): void {
    this.#stamps.push(() => (payload.timestamp = timestamp()));
  }

  /** The events, with every timestamp known (call once they are stamped). */
  stamped(): ResourceEvent[] {
    for (const stamp of this.#stamps.splice(0)) stamp();
    return this.events;
  }

  add(event: ResourceEvent): void {
    const key = `${event.payload.action} ${event.payload.resource_name} ${event.parentId}`;
    const existing = this.#byKey.get(key);
    // Same key: one event, impacted objects concatenated, payload of the first occurrence.
    if (existing) existing.impactedObjects.push(...event.impactedObjects);
    else {
      this.#byKey.set(key, event);
      this.events.push(event);
    }
  }
}

export interface EmitOptions {
  resourceName: string;
  /** Storage parent of the impacted objects. */
  parentId: string;
  action: Action;
  /** A function when the timestamp is known only once the change commits (stampAtCommit). */
  timestamp: number | (() => number);
  impactedObjects: ImpactedObject[];
}

function matches(subscriber: EventSubscriber, event: ResourceEvent): boolean {
  return (
    subscriber.actions.has(event.payload.action) &&
    (subscriber.resources === null || subscriber.resources.has(event.payload.resource_name))
  );
}

/** Request path without the version prefix, decoded (`/buckets/b/collections/c/records`). */
function eventUri(request: FastifyRequest): string {
  const path = splitUrl(request.raw.url).path.replace(/^\/v1(?=\/|$)/, '');
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

export class EventBus {
  readonly #subscribers: EventSubscriber[] = [];
  /** The events of each open session run by `run()`. */
  readonly #collectors = new WeakMap<StorageSession, EventCollector>();
  readonly #log: () => FastifyBaseLogger | undefined;

  constructor(log: () => FastifyBaseLogger | undefined = () => undefined) {
    this.#log = log;
  }

  subscribe(subscriber: EventSubscriber): void {
    this.#subscribers.push(subscriber);
  }

  get subscribers(): readonly EventSubscriber[] {
    return this.#subscribers;
  }

  /** Whether some subscriber runs in the transaction (then changes must be stamped before commit). */
  get hasInTransactionSubscribers(): boolean {
    return this.#subscribers.some((subscriber) => subscriber.inTransaction !== undefined);
  }

  /** Whether some subscriber listens to `action` on `resourceName` (skip building events otherwise). */
  wants(action: Action, resourceName: string): boolean {
    return this.#subscribers.some((subscriber) => subscriber.actions.has(action) && (subscriber.resources === null || subscriber.resources.has(resourceName)));
  }

  /**
   * Like `withSession()` of request-context: runs `fn` on the batch's transaction if any (the
   * batch delivers the events), else on its own reads/transaction, delivering the events it
   * emitted before commit and after commit.
   */
  withSession<T>(request: FastifyRequest, storage: Storage, mode: 'read' | 'write', fn: (session: StorageSession) => Promise<T>): Promise<T> {
    const batch = batchSession(request);
    if (batch) return fn(batch);
    return this.run(storage, mode, fn);
  }

  /** Runs `fn` in a new session that gathers every event emitted inside it (batch.ts, withSession). */
  async run<T>(storage: Storage, mode: 'read' | 'write', fn: (session: StorageSession) => Promise<T>): Promise<T> {
    if (this.#subscribers.length === 0) return mode === 'read' ? storage.read(fn) : storage.transaction(fn);
    let collector = new EventCollector();
    const body = async (session: StorageSession) => {
      // A transaction may run `fn` again (a deadlock retried): start over each attempt.
      collector = new EventCollector();
      this.#collectors.set(session, collector);
      try {
        const value = await fn(session);
        // Only changes stamped at once are delivered here (stampAtCommit is for requests with no such listener).
        if (this.hasInTransactionSubscribers) await this.#deliverInTransaction(collector.stamped(), session);
        return value;
      } finally {
        this.#collectors.delete(session);
      }
    };
    const result = await (mode === 'read' ? storage.read(body) : storage.transaction(body));
    this.#deliverAfterCommit(collector.stamped());
    return result;
  }

  /**
   * Records an event of `request`. Call it once the change is stored, with the session
   * `withSession()`/`run()` gave. Does nothing when no subscriber wants it.
   */
  emit(session: StorageSession, request: FastifyRequest, options: EmitOptions): void {
    if (!this.wants(options.action, options.resourceName)) return;
    const collector = this.#collectors.get(session);
    if (!collector) throw new Error(`event ${options.resourceName}/${options.action} emitted outside events.withSession()`);
    const { timestamp } = options;
    const payload: EventPayload = {
      // The URL's ids, named `<resource>_id` by the routes already (§10.2).
      ...(request.params as Record<string, string>),
      action: options.action,
      resource_name: options.resourceName,
      timestamp: typeof timestamp === 'number' ? timestamp : Number.NaN,
      uri: eventUri(request),
      user_id: request.identity?.userId ?? null,
    };
    if (typeof timestamp === 'function') collector.stampLater(payload, timestamp);
    collector.add({ payload, parentId: options.parentId, impactedObjects: [...options.impactedObjects] });
  }

  async #deliverInTransaction(events: ResourceEvent[], session: StorageSession): Promise<void> {
    if (events.length === 0) return;
    for (const subscriber of this.#subscribers) {
      if (!subscriber.inTransaction) continue;
      const selected = events.filter((event) => matches(subscriber, event));
      if (selected.length) await subscriber.inTransaction(selected, session);
    }
  }

  #deliverAfterCommit(events: ResourceEvent[]): void {
    if (events.length === 0) return;
    for (const subscriber of this.#subscribers) {
      if (!subscriber.afterCommit) continue;
      const selected = events.filter((event) => matches(subscriber, event));
      if (selected.length === 0) continue;
      try {
        subscriber.afterCommit(selected);
      } catch (error) {
        this.#log()?.error({ err: error, listener: subscriber.name }, 'event listener failed after commit');
      }
    }
  }

  /** Closes every subscriber (server shutdown); one failing does not stop the others. */
  async close(): Promise<void> {
    await Promise.allSettled(this.#subscribers.map((subscriber) => subscriber.close?.()));
  }
}
