/**
 * The event loop shared fairly between owners (issue 36). Work a request does on the loop in
 * slices (a page's chunks, parsing, projecting and writing its objects, a batch's sub-requests)
 * asks its owner's turn before each slice. In each round — one turn of the event loop — an owner
 * runs slices for at most `TURN_MS`; past that, its slices wait for the next round, in arrival
 * order, and every owner that waits gets one slice per round. Between rounds the loop polls I/O,
 * so another owner's requests are served after at most one slice of each busy owner, however
 * many requests each has in progress (before: one slice per request, so four heavy requests of
 * one user put four slices before every step of a bystander's). Cheap requests (a GET of one
 * object) never ask: they run whole when their I/O arrives.
 *
 * Process-wide: there is one event loop, whatever the number of apps in the process.
 */
import { performance } from 'node:perf_hooks';

/** An owner's share of each round, in ms of slices. */
export const TURN_MS = 2;

const NOW: Promise<void> = Promise.resolve();

export class LoopTurns {
  /** Owners that ran in the current round, with when their first slice of it began. */
  readonly #ran = new Map<string, number>();
  /** Owners waiting for a later round (insertion order: the order they are served in). */
  readonly #waiting = new Map<string, Array<() => void>>();
  #roundScheduled = false;
  readonly #turnMs: number;

  constructor(turnMs = TURN_MS) {
    this.#turnMs = turnMs;
  }

  /** Slices waiting for a later round (tests). */
  get waiting(): number {
    let count = 0;
    for (const queue of this.#waiting.values()) count += queue.length;
    return count;
  }

  /**
   * Resolves when `owner` may run its next slice: at once while its share of this round lasts
   * (and none of its slices wait already), else in a later round.
   */
  take(owner: string): Promise<void> {
    const queue = this.#waiting.get(owner);
    if (!queue) {
      const began = this.#ran.get(owner);
      if (began === undefined) {
        this.#ran.set(owner, performance.now());
        this.#scheduleRound();
        return NOW;
      }
      if (performance.now() - began < this.#turnMs) return NOW;
    }
    this.#scheduleRound();
    return new Promise((resolve) => {
      if (queue) queue.push(resolve);
      else this.#waiting.set(owner, [resolve]);
    });
  }

  /** The next round starts after the loop's next poll of I/O (setImmediate runs after it). */
  #scheduleRound(): void {
    if (this.#roundScheduled) return;
    this.#roundScheduled = true;
    setImmediate(this.#nextRound);
  }

  readonly #nextRound = (): void => {
    this.#roundScheduled = false;
    this.#ran.clear();
    if (this.#waiting.size === 0) return;
    const now = performance.now();
    // One slice of every waiting owner; the slices run once this callback returns (promise jobs).
    for (const [owner, queue] of this.#waiting) {
      const next = queue.shift()!;
      if (queue.length === 0) this.#waiting.delete(owner);
      this.#ran.set(owner, now);
      next();
    }
    this.#scheduleRound();
  };
}

/** The process's turns. */
export const loopTurns = new LoopTurns();

/** What a slice awaits before it runs: `owner`'s turn (an owner key: session-budget.ts `sessionOwner`). */
export type Turn = () => Promise<void>;

export function turnOf(owner: string): Turn {
  return () => loopTurns.take(owner);
}
