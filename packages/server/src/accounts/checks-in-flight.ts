/**
 * The password checks being made, per limiter key (an account and address pair, an address), so
 * that a login over a limit only because of checks not yet decided waits for them instead of
 * being refused (login-limiter.ts): only real failures refuse a login.
 *
 * This process's checks wake their waiters when they end. With the counters in Redis, checks
 * are also announced in a counter of their own there, before their attempt is counted: a
 * process that finds a limit filled by another's undecided checks polls until they are decided
 * (a check that never ends, its process gone, stops counting when that counter's minute ends).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** How long a process waits before counting again when another process's checks fill a limit. */
const POLL_MS = 25;

interface Entry {
  inFlight: number;
  /** Checks ended since the entry was made: a waiter that saw fewer counts again at once. */
  ended: number;
  wake: Set<() => void>;
}

/** What a login saw of a key before counting its attempt. */
export type Sighting = { entry: Entry; ended: number } | null;

export class ChecksInFlight {
  readonly #entries = new Map<string, Entry>();
  /** Checks announced by every process (Redis); null when this process is the only one counting. */
  readonly #shared: RateLimiterAbstract | null;
  readonly #unavailable: (error: unknown) => void;

  constructor(shared: RateLimiterAbstract | null, unavailable: (error: unknown) => void) {
    this.#shared = shared;
    this.#unavailable = unavailable;
  }

  see(key: string): Sighting {
    const entry = this.#entries.get(key);
    return entry ? { entry, ended: entry.ended } : null;
  }

  /** Before an attempt is counted: other processes must see it as undecided, not as a failure. */
  async announce(keys: readonly string[]): Promise<void> {
    await this.#shift(keys, 1);
  }

  /** The attempt announced was not made. */
  async withdraw(keys: readonly string[]): Promise<void> {
    await this.#shift(keys, -1);
  }

  /** The check announced starts here. */
  begin(keys: readonly string[]): void {
    for (const key of keys) {
      let entry = this.#entries.get(key);
      if (!entry) {
        entry = { inFlight: 0, ended: 0, wake: new Set() };
        this.#entries.set(key, entry);
      }
      entry.inFlight++;
    }
  }

  /** The check is decided (its counts updated): its waiters count again. */
  async finish(keys: readonly string[]): Promise<void> {
    await this.#shift(keys, -1);
    for (const key of keys) {
      const entry = this.#entries.get(key);
      if (!entry) continue;
      entry.inFlight--;
      entry.ended++;
      for (const wake of entry.wake) wake();
      entry.wake.clear();
      if (entry.inFlight === 0) this.#entries.delete(key);
    }
  }

  /**
   * After a count over the limit on `key`: `until` resolves when it is worth counting again — a check
   * in flight here ended (at once if one did since `seen`), or a while later when other
   * processes' checks are in flight; null when none is: the count is real failures.
   */
  async decided(key: string, seen: Sighting): Promise<{ until: Promise<unknown> } | null> {
    const entry = this.#entries.get(key);
    if (seen && (seen.entry !== entry || seen.entry.ended !== seen.ended)) return { until: Promise.resolve() };
    if (entry && entry.inFlight > 0) return { until: new Promise<void>((resolve) => entry.wake.add(resolve)) };
    if (!this.#shared) return null;
    try {
      const announced = await this.#shared.get(key);
      return announced && announced.consumedPoints > 0 ? { until: sleep(POLL_MS) } : null;
    } catch (error) {
      this.#unavailable(error);
      return null;
    }
  }

  async #shift(keys: readonly string[], points: number): Promise<void> {
    const shared = this.#shared;
    if (!shared) return;
    try {
      await Promise.all(keys.map((key) => (points > 0 ? shared.penalty(key, points) : shared.reward(key, -points))));
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) this.#unavailable(error);
    }
  }
}
