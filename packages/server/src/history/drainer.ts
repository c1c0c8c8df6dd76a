/**
 * Moves pending history entries from the outbox into each bucket's history (an object scope
 * `/buckets/<bid>` × `history`), where they get their timestamps.
 *
 * Per bucket, one transaction at a time across every process: it first locks the history
 * scope, then takes the oldest pending rows and stores their entries (`outbox.moveToScope`:
 * the entries never come back to this process). Entries are therefore stored in the order
 * their changes committed (two changes of one object commit in order, and enqueue in order),
 * and their timestamps follow commit order like any object's, so `_since` on the history
 * never misses an entry. Within a process, requests for a bucket being
 * drained coalesce into one more run after the current one.
 *
 * Rows left by a stopped process are picked up by the periodic sweep (and by any reader).
 */
import type { FastifyBaseLogger } from 'fastify';
import { HISTORY_RESOURCE, type Filter, type Scope, type Storage, type StorageSession } from '../storage/types.js';

export { HISTORY_RESOURCE };
export const HISTORY_TOPIC = 'history';

/**
 * Principals who may read an entry, kept in the entry itself (one insert, no ACE rows). The
 * leading underscore keeps it out of reach of filters (reserved `_` parameters are ignored);
 * the view strips it from every answer.
 */
export const READ_PRINCIPALS_FIELD = '_read_principals';

function historyScope(bucketUri: string): Scope {
  return { resourceName: HISTORY_RESOURCE, parentId: bucketUri };
}

/** `history_auto_trim_*`: the newest `keep` entries per kind of object (and per listed user). */
export interface HistoryTrim {
  keep: number;
  /** The kinds of objects entries are about (`resource_name`). */
  resourceNames: Iterable<string>;
  /** Only these users' entries are trimmed, `keep` per user; empty: every entry. */
  userIds: string[];
}

export interface HistoryDrainerOptions {
  trim: HistoryTrim | null;
  batchSize: number;
  /** How long a drain asked for after a commit waits, gathering the next commits' entries. */
  delayMs: number;
  sweepIntervalMs: number;
  log: () => FastifyBaseLogger | undefined;
}

export class HistoryDrainer {
  readonly #storage: Storage;
  readonly #options: HistoryDrainerOptions;
  /** Buckets being drained by this process, and whether another run was asked for meanwhile. */
  readonly #running = new Map<string, { again: boolean; done: Promise<void> }>();
  readonly #scheduled = new Map<string, NodeJS.Timeout>();
  #sweeper: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(storage: Storage, options: HistoryDrainerOptions) {
    this.#storage = storage;
    this.#options = options;
  }

  /** Starts the periodic sweep (and runs one now). */
  start(): void {
    if (this.#sweeper || this.#closed) return;
    const sweep = () => {
      this.drainAll().catch((error: unknown) => this.#options.log()?.error({ err: error }, 'history: sweep failed'));
    };
    this.#sweeper = setInterval(sweep, this.#options.sweepIntervalMs);
    this.#sweeper.unref();
    sweep();
  }

  /**
   * After a commit: drains the bucket `delayMs` later, so that one run moves the entries of
   * every commit made meanwhile (one transaction for many writes instead of one each).
   */
  schedule(bucketUri: string): void {
    if (this.#scheduled.has(bucketUri) || this.#closed) return;
    const timer = setTimeout(() => {
      this.#scheduled.delete(bucketUri);
      this.drain(bucketUri).catch((error: unknown) =>
        this.#options.log()?.error({ err: error, bucket: bucketUri }, 'history: entries left pending'),
      );
    }, this.#options.delayMs);
    this.#scheduled.set(bucketUri, timer);
  }

  /**
   * Resolves once every entry of `bucketUri` committed before the call is in its history
   * (a run already going may have started too early: one more follows it).
   */
  drain(bucketUri: string): Promise<void> {
    const running = this.#running.get(bucketUri);
    if (running) {
      running.again = true;
      return running.done;
    }
    const state = { again: false, done: Promise.resolve() };
    state.done = (async () => {
      try {
        do {
          state.again = false;
          await this.#drainBucket(bucketUri);
        } while (state.again && !this.#closed);
      } finally {
        this.#running.delete(bucketUri);
      }
    })();
    this.#running.set(bucketUri, state);
    return state.done;
  }

  /** `drain()` when something is pending for the bucket: one indexed read otherwise. */
  async drainPending(bucketUri: string): Promise<void> {
    if (
      this.#running.has(bucketUri) ||
      (await this.#storage.read((session) => session.outbox.keys(HISTORY_TOPIC, bucketUri))).length > 0
    ) {
      await this.drain(bucketUri);
    }
  }

  async drainAll(): Promise<void> {
    const keys = await this.#storage.read((session) => session.outbox.keys(HISTORY_TOPIC));
    await Promise.all(keys.map((key) => this.drain(key)));
  }

  /** Stops the sweep and waits for the runs in progress (server shutdown). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#sweeper) clearInterval(this.#sweeper);
    // What was scheduled runs now rather than waiting for the next process's sweep.
    for (const [bucketUri, timer] of this.#scheduled) {
      clearTimeout(timer);
      void this.drain(bucketUri).catch(() => {});
    }
    this.#scheduled.clear();
    await Promise.allSettled([...this.#running.values()].map((state) => state.done));
  }

  async #drainBucket(bucketUri: string): Promise<void> {
    const { batchSize } = this.#options;
    const target = {
      scope: historyScope(bucketUri),
      // The bucket was deleted since (its history with it): its late entries are dropped.
      whileExists: { scope: { resourceName: 'bucket', parentId: '' }, id: bucketUri.slice('/buckets/'.length) },
    };
    const { trim } = this.#options;
    for (;;) {
      const taken = await this.#storage.transaction(async (session) => {
        const moved = await session.outbox.moveToScope(HISTORY_TOPIC, bucketUri, batchSize, target);
        // In the same transaction, under the history scope's lock: no two trims of a bucket
        // interleave, and the new entries become visible with the old ones already gone.
        if (moved > 0 && trim) await trimHistory(session, target.scope, trim);
        return moved;
      });
      if (taken < batchSize) return;
    }
  }
}

/**
 * Kinto's auto-trim, per kind of object — and per user when trimming by user: the older
 * entries beyond `keep` are deleted. Off the request path: the drainer runs it after commit.
 */
async function trimHistory(
  session: StorageSession,
  scope: Scope,
  { keep, resourceNames, userIds }: HistoryTrim,
): Promise<void> {
  for (const resourceName of resourceNames) {
    const byResource: Filter = { field: 'resource_name', operator: 'eq', value: resourceName };
    if (userIds.length === 0) await session.objects.trim(scope, keep, [byResource]);
    for (const userId of userIds)
      await session.objects.trim(scope, keep, [byResource, { field: 'user_id', operator: 'eq', value: userId }]);
  }
}
