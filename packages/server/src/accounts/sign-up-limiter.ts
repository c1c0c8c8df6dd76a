/**
 * Accounts created per client address (IPv6: per /64), whoever creates them but administrators:
 * `account_create_max_per_address` per `account_create_window_seconds`, so that an open sign-up
 * cannot mint identities in bulk (each would get its own share of every cap per user). Over the
 * limit: 429 errno 117 with `Retry-After`, before the password is hashed. Counted where the
 * login failures are (memory, or Redis for every process); if Redis fails, sign-ups are not
 * limited (logged).
 */
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { addressKey } from '../auth/client-address.js';
import { ApiError, ERRNO } from '../errors.js';
import type { RateStore } from './rate-store.js';
import type { AccountSettings } from './settings.js';

export class SignUpLimiter {
  readonly #store: RateStore;
  readonly #byAddress: RateLimiterAbstract;

  constructor(settings: AccountSettings, store: RateStore) {
    this.#store = store;
    this.#byAddress = store.counter(
      'quire-sign-up-ip',
      settings.account_create_max_per_address,
      settings.account_create_window_seconds,
    );
  }

  /** Counts one account about to be created from `address`; throws 429 over the limit. */
  async count(address: string): Promise<void> {
    let wait: number;
    try {
      await this.#byAddress.consume(addressKey(address), 1);
      return;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) {
        this.#store.unavailable(error);
        return;
      }
      wait = error.msBeforeNext;
    }
    throw new ApiError(429, ERRNO.CLIENT_REACHED_CAPACITY, {
      message: 'Too many accounts created from this address, retry later.',
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(wait / 1000))) },
    });
  }
}
