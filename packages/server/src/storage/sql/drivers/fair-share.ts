/**
 * The pool's connections shared fairly among the callers the work is for (issue 36 item 4): one
 * owner (an identity, or an address for anonymous callers) holds at most `perOwner` of them at
 * once, and when connections are short the waiting owners are served in turn, one connection
 * each, not in arrival order. So twelve slow requests of one user take `perOwner` connections,
 * and another user's request finds one free (or is next in line) instead of queueing behind them.
 *
 * Work for nobody in particular (the server's own: history drain, streams' re-reads, index
 * upkeep) has no cap of its own but takes its turn like an owner.
 */
import { BackendError } from '../../errors.js';

interface Waiter {
  grant(): void;
  fail(error: Error): void;
}

interface Owner {
  held: number;
  waiting: Waiter[];
}

/** Gives a slot back (once). */
export type Release = () => void;

const NOBODY = '\u0000server';

export class FairShare {
  readonly #slots: number;
  readonly #perOwner: number;
  readonly #waitMs: number;
  #held = 0;
  /** Owners holding or waiting; iteration order is the round's order (an owner served moves last). */
  readonly #owners = new Map<string, Owner>();

  /**
   * @param slots connections handed out at once (the pool's size)
   * @param perOwner at most this many to one owner
   * @param waitMs how long a caller waits for a slot before failing (503)
   */
  constructor(slots: number, perOwner: number, waitMs: number) {
    this.#slots = Math.max(1, slots);
    this.#perOwner = Math.max(1, Math.min(perOwner, this.#slots));
    this.#waitMs = waitMs;
  }

  /** Slots held now, by anyone, and callers waiting (metrics, tests). */
  get stats(): { held: number; waiting: number } {
    let waiting = 0;
    for (const owner of this.#owners.values()) waiting += owner.waiting.length;
    return { held: this.#held, waiting };
  }

  /** A slot for `owner`, now or in its turn; rejects when `signal` aborts or after `waitMs`. */
  acquire(ownerKey: string | undefined, signal?: AbortSignal): Promise<Release> {
    const key = ownerKey ?? NOBODY;
    if (signal?.aborted) return Promise.reject(aborted(signal));
    const owner = this.#owners.get(key) ?? { held: 0, waiting: [] };
    this.#owners.set(key, owner);
    if (owner.waiting.length === 0 && this.#mayTake(key, owner)) return Promise.resolve(this.#take(key, owner));
    const entry = owner;
    return new Promise<Release>((resolve, reject) => {
      const stop = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const leave = (error: Error) => {
        stop();
        entry.waiting.splice(entry.waiting.indexOf(waiter), 1);
        this.#forget(key, entry);
        reject(error);
      };
      const waiter: Waiter = {
        grant: () => {
          stop();
          resolve(this.#take(key, entry));
        },
        fail: leave,
      };
      const onAbort = () => leave(aborted(signal!));
      const timer = setTimeout(
        () => leave(new BackendError(`no database connection free within ${this.#waitMs} ms (pool share)`)),
        this.#waitMs,
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      entry.waiting.push(waiter);
    });
  }

  #mayTake(key: string, owner: Owner): boolean {
    return this.#held < this.#slots && (key === NOBODY || owner.held < this.#perOwner);
  }

  #take(key: string, owner: Owner): Release {
    this.#held++;
    owner.held++;
    // Served: to the end of the round.
    this.#owners.delete(key);
    this.#owners.set(key, owner);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held--;
      owner.held--;
      this.#forget(key, owner);
      this.#next();
    };
  }

  /** The first owner of the round that waits and may take a slot gets one. */
  #next(): void {
    if (this.#held >= this.#slots) return;
    for (const [key, owner] of this.#owners) {
      if (owner.waiting.length > 0 && this.#mayTake(key, owner)) {
        owner.waiting.shift()!.grant();
        return;
      }
    }
  }

  #forget(key: string, owner: Owner): void {
    if (owner.held === 0 && owner.waiting.length === 0 && this.#owners.get(key) === owner) this.#owners.delete(key);
  }
}

/** The error for work stopped by its signal (its client went away, its budget ran out). */
export function aborted(signal: AbortSignal): BackendError {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'the request was stopped';
  return new BackendError(`stopped before it ran: ${reason}`, { cause: signal.reason });
}
