/**
 * Checks of a password against an account's stored hash, counted by the login limiter, and
 * made once for identical logins in flight: parallel first requests of one client carrying the
 * same credentials (a cold password cache, every `account_cache_ttl_seconds`) share one argon2
 * verification and count one attempt, not one each — which used to fill the failure limit with
 * right passwords.
 *
 * Logins share a check when they come from the same address (the attempt is counted there)
 * with the same id and password, against the same stored hash (one read inside a batch that
 * changed the password does not decide for another request).
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { HashTurns } from './hash-turns.js';
import type { LoginLimiter } from './login-limiter.js';
import { verifyPassword } from './password.js';

export interface PasswordCheck {
  id: string;
  password: string;
  address: string;
  /** The account's argon2 hash; null when the name is no account (or holds no argon2 hash). */
  stored: string | null;
  /** Counted by the login limiter (a temporary password is not: it is a 122-bit UUID4). */
  counted: boolean;
}

export class PasswordChecks {
  readonly #limiter: LoginLimiter;
  readonly #dummyHash: () => Promise<string>;
  readonly #key = randomBytes(32);
  readonly #inFlight = new Map<string, Promise<boolean>>();
  readonly #turns: HashTurns;

  constructor(limiter: LoginLimiter, dummyHash: () => Promise<string>, turns: HashTurns) {
    this.#limiter = limiter;
    this.#dummyHash = dummyHash;
    this.#turns = turns;
  }

  /**
   * Whether the password matches the stored hash. One verification whether the name is an
   * account or not (against a dummy hash then): the time tells nothing. Throws 429 over the limits.
   */
  matches(check: PasswordCheck): Promise<boolean> {
    const key = this.#flightKey(check);
    let flight = this.#inFlight.get(key);
    if (!flight) {
      flight = this.#verify(check).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, flight);
    }
    return flight;
  }

  async #verify({ id, password, address, stored, counted }: PasswordCheck): Promise<boolean> {
    const attempt = counted ? await this.#limiter.countAttempt(id, address) : null;
    let matches = false;
    let made = false;
    try {
      const against = stored ?? (await this.#dummyHash());
      matches = await this.#turns.run(address, () => {
        made = true;
        return verifyPassword(against, password);
      });
      matches &&= stored !== null;
    } finally {
      await (matches ? attempt?.succeeded() : made ? attempt?.failed() : attempt?.notMade());
    }
    return matches;
  }

  /** Keyed by a digest under a per-process key: the password is not kept. */
  #flightKey({ id, password, address, stored, counted }: PasswordCheck): string {
    return createHmac('sha256', this.#key)
      .update(JSON.stringify([id, password, address, stored, counted]), 'utf8')
      .digest('base64');
  }
}
