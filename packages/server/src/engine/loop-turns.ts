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
 * Work done elsewhere for an owner — the database time of its costly statements (storage/sql
 * pg-statements.ts) — is charged to its turns (`charge`): its next slice waits one round per
 * `TURN_MS` of it (at most `MAX_DEBT_MS`). A round lasts as long as the other owners' work in
 * it, so a lone owner pays in a few idle turns of the loop, and one beside others gives them the
 * loop for about as long as the database worked for it: on PostgreSQL one user's listings cost
 * about as much of the machine's CPU there as in the server.
 *
 * Process-wide: there is one event loop, whatever the number of apps in the process.
 */
import { performance } from 'node:perf_hooks';

/** An owner's share of each round, in ms of slices. */
export const TURN_MS = 2;
/** The most an owner is charged for work done elsewhere (a long statement is bounded by the store's own shares). */
export const MAX_DEBT_MS = 20;

const NOW: Promise<void> = Promise.resolve();

export class LoopTurns {
  /** Owners that ran in the current round, with when their first slice of it began. */
  readonly #ran = new Map<string, number>();
  /** Owners waiting for a later round (insertion order: the order they are served in). */
  readonly #waiting = new Map<string, Array<() => void>>();
  /** What owners were charged (`charge`) and have not paid in rounds yet, in ms. */
  readonly #debts = new Map<string, number>();
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
    if (!queue && !this.#debts.has(owner)) {
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

  /** Charges `owner` for `ms` of work done for it elsewhere: its next slices wait a round per `TURN_MS`. */
  charge(owner: string, ms: number): void {
    if (!(ms > 0)) return;
    this.#debts.set(owner, Math.min(MAX_DEBT_MS, (this.#debts.get(owner) ?? 0) + ms));
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
    // Every round pays a turn's worth of each debt, whether its owner waits or not.
    for (const [owner, debt] of this.#debts) {
      if (debt > this.#turnMs) this.#debts.set(owner, debt - this.#turnMs);
      else this.#debts.delete(owner);
    }
    if (this.#waiting.size === 0) {
      if (this.#debts.size > 0) this.#scheduleRound();
      return;
    }
    const now = performance.now();
    // One slice of every waiting owner out of debt; the slices run once this callback returns (promise jobs).
    for (const [owner, queue] of this.#waiting) {
      if (this.#debts.has(owner)) continue;
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
