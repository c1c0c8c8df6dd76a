/**
 * The event bus (protocol-reference §10.4): the subscribers of resource events, and how events
 * reach them. Events are gathered by the unit of work of a request (unit-of-work.ts) — a whole
 * batch counts as one request — grouped by `(resource_name, parent, action)`, then handed over
 * here in two phases: in the transaction, just before commit (a failure rolls everything back
 * and fails the request), and after commit (never delays nor fails the response).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { StorageSession } from '../storage/types.js';
import type { Action, EventSubscriber, ResourceEvent } from './types.js';

function matches(subscriber: EventSubscriber, event: ResourceEvent): boolean {
  return (
    subscriber.actions.has(event.payload.action) &&
    (subscriber.resources === null || subscriber.resources.has(event.payload.resource_name))
  );
}

export class EventBus {
  readonly #subscribers: EventSubscriber[] = [];
  readonly log: () => FastifyBaseLogger | undefined;

  constructor(log: () => FastifyBaseLogger | undefined = () => undefined) {
    this.log = log;
  }

  subscribe(subscriber: EventSubscriber): void {
    this.#subscribers.push(subscriber);
  }

  get subscribers(): readonly EventSubscriber[] {
    return this.#subscribers;
  }

  /**
   * Whether some subscriber runs in the transaction for changes of `resourceName` (then they must
   * be stamped before commit; the others may be stamped at commit).
   */
  runsInTransaction(resourceName: string): boolean {
    return this.#subscribers.some(
      (subscriber) =>
        subscriber.inTransaction !== undefined &&
        (subscriber.resources === null || subscriber.resources.has(resourceName)),
    );
  }

  /** Whether some subscriber listens to `action` on `resourceName` (skip building events otherwise). */
  wants(action: Action, resourceName: string): boolean {
    return this.#subscribers.some(
      (subscriber) =>
        subscriber.actions.has(action) && (subscriber.resources === null || subscriber.resources.has(resourceName)),
    );
  }

  /** A session's events to the in-transaction subscribers, before it commits; throwing rolls it back. */
  async deliverInTransaction(events: ResourceEvent[], session: StorageSession): Promise<void> {
    if (events.length === 0) return;
    for (const subscriber of this.#subscribers) {
      if (!subscriber.inTransaction) continue;
      const selected = events.filter((event) => matches(subscriber, event));
      if (selected.length) await subscriber.inTransaction(selected, session);
    }
  }

  /** A committed session's events to the other subscribers; their failures are logged. */
  deliverAfterCommit(events: ResourceEvent[]): void {
    if (events.length === 0) return;
    for (const subscriber of this.#subscribers) {
      if (!subscriber.afterCommit) continue;
      const selected = events.filter((event) => matches(subscriber, event));
      if (selected.length === 0) continue;
      try {
        subscriber.afterCommit(selected);
      } catch (error) {
        this.log()?.error({ err: error, listener: subscriber.name }, 'event listener failed after commit');
      }
    }
  }

  /** Closes every subscriber (server shutdown); one failing does not stop the others. */
  async close(): Promise<void> {
    await Promise.allSettled(this.#subscribers.map((subscriber) => subscriber.close?.()));
  }
}
