/**
 * Where the accounts' counters live (the login failures, the sign-ups per address): in memory,
 * per process, or with `account_login_limiter_redis_url` in Redis, shared by every process.
 */
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';

export interface LimiterLogger {
  warn(object: Record<string, unknown>, message: string): void;
}

export class RateStore {
  readonly #redis: Redis | null;
  #logger: LimiterLogger | null = null;

  constructor(redisUrl: string | null) {
    this.#redis = redisUrl
      ? new Redis(redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: false })
      : null;
    // Connection errors are also reported by the failing calls (`unavailable`).
    this.#redis?.on('error', () => {});
  }

  /** Whether the counters are shared by every process (Redis). */
  get shared(): boolean {
    return this.#redis !== null;
  }

  /** A fixed-window counter of `points` per `duration` seconds, its keys under `keyPrefix`. */
  counter(keyPrefix: string, points: number, duration: number): RateLimiterAbstract {
    return this.#redis
      ? new RateLimiterRedis({ storeClient: this.#redis, keyPrefix, points, duration })
      : new RateLimiterMemory({ keyPrefix, points, duration });
  }

  setLogger(logger: LimiterLogger): void {
    this.#logger = logger;
  }

  /** Redis failed: the limits are not applied (logged) rather than taking accounts down with it. */
  unavailable(error: unknown): void {
    this.#logger?.warn({ error: (error as Error)?.message }, 'accounts limiter store unavailable: not limited');
  }

  async close(): Promise<void> {
    await this.#redis?.quit().catch(() => this.#redis?.disconnect());
  }
}
