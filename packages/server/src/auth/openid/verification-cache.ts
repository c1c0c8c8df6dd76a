/**
 * Tokens already verified, keyed by an HMAC of the token (the token itself is never kept), each
 * until its own expiry; bounded, least recently used entries dropped first (lru-cache: a hit
 * refreshes an entry's place, not its lifetime, so a revoked token ages out). Concurrent checks
 * of one token share a single call to the provider.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';

type Verified = { userId: string; ttlSeconds: number } | null;

export class VerificationCache {
  private readonly entries: LRUCache<string, string>;
  private readonly pending = new Map<string, Promise<Verified>>();
  // Per process: keys are useless outside it, and cannot be matched against known tokens.
  private readonly key = randomBytes(32);

  constructor(maxEntries: number) {
    this.entries = new LRUCache<string, string>({ max: maxEntries });
  }

  keyOf(token: string): string {
    return createHmac('sha256', this.key).update(token, 'utf8').digest('base64url');
  }

  /** The user id for `token`, from the cache or else from `verify` (whose success is cached). */
  async resolve(token: string, verify: () => Promise<Verified>): Promise<string | null> {
    const key = this.keyOf(token);
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;

    let check = this.pending.get(key);
    if (!check) {
      check = verify().finally(() => this.pending.delete(key));
      this.pending.set(key, check);
    }
    const verified = await check;
    if (!verified) return null;
    if (verified.ttlSeconds > 0 && !this.entries.has(key))
      this.entries.set(key, verified.userId, { ttl: verified.ttlSeconds * 1000 });
    return verified.userId;
  }

  get size(): number {
    return this.entries.size;
  }
}
