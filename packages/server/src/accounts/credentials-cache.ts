/**
 * Remembers, per process, the (account id, password) pairs that recently passed the argon2
 * check, which costs tens of milliseconds by design: a client sending Basic Auth on every
 * request would otherwise pay it each time.
 *
 * Entries are keyed by HMAC-SHA256(random per-process key, id NUL password): the password is
 * not kept, and the digest is useless outside this process. A Map lookup by that digest is
 * not a comparison of secrets an attacker could time: the key is unknown to them. The digest
 * is computed for every lookup, whether the id has entries or not, so that a miss takes as
 * long for a name that never logged in (or is no account) as for one that did.
 *
 * Entries expire a fixed time after the check (never refreshed on use). Changing or deleting
 * an account forgets its entries here at once; other processes serving the same database keep
 * theirs until they expire, so an old password may keep working there for at most
 * `account_cache_ttl_seconds` (30 s by default) — the price of not reading the account and
 * hashing on every request, as Kinto does with its cache. Set it to 0 for no caching at all.
 */
import { createHmac, randomBytes } from 'node:crypto';

const SWEEP_EVERY = 1000;

export class VerifiedCredentialsCache {
  readonly #key = randomBytes(32);
  readonly #ttlMs: number;
  /** account id → digest → expiry (ms since epoch). */
  readonly #byAccount = new Map<string, Map<string, number>>();
  #insertions = 0;

  constructor(ttlSeconds: number) {
    this.#ttlMs = ttlSeconds * 1000;
  }

  #digest(id: string, password: string): string {
    return createHmac('sha256', this.#key).update(id, 'utf8').update('\0').update(password, 'utf8').digest('base64');
  }

  has(id: string, password: string): boolean {
    if (this.#ttlMs === 0) return false;
    const digest = this.#digest(id, password);
    const entries = this.#byAccount.get(id);
    const expires = entries?.get(digest);
    if (expires === undefined) return false;
    if (expires > Date.now()) return true;
    entries?.delete(digest);
    if (entries?.size === 0) this.#byAccount.delete(id);
    return false;
  }

  remember(id: string, password: string): void {
    if (this.#ttlMs === 0) return;
    let entries = this.#byAccount.get(id);
    if (!entries) this.#byAccount.set(id, (entries = new Map()));
    entries.set(this.#digest(id, password), Date.now() + this.#ttlMs);
    if (++this.#insertions % SWEEP_EVERY === 0) this.#sweep();
  }

  /** Forgets every remembered password of the account (password changed, account deleted). */
  forget(id: string): void {
    this.#byAccount.delete(id);
  }

  #sweep(): void {
    const now = Date.now();
    for (const [id, entries] of this.#byAccount) {
      for (const [digest, expires] of entries) if (expires <= now) entries.delete(digest);
      if (entries.size === 0) this.#byAccount.delete(id);
    }
  }
}
