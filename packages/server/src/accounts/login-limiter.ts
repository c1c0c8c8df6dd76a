/**
 * Limits failed account logins so that passwords cannot be guessed at speed, without letting
 * anyone lock an account's owner out:
 * - per (account, client address) pair: `account_login_max_failures`. Failures from one address
 *   block that address's logins to that account only, so the owner, from their usual address,
 *   is never blocked by someone else's failures (a limit per account alone lets anybody lock
 *   out anybody with a few wrong passwords).
 * - per client address, whatever the account: `account_login_max_failures_per_ip`, so that one
 *   address cannot try a few passwords on many accounts.
 * An IPv6 client is counted by its /64 network (client-address.ts).
 *
 * Over a limit, logins with Basic credentials for that account from that address (or from that
 * address at all) get 429 errno 117 with `Retry-After` until the window ends — also with the
 * right password, else a guesser would learn which guess was right.
 *
 * A password check counts as a failure before it is made, atomically (also in Redis), so that
 * guesses sent in parallel cannot all pass; a right password gives it back (its pair starts
 * afresh, the address gets back its own point only: an attacker's own account must not refill
 * the address's allowance). A check that would go over a limit only because of checks not decided
 * yet (checks-in-flight.ts, across processes too) waits for them and counts again: only real
 * failures refuse a login, so many right passwords at once from one address are never 429.
 *
 * A login answered from the verified-password cache costs one counter read per key. If Redis
 * fails, logins are not limited (logged): the limiter must not take authentication down with it.
 */
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { addressKey } from '../auth/client-address.js';
import { ApiError, ERRNO } from '../errors.js';
import { ChecksInFlight } from './checks-in-flight.js';
import type { RateStore } from './rate-store.js';
import type { AccountSettings } from './settings.js';

/** Times a login waits for checks to be decided before its count is taken as it is (a bound). */
const MAX_WAITS = 400;

/** A password check counted by `countAttempt`, to be settled once decided. */
export interface LoginAttempt {
  /** The password was right: its pair starts afresh, the address gets its point back. */
  succeeded(): Promise<void>;
  /** The password was wrong: the failure stays counted. */
  failed(): Promise<void>;
  /** The check was not made after all (no turn to make it): neither count keeps its point. */
  notMade(): Promise<void>;
}

export class LoginLimiter {
  readonly #store: RateStore;
  readonly #byPair: RateLimiterAbstract;
  readonly #byAddress: RateLimiterAbstract;
  readonly #checks: ChecksInFlight;

  constructor(settings: AccountSettings, store: RateStore) {
    const duration = settings.account_login_window_seconds;
    this.#store = store;
    this.#byPair = store.counter('quire-login-account-ip', settings.account_login_max_failures, duration);
    this.#byAddress = store.counter('quire-login-ip', settings.account_login_max_failures_per_ip, duration);
    // Checks in flight in every process: never near its (huge) limit, a minute's window.
    const shared = store.shared ? store.counter('quire-login-checking', Number.MAX_SAFE_INTEGER, 60) : null;
    this.#checks = new ChecksInFlight(shared, (error) => store.unavailable(error));
  }

