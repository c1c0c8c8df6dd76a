/**
 * Remembers, per process, the (account id, password) pairs that recently passed the argon2
 * check, which costs tens of milliseconds by design: a client sending Basic Auth on every
 * request would otherwise pay it each time.
 *
 * Entries are keyed by HMAC-SHA256(random per-process key, id NUL password): the password is
 * not kept, and the digest is useless outside this process. A lookup by that digest is
 * not a comparison of secrets an attacker could time: the key is unknown to them. The digest
 * is computed for every lookup, whether the id has entries or not, so that a miss takes as
 * long for a name that never logged in (or is no account) as for one that did.
 *
 * Entries expire a fixed time after the check (never refreshed on use), and at most
 * `maxEntries` are kept (least recently used dropped first). Changing or deleting
 * an account forgets its entries here at once; other processes serving the same database keep
 * theirs until they expire, so an old password may keep working there for at most
 * `account_cache_ttl_seconds` (30 s by default) — the price of not reading the account and
 * hashing on every request, as Kinto does with its cache. Set it to 0 for no caching at all.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';

export class VerifiedCredentialsCache {
  readonly #key = randomBytes(32);
  /** `<account id>NUL<digest>` of each verified pair (account ids never hold NUL); null: caching off. */
  readonly #verified: LRUCache<string, true> | null;

  constructor(ttlSeconds: number, maxEntries: number) {
    this.#verified =
      ttlSeconds > 0 ? new LRUCache({ max: maxEntries, ttl: ttlSeconds * 1000, updateAgeOnGet: false }) : null;
  }

  #entry(id: string, password: string): string {
    const digest = createHmac('sha256', this.#key)
      .update(id, 'utf8')
      .update('\0')
      .update(password, 'utf8')
      .digest('base64');
    return `${id}\0${digest}`;
  }

  has(id: string, password: string): boolean {
    return this.#verified?.get(this.#entry(id, password)) === true;
  }

  remember(id: string, password: string): void {
    this.#verified?.set(this.#entry(id, password), true);
  }

  /** Forgets every remembered password of the account (password changed, account deleted). */
  forget(id: string): void {
    if (!this.#verified) return;
    const prefix = `${id}\0`;
    // Rare (a password change), and bounded by maxEntries.
    for (const key of [...this.#verified.keys()]) if (key.startsWith(prefix)) this.#verified.delete(key);
  }
}
