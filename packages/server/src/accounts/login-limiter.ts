/**
 * Limits wrong account passwords, per account id and per client address, so that passwords
 * cannot be guessed at speed. Over a limit, logins with Basic credentials for that account (or
 * from that address) get 429 errno 117 with `Retry-After` until the window ends — also with the
 * right password, else a guesser would learn which guess was right.
 *
 * Counters live in memory (per process) or, with `account_login_limiter_redis_url`, in Redis,
 * shared by every process. Successful logins cost one counter read per key, no write; a
 * success resets the account's counter. If Redis fails, logins are not limited (logged): the
 * limiter must not take authentication down with it.
 */
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Settings } from '../config.js';
import { ApiError, ERRNO } from '../errors.js';

export interface LoginLimiterLogger {
  warn(object: Record<string, unknown>, message: string): void;
}

export class LoginLimiter {
  readonly #byAccount: RateLimiterAbstract;
  readonly #byAddress: RateLimiterAbstract;
  readonly #redis: Redis | null;
  #logger: LoginLimiterLogger | null = null;

  constructor(settings: Settings) {
    const duration = settings.account_login_window_seconds;
    const url = settings.account_login_limiter_redis_url;
    this.#redis = url ? new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: false }) : null;
    // Connection errors are also reported by the failing calls below.
    this.#redis?.on('error', () => {});
    const make = (keyPrefix: string, points: number) =>
      this.#redis
        ? new RateLimiterRedis({ storeClient: this.#redis, keyPrefix, points, duration })
        : new RateLimiterMemory({ keyPrefix, points, duration });
    this.#byAccount = make('quire-login-account', settings.account_login_max_failures);
    this.#byAddress = make('quire-login-ip', settings.account_login_max_failures_per_ip);
  }

  setLogger(logger: LoginLimiterLogger): void {
    this.#logger = logger;
  }

  /** Throws 429 when the account or the address used up its failures. */
  async assertAllowed(accountId: string, address: string | undefined): Promise<void> {
    const [account, client] = await Promise.all([
      this.#state(this.#byAccount, accountId),
      address === undefined ? null : this.#state(this.#byAddress, address),
    ]);
    const waits = [account, client].filter((wait): wait is number => wait !== null);
    if (waits.length === 0) return;
    const seconds = Math.max(1, Math.ceil(Math.max(...waits) / 1000));
    throw new ApiError(429, ERRNO.CLIENT_REACHED_CAPACITY, {
      message: 'Too many failed login attempts, retry later.',
      headers: { 'Retry-After': String(seconds) },
    });
  }

  async recordFailure(accountId: string, address: string | undefined): Promise<void> {
    await Promise.all([this.#penalize(this.#byAccount, accountId), address === undefined ? null : this.#penalize(this.#byAddress, address)]);
  }

  async recordSuccess(accountId: string): Promise<void> {
    try {
      await this.#byAccount.delete(accountId);
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

  async #penalize(limiter: RateLimiterAbstract, key: string): Promise<void> {
    try {
      await limiter.penalty(key, 1);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) this.#storeFailed(error);
    }
  }

  #storeFailed(error: unknown): void {
    this.#logger?.warn({ error: (error as Error)?.message }, 'login limiter store unavailable: logins not limited');
  }
}
