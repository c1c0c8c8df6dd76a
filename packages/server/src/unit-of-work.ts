/**
 * The unit of work of a request: the storage session its handler works in and the events it
 * gathers there (protocol-reference §10.4). A request opens one when its handler first asks
 * (`run`); a batch opens one for all its sub-requests, which join it (views/batch.ts hands it
 * to them), so a whole batch is one transaction and one request for the listeners.
 *
 * Events emitted in a session are given to the in-transaction subscribers just before it
 * commits (a failure rolls everything back), then to the others, with the work registered by
 * `afterCommit`, once it has committed.
 *
 * Not through AsyncLocalStorage: on Node 20 it turns on async hooks that cost every later
 * promise, about 0.1 ms of server CPU per write (bench/history.ts); the handlers reach the unit
 * through their request (`request.work`).
 */
import type { Identity } from './auth/policy.js';
import { splitUrl } from './http/url.js';
import type { EventBus } from './events/bus.js';
import type { Action, EventPayload, ImpactedObject, ResourceEvent } from './events/types.js';
import type { SessionOptions, Storage, StorageSession } from './storage/types.js';

export type SessionMode = 'read' | 'write';

export interface EmitOptions {
  resourceName: string;
  /** Storage parent of the impacted objects. */
  parentId: string;
  action: Action;
  /** A function when the timestamp is known only once the change commits (stampAtCommit). */
  timestamp: number | (() => number);
  impactedObjects: ImpactedObject[];
}

/** The events of one session, in order of first occurrence, by grouping key. */
class EventCollector {
  readonly events: ResourceEvent[] = [];
  readonly #byKey = new Map<string, ResourceEvent>();
  /** Timestamps to read once the change is stamped: before delivery. */
  #stamps: Array<{ payload: EventPayload; stamp: () => void }> = [];

  stampLater(payload: EventPayload, timestamp: () => number): void {
    this.#stamps.push({ payload, stamp: () => (payload.timestamp = timestamp()) });
  }

