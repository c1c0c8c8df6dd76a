/**
 * The client address a batch sub-request's login counts against. Sub-requests are injected by
 * the server itself and carry no client address; the credentials they inherit from their batch
 * logged in moments before, from the batch's address, which this remembers (for a batch's
 * lifetime, per process: a batch runs in the process it reached). Credentials that no request
 * from an address logged in with recently (a sub-request's own `Authorization`) share one
 * pseudo-address, `BATCH_ADDRESS`: guesses sent that way are limited like any others, and
 * only ever block that way of sending them, never the owner's batches.
 *
 * Keyed by HMAC-SHA256(random per-process key, id NUL password), as the verified-password
 * cache: no password is kept. Only successful logins are remembered, so its size is bounded by
 * the valid credentials in use; past `MAX_ENTRIES` the oldest go first.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const BATCH_ADDRESS = 'batch-sub-request';
const MAX_ENTRIES = 10_000;

export class LoginAddresses {
  readonly #key = randomBytes(32);
  readonly #ttlMs: number;
  /** digest → [address, expiry (ms since epoch)], oldest first. */
  readonly #entries = new Map<string, [string, number]>();

  constructor(ttlSeconds: number) {
    this.#ttlMs = ttlSeconds * 1000;
  }

  #digest(id: string, password: string): string {
    return createHmac('sha256', this.#key).update(id, 'utf8').update('\0').update(password, 'utf8').digest('base64');
  }

  remember(id: string, password: string, address: string): void {
    const digest = this.#digest(id, password);
    this.#entries.delete(digest); // re-inserted last: the Map stays in expiry order
    this.#entries.set(digest, [address, Date.now() + this.#ttlMs]);
    const now = Date.now();
    for (const [oldest, [, expires]] of this.#entries) {
      if (this.#entries.size <= MAX_ENTRIES && expires > now) break;
      this.#entries.delete(oldest);
    }
  }

  /** The address these credentials last logged in from, or the batch pseudo-address. */
  addressOf(id: string, password: string): string {
    const entry = this.#entries.get(this.#digest(id, password));
    return entry && entry[1] > Date.now() ? entry[0] : BATCH_ADDRESS;
  }
}
