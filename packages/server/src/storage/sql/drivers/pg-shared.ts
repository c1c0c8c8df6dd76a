/**
 * A few PostgreSQL connections that the short autocommit statements of every request share,
 * each sent as soon as it comes (node-postgres's pipeline mode) instead of waiting for a pooled
 * connection of its own. Under load a shared connection always has work queued, so its backend
 * never goes to sleep between statements: waking a sleeping backend, and being woken by its
 * answer, is what a statement cost most on the 2-vCPU VM (16 concurrent callers of a trivial
 * statement: 15,100/s and 44 µs of client CPU each through a pool of 10 connections, 31,300/s
 * and 19 µs through one shared connection).
 *
 * Only short statements belong here: one slow statement delays those queued behind it on its
 * connection. A statement goes to the connection with the fewest in flight; a connection that
 * fails is replaced by the next statement (those in flight on it fail). While the database is
 * away, opening one is retried with backoff (50 ms, doubling up to `maxRetryDelayMs`), not by
 * every statement: meanwhile statements fail at once (the request answers 503).
 */
import pg from 'pg';
import { backoffDelay } from '../../../retry.js';

interface Shared {
  client: pg.Client;
  ready: Promise<void>;
  inFlight: number;
  broken: boolean;
  /** Corked until the end of this turn of the event loop: its statements leave in one write. */
  corked: boolean;
}

const FIRST_RETRY_DELAY_MS = 50;

export class SharedConnections {
  readonly #config: pg.ClientConfig;
  readonly #slots: Array<Shared | null>;
  readonly #maxRetryDelayMs: number;
  #closed = false;
  /** Opens that failed in a row, the last one's error, and when the next may be tried. */
  #failures = 0;
  #lastError: unknown = null;
  #retryAt = 0;

  constructor(config: pg.ClientConfig, count: number, { maxRetryDelayMs = 2_000 }: { maxRetryDelayMs?: number } = {}) {
    this.#config = config;
    this.#slots = Array.from({ length: count }, () => null);
    this.#maxRetryDelayMs = maxRetryDelayMs;
  }

  async query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    const shared = this.#pick();
    shared.inFlight++;
    try {
      await shared.ready;
      this.#cork(shared);
      return await shared.client.query<R>(config);
    } finally {
      shared.inFlight--;
    }
  }

  /**
   * The statements of one turn of the event loop leave together: one socket write, and the
   * backend reads them in one go (16 callers of a trivial statement on one connection: 52,000/s
   * and 19 µs of client CPU each sent one by one, 93,000/s and 10 µs corked per turn).
   */
  #cork(shared: Shared): void {
    if (shared.corked) return;
    const { stream } = (shared.client as unknown as { connection: { stream: { cork(): void; uncork(): void } } })
      .connection;
    shared.corked = true;
    stream.cork();
    setImmediate(() => {
      shared.corked = false;
      stream.uncork();
    });
  }

  /**
   * The least busy connection, opening one where a slot is empty or broken (unless opening
   * failed lately: then only the live ones, and none may be left).
   */
  #pick(): Shared {
    if (this.#closed) throw new Error('the storage is closed');
    const mayOpen = Date.now() >= this.#retryAt;
    let best: Shared | null = null;
    for (let i = 0; i < this.#slots.length; i++) {
      let slot = this.#slots[i] ?? null;
      if (!slot || slot.broken) {
        if (!mayOpen) continue;
        slot?.client.end().catch(() => {}); // broken by an error, its socket may still be open
        slot = this.#slots[i] = this.#open();
      }
      if (slot.inFlight === 0) return slot;
      if (!best || slot.inFlight < best.inFlight) best = slot;
    }
    if (best) return best;
    const reason = this.#lastError instanceof Error ? this.#lastError.message : String(this.#lastError);
    throw new Error(`no connection to PostgreSQL (next attempt in ${this.#retryAt - Date.now()} ms): ${reason}`, {
      cause: this.#lastError,
    });
  }

  #open(): Shared {
    const client = new pg.Client({ ...this.#config, pipeline: true } as pg.ClientConfig);
    const shared: Shared = { client, ready: Promise.resolve(), inFlight: 0, broken: false, corked: false };
    // A dropped connection must not crash the process: mark it, the next statement opens another.
    const markBroken = () => {
      shared.broken = true;
    };
    client.on('error', markBroken);
    client.on('end', markBroken);
    shared.ready = client.connect().then(
      () => {
        this.#failures = 0;
      },
      (error: unknown) => {
        shared.broken = true;
        this.#failures++;
        this.#lastError = error;
        this.#retryAt =
          Date.now() +
          backoffDelay({ firstMs: FIRST_RETRY_DELAY_MS, maxMs: this.#maxRetryDelayMs }, this.#failures - 1);
        throw error;
      },
    );
    return shared;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#slots.map((slot) => slot?.client.end().catch(() => {})));
  }
}