  /**
   * Throws 429 when this address used up its failures, on this account or on all. Reads only;
   * when undecided checks fill a limit, waits until they are decided (a cached password must not
   * get through while they could still refuse it).
   */
  async assertAllowed(accountId: string, address: string): Promise<void> {
    const keys = this.#keys(accountId, address);
    await this.#untilRoom(keys, () =>
      Promise.all([this.#state(this.#byPair, keys[0]), this.#state(this.#byAddress, keys[1])]),
    );
  }

  /**
   * Counts a password check about to be made as a failure; throws 429 if failures already fill
   * a limit. When undecided checks fill it (here or in another process), waits until one is
   * decided and counts again.
   */
  async countAttempt(accountId: string, address: string): Promise<LoginAttempt> {
    const keys = this.#keys(accountId, address);
    const limiters = [this.#byPair, this.#byAddress] as const;
    const giveBack = () =>
      Promise.all(limiters.map((limiter, index) => this.#giveBack(limiter, keys[index] as string)));
    await this.#untilRoom(
      keys,
      async () => {
        await this.#checks.announce(keys);
        return Promise.all(limiters.map((limiter, index) => this.#consume(limiter, keys[index] as string)));
      },
      // Not made: neither count keeps its point.
      async () => {
        await giveBack();
        await this.#checks.withdraw(keys);
      },
    );
    this.#checks.begin(keys);
    return {
      succeeded: async () => {
        try {
          await Promise.all([this.#byPair.delete(keys[0]), this.#byAddress.reward(keys[1], 1)]);
        } catch (error) {
          this.#store.unavailable(error);
        } finally {
          await this.#checks.finish(keys);
        }
      },
      failed: () => this.#checks.finish(keys),
      notMade: async () => {
        await giveBack();
        await this.#checks.finish(keys);
      },
    };
  }

  /** A password reset from this address: the failures of its pair are forgotten. */
  async forgetFailures(accountId: string, address: string): Promise<void> {
    try {
      await this.#byPair.delete(this.#keys(accountId, address)[0]);
    } catch (error) {
      this.#store.unavailable(error);
    }
  }

  /**
   * An account was just created from this address: its name was no account before, so the
   * attempts of its pair (credentials sent before the sign-up) were no guesses. They are given
   * back, to the address too.
   */
  async signedUp(accountId: string, address: string): Promise<void> {
    const [pair, key] = this.#keys(accountId, address);
    try {
      const state = await this.#byPair.get(pair);
      await this.#byPair.delete(pair);
      if (state && state.consumedPoints > 0) await this.#byAddress.reward(key, state.consumedPoints);
    } catch (error) {
      this.#store.unavailable(error);
    }
  }

  #keys(accountId: string, address: string): [pair: string, address: string] {
    const key = addressKey(address);
    // Account ids cannot hold a space: the pair's key is unambiguous.
    return [`${accountId} ${key}`, key];
  }

  /**
   * Measures the keys' counts until no limit is over (`undo` after each measure that found one):
   * 429 when failures fill one, a wait for an undecided check when such checks fill it.
   */
  async #untilRoom(
    keys: [string, string],
    measure: () => Promise<Array<number | null>>,
    undo?: () => Promise<void>,
  ): Promise<void> {
    for (let round = 0; ; round++) {
      const seen = keys.map((key) => this.#checks.see(key));
      const waits = await measure();
      if (waits.every((wait) => wait === null)) return;
      await undo?.();
      const pending = await Promise.all(
        waits.map((wait, index) =>
          wait === null ? undefined : this.#checks.decided(keys[index] as string, seen[index] ?? null),
        ),
      );
      if (round >= MAX_WAITS || pending.includes(null)) tooMany(waits);
      await Promise.race(pending.flatMap((decided) => (decided ? [decided.until] : [])));
    }
  }

  /** Milliseconds until the key may log in again, or null when it may now. */
  async #state(limiter: RateLimiterAbstract, key: string): Promise<number | null> {
    try {
      const state = await limiter.get(key);
      return state && state.consumedPoints >= limiter.points && state.msBeforeNext > 0 ? state.msBeforeNext : null;
    } catch (error) {
      this.#store.unavailable(error);
      return null;
    }
  }

  /** Adds a point; milliseconds until the key may log in again when that went over the limit. */
  async #consume(limiter: RateLimiterAbstract, key: string): Promise<number | null> {
    try {
      const state = await limiter.penalty(key, 1);
      return state.consumedPoints > limiter.points ? Math.max(state.msBeforeNext, 1000) : null;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) this.#store.unavailable(error);
      return null;
    }
  }

  async #giveBack(limiter: RateLimiterAbstract, key: string): Promise<void> {
    try {
      await limiter.reward(key, 1);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) this.#store.unavailable(error);
    }
  }
}

/** 429 errno 117 with the longest of the waits, if any. */
function tooMany(waits: Array<number | null | undefined>): void {
  const longest = Math.max(0, ...waits.filter((wait): wait is number => typeof wait === 'number'));
  if (longest === 0) return;
  throw new ApiError(429, ERRNO.CLIENT_REACHED_CAPACITY, {
    message: 'Too many failed login attempts, retry later.',
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(longest / 1000))) },
  });
}
