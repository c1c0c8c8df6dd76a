/**
 * Tokens already verified, keyed by an HMAC of the token (the token itself is never kept), each
 * until its own expiry; bounded, least recently used entries dropped first. Concurrent checks of
 * one token share a single call to the provider.
 */
import { createHmac, randomBytes } from 'node:crypto';

interface Entry {
  userId: string;
  expiresAt: number;
}

export class VerificationCache {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<{ userId: string; ttlSeconds: number } | null>>();
  // Per process: keys are useless outside it, and cannot be matched against known tokens.
  private readonly key = randomBytes(32);

  constructor(private readonly maxEntries: number) {}

  keyOf(token: string): string {
    return createHmac('sha256', this.key).update(token, 'utf8').digest('base64url');
  }

  /** The user id for `token`, from the cache or else from `verify` (whose success is cached). */
  async resolve(token: string, verify: () => Promise<{ userId: string; ttlSeconds: number } | null>, now = Date.now()): Promise<string | null> {
    const key = this.keyOf(token);
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > now) {
      // Refresh its place in the LRU order, not its lifetime (a revoked token ages out).
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.userId;
    }
    if (hit) this.entries.delete(key);

    let check = this.pending.get(key);
    if (!check) {
      check = verify().finally(() => this.pending.delete(key));
      this.pending.set(key, check);
    }
    const verified = await check;
    if (!verified) return null;
    if (verified.ttlSeconds > 0 && !this.entries.has(key)) {
      this.entries.set(key, { userId: verified.userId, expiresAt: Date.now() + verified.ttlSeconds * 1000 });
      while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    }
    return verified.userId;
  }

  get size(): number {
    return this.entries.size;
  }
}
