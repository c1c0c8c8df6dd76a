/**
 * Limits failed account logins so that passwords cannot be guessed at speed, without letting
 * anyone lock an account's owner out:
 * - per (account, client address) pair: `account_login_max_failures`. Failures from one address
 *   block that address's logins to that account only, so the owner, from their usual address,
 *   is never blocked by someone else's failures (a limit per account alone lets anybody lock
 *   out anybody with a few wrong passwords).
 * - per client address, whatever the account: `account_login_max_failures_per_ip`, so that one
 *   address cannot try a few passwords on many accounts.
 * An IPv6 client is counted by its /64 network: one host commonly holds a whole /64.
 *
 * Over a limit, logins with Basic credentials for that account from that address (or from that
 * address at all) get 429 errno 117 with `Retry-After` until the window ends — also with the
 * right password, else a guesser would learn which guess was right.
 *
 * Counters live in memory (per process) or, with `account_login_limiter_redis_url`, in Redis,
 * shared by every process. A login answered from the verified-password cache costs one counter
 * read per key; a password check counts as a failure first and is given back when right. A
 * success resets its pair's counter, and only gives back the address its own point (an
 * attacker's own account must not refill the address's allowance). If Redis fails, logins are
 * not limited (logged): the limiter must not take authentication down with it.
 */
import { isIPv6 } from 'node:net';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { AccountSettings } from './settings.js';
import { ApiError, ERRNO } from '../errors.js';

export interface LoginLimiterLogger {
  warn(object: Record<string, unknown>, message: string): void;
}

/**
 * The key an address is counted under: an IPv4 address itself (IPv4-mapped IPv6 included), the
 * /64 network of an IPv6 address. Other strings as they are.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  const plain = address.split('%')[0] ?? address; // zone index of a link-local address
  if (!isIPv6(plain)) return address;
  const [head = '', tail] = plain.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  // Only the first four groups matter; an embedded IPv4 tail (two groups) sits after them.
  const missing = 8 - before.length - after.length - (after.at(-1)?.includes('.') ? 1 : 0);
  const full = [...before, ...Array<string>(Math.max(missing, 0)).fill('0'), ...after];
  return `${full
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

export class LoginLimiter {
  readonly #byPair: RateLimiterAbstract;
  readonly #byAddress: RateLimiterAbstract;
  readonly #redis: Redis | null;
  #logger: LoginLimiterLogger | null = null;

  constructor(settings: AccountSettings) {
    const duration = settings.account_login_window_seconds;
    const url = settings.account_login_limiter_redis_url;
    this.#redis = url
      ? new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: false })
      : null;
    // Connection errors are also reported by the failing calls below.
    this.#redis?.on('error', () => {});
    const make = (keyPrefix: string, points: number) =>
      this.#redis
        ? new RateLimiterRedis({ storeClient: this.#redis, keyPrefix, points, duration })
        : new RateLimiterMemory({ keyPrefix, points, duration });
    this.#byPair = make('quire-login-account-ip', settings.account_login_max_failures);
    this.#byAddress = make('quire-login-ip', settings.account_login_max_failures_per_ip);
  }

  setLogger(logger: LoginLimiterLogger): void {
    this.#logger = logger;
  }

  /** Throws 429 when this address used up its failures, on this account or on all. Reads only. */
  async assertAllowed(accountId: string, address: string): Promise<void> {
    const key = addressKey(address);
    tooMany(await Promise.all([this.#state(this.#byPair, pairKey(accountId, key)), this.#state(this.#byAddress, key)]));
  }

  /**
   * Counts a password check about to be made as a failure, and throws 429 if that goes over a
   * limit. Counted before the check, atomically (also in Redis), so that guesses sent in
   * parallel cannot all pass `assertAllowed` first; a right password gives it back.
   */
  async countAttempt(accountId: string, address: string): Promise<void> {
    const key = addressKey(address);
    tooMany(
      await Promise.all([this.#consume(this.#byPair, pairKey(accountId, key)), this.#consume(this.#byAddress, key)]),
    );
  }

  /** The password counted by `countAttempt` was right: its pair starts afresh, the address gets its point back. */
  async attemptSucceeded(accountId: string, address: string): Promise<void> {
    const key = addressKey(address);
    try {
      await Promise.all([this.#byPair.delete(pairKey(accountId, key)), this.#byAddress.reward(key, 1)]);
    } catch (error) {
      this.#storeFailed(error);
    }
  }

  /** A password reset from this address: the failures of its pair are forgotten. */
  async forgetFailures(accountId: string, address: string): Promise<void> {
    try {
      await this.#byPair.delete(pairKey(accountId, addressKey(address)));
    } catch (error) {
      this.#storeFailed(error);
    }
  }

  async close(): Promise<void> {
    await this.#redis?.quit().catch(() => this.#redis?.disconnect());
  }

  /** Milliseconds until the key may log in again, or null when it may now. */
  async #state(limiter: RateLimiterAbstract, key: string): Promise<number | null> {
    try {
      const state = await limiter.get(key);
      return state && state.consumedPoints >= limiter.points && state.msBeforeNext > 0 ? state.msBeforeNext : null;
    } catch (error) {
      this.#storeFailed(error);
      return null;
    }
  }

  /** Adds a point; milliseconds until the key may log in again when that went over the limit. */
  async #consume(limiter: RateLimiterAbstract, key: string): Promise<number | null> {
    try {
      const state = await limiter.penalty(key, 1);
      return state.consumedPoints > limiter.points ? Math.max(state.msBeforeNext, 1000) : null;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) this.#storeFailed(error);
      return null;
    }
  }

  #storeFailed(error: unknown): void {
    this.#logger?.warn({ error: (error as Error)?.message }, 'login limiter store unavailable: logins not limited');
  }
}

/** 429 errno 117 with the longest of the waits, if any. */
function tooMany(waits: Array<number | null>): void {
  const longest = Math.max(0, ...waits.filter((wait): wait is number => wait !== null));
  if (longest === 0) return;
  throw new ApiError(429, ERRNO.CLIENT_REACHED_CAPACITY, {
    message: 'Too many failed login attempts, retry later.',
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(longest / 1000))) },
  });
}

/** Account ids cannot hold a space: the pair's key is unambiguous. */
function pairKey(accountId: string, addressKey: string): string {
  return `${accountId} ${addressKey}`;
}