  /**
   * The events (those `only` keeps), with their timestamps read: call once they are stamped.
   * Those of changes stamped at commit are read after it, the others may be before.
   */
  stamped(only?: (event: ResourceEvent) => boolean): ResourceEvent[] {
    const events = only ? this.events.filter(only) : this.events;
    const payloads = new Set(events.map((event) => event.payload));
    const [now, later] = [this.#stamps.filter((s) => payloads.has(s.payload)), this.#stamps];
    this.#stamps = only ? later.filter((s) => !payloads.has(s.payload)) : [];
    for (const { stamp } of now) stamp();
    return events;
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

/**
 * What an event says of the request that caused it: its route parameters, URL and caller (a
 * Fastify request, or the engine's: engine/request.ts).
 */
export interface EventSource {
  readonly params: unknown;
  /** The path and query string as sent. */
  readonly url: string;
  readonly identity: Identity | null;
}

/** Request path without the version prefix, decoded (`/buckets/b/collections/c/records`). */
function eventUri(request: EventSource): string {
  const path = splitUrl(request.url).path.replace(/^\/v1(?=\/|$)/, '');
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The open session and what was gathered in it (allocated on first use: most reads gather nothing). */
interface OpenSession {
  session: StorageSession;
  events: EventCollector | null;
  afterCommit: Array<() => void | Promise<void>> | null;
}

export class UnitOfWork {
  readonly #storage: Storage;
  readonly #bus: EventBus;
  readonly #budget: (() => SessionOptions) | undefined;
  #open: OpenSession | null = null;
  /** A batch's sub-request answered once the batch has committed: its writes may be stamped then. */
  #answeredAfterCommit = false;

  /**
   * @param batch true for the unit a batch opens for its sub-requests: a request that runs in
   *   it is a batch's sub-request (quieter logs, login metrics counted once by the batch).
   * @param budget what the store is told of the request when a session opens (asked then: the
   *   caller is known by that time): its signal, which cancels the session's statements, and its
   *   owner, who shares the store's connections fairly with the others (issue 36).
   */
  constructor(
    storage: Storage,
    bus: EventBus,
    readonly batch = false,
    budget?: () => SessionOptions,
  ) {
    this.#storage = storage;
    this.#bus = bus;
    this.#budget = budget;
  }

  /**
   * Whether a session is open already (a batch's): work then joins it, so a write is part of a
   * larger transaction, its changes stamped at once, and nothing commits when it returns.
   */
  get isOpen(): boolean {
    return this.#open !== null;
  }

  /**
   * Runs `fn` in the open session, or else in a new one — plain reads (`Storage.read`) or a
   * transaction — which it completes: events delivered, after-commit work run.
   */
  run<T>(mode: SessionMode, fn: (session: StorageSession) => Promise<T>): Promise<T> {
    const open = this.#open;
    if (open) return fn(open.session);
    return this.#complete(mode, fn);
  }

  /**
   * Runs a write of `resourceName` like `run('write')`, deciding how its change is stamped:
   * `fn` is told whether at commit. A write in a unit of its own is stamped at commit (the
   * collection stays locked only while the database commits), so its timestamp is known only
   * then. It is stamped at once inside a larger unit (a batch: later sub-requests read it),
   * when listeners run in the transaction (they read it before commit), and when the writer
   * answers with copies of what it stored (`answersCopies`: the copies would miss the stamp).
   * A batch's sub-request whose answer is written once the batch has committed
   * (`answeringAfterCommit`) is stamped at commit too: what a later sub-request reads of it, the
   * store stamps first (then the scope stays locked until commit, as before).
   */
  write<T>(
    resourceName: string,
    answersCopies: boolean,
    fn: (session: StorageSession, stampAtCommit: boolean) => Promise<T>,
  ): Promise<T> {
    const stampAtCommit =
      (this.#open === null || this.#answeredAfterCommit) &&
      !this.#bus.runsInTransaction(resourceName) &&
      !answersCopies;
    return this.run('write', (session) => fn(session, stampAtCommit));
  }

  /**
   * Runs a batch's sub-request whose answer is written only once the batch has committed (its
   * timestamps then known: batch-direct.ts), so that its writes may be stamped at commit (not
   * those with listeners in the transaction, see `write`).
   */
  async answeringAfterCommit<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.batch) return fn();
    this.#answeredAfterCommit = true;
    try {
      return await fn();
    } finally {
      this.#answeredAfterCommit = false;
    }
  }

  /** `fn` on the open session, or on plain reads: for reads that emit nothing (authentication). */
  read<T>(fn: (session: StorageSession) => Promise<T>): Promise<T> {
    const open = this.#open;
    return open ? fn(open.session) : this.#storage.read(fn, this.#budget?.());
  }

  async #complete<T>(mode: SessionMode, fn: (session: StorageSession) => Promise<T>): Promise<T> {
    const bus = this.#bus;
    let open: OpenSession | null = null;
    const body = async (session: StorageSession) => {
      // A transaction may run `body` again (a deadlock retried): start over each attempt.
      open = { session, events: null, afterCommit: null };
      this.#open = open;
      try {
        const value = await fn(session);
        // Only changes stamped at once are delivered here (stampAtCommit is for requests without such listeners).
        const inTransaction = (event: ResourceEvent) => bus.runsInTransaction(event.payload.resource_name);
        if (open.events?.events.some(inTransaction))
          await bus.deliverInTransaction(open.events.stamped(inTransaction), session);
        return value;
      } finally {
        this.#open = null;
      }
    };
    const budget = this.#budget?.();
    const result = await (mode === 'read' ? this.#storage.read(body, budget) : this.#storage.transaction(body, budget));
    const committed = open as OpenSession | null;
    if (committed?.events) bus.deliverAfterCommit(committed.events.stamped());
    if (committed?.afterCommit) {
      for (const work of committed.afterCommit) {
        // Committed already: a failure here is logged, never the request's answer.
        await Promise.resolve()
          .then(work)
          .catch((error: unknown) => bus.log()?.error({ err: error }, 'work after commit failed'));
      }
    }
    return result;
  }

  /** Work to do once the open session has committed (nothing when it rolls back). */
  afterCommit(work: () => void | Promise<void>): void {
    const open = this.#requireOpen('afterCommit');
    open.afterCommit ??= [];
    open.afterCommit.push(work);
  }

  /**
   * Records an event of `request` in the open session. Call it once the change is stored. Does
   * nothing when no subscriber wants it.
   */
  emit(request: EventSource, options: EmitOptions): void {
    if (!this.#bus.wants(options.action, options.resourceName)) return;
    const open = this.#requireOpen(`event ${options.resourceName}/${options.action}`);
    open.events ??= new EventCollector();
    const collector = open.events;
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

  #requireOpen(what: string): OpenSession {
    if (!this.#open)
      throw new Error(`${what} outside a session of the request's unit of work (run it inside work.run())`);
    return this.#open;
  }
}
