/**
 * What nearly every request reads and rarely changes, kept between requests: a user's groups,
 * the ACLs of buckets, collections and groups (and accounts), and the buckets and collections
 * themselves (the parents of every record read or written). Without it a single-record GET
 * made five statements; each costs a round trip (on the 2-vCPU VM, ~110 µs of wall time and a
 * socket write of the same order), so it is the cache that brings a read down to one.
 *
 * Consistency. A transaction lists what it changed (`Invalidation`s); when it commits, this
 * process forgets those entries at once, and the others are told through the database
 * (PostgreSQL NOTIFY, sent in the transaction so that only commits are announced). A read that
 * raced with an invalidation is not stored (the generation moved meanwhile). What another
 * process changed is therefore seen here within the delivery of one notification (about a
 * millisecond): a permission revoked there may still let one more read through here. While the
 * notification channel is down the cache is off (every read goes to the database), and it
 * starts empty when the channel is back, so a lost notification cannot leave a stale entry.
 */
import { LRUCache } from 'lru-cache';
import type { Permissions } from '../types.js';

/** An object as stored (null: there is none, or a tombstone). */
export interface CachedObject {
  id: string;
  last_modified: number;
  data: Record<string, unknown>;
}

/** What a committed transaction changed: one object, one ACL, every group membership, or everything below a URI. */
export type Invalidation =
  | { kind: 'object'; key: string }
  | { kind: 'acl'; uri: string }
  | { kind: 'groups' }
  | { kind: 'tree'; uri: string }
  | { kind: 'all' };

/** Resources whose objects are cached: the parents of records. */
const CACHED_RESOURCES = new Set(['bucket', 'collection']);

export function objectKey(parentId: string, resourceName: string, id: string): string {
  return `${parentId}\u0000${resourceName}\u0000${id}`;
}

export function isCachedResource(resourceName: string): boolean {
  return CACHED_RESOURCES.has(resourceName);
}

/** ACLs of objects with at most two levels (`/buckets/b/collections/c`), not of records. */
export function isCachedAclUri(uri: string): boolean {
  let slashes = 0;
  for (let i = 0; i < uri.length; i++) if (uri.charCodeAt(i) === 47 && ++slashes > 4) return false;
  return true;
}

export interface SharedCacheOptions {
  /** Entries per kind (objects, ACLs, users' groups); 0 turns the cache off. */
  maxEntries: number;
  /** Off until the caller turns it on (PostgreSQL: once the notification channel listens). */
  enabled: boolean;
  /** Asked on every use too, when given: whether what other processes changed is known by now. */
  gate?: () => boolean;
}

export class SharedCache {
  readonly #objects: LRUCache<string, CachedObject | 'none'>;
  readonly #acls: LRUCache<string, Permissions>;
  readonly #groups: LRUCache<string, string[]>;
  /** Moves on every invalidation: a read begun before it must not be stored. */
  #generation = 0;
  #enabled: boolean;
  readonly #off: boolean;
  readonly #gate: () => boolean;

  constructor({ maxEntries, enabled, gate = () => true }: SharedCacheOptions) {
    this.#gate = gate;
    const max = Math.max(1, maxEntries);
    this.#objects = new LRUCache({ max });
    this.#acls = new LRUCache({ max });
    this.#groups = new LRUCache({ max });
    this.#off = maxEntries === 0;
    this.#enabled = enabled && !this.#off;
  }

  /** Taken before reading the database; `store*` only keeps a value read under the same token. */
  get token(): number {
    return this.#on ? this.#generation : -1;
  }

  get #on(): boolean {
    return this.#enabled && this.#gate();
  }

  #fresh(token: number): boolean {
    return this.#enabled && token === this.#generation;
  }

  /** undefined: unknown; null: known not to exist. */
  object(key: string): CachedObject | null | undefined {
    if (!this.#on) return undefined;
    const value = this.#objects.get(key);
    return value === 'none' ? null : value;
  }

  storeObject(token: number, key: string, value: CachedObject | null): void {
    if (this.#fresh(token)) this.#objects.set(key, value ?? 'none');
  }

  acl(uri: string): Permissions | undefined {
    return this.#on ? this.#acls.get(uri) : undefined;
  }

  storeAcl(token: number, uri: string, acl: Permissions): void {
    if (this.#fresh(token)) this.#acls.set(uri, acl);
  }

  groups(principalsKey: string): string[] | undefined {
    return this.#on ? this.#groups.get(principalsKey) : undefined;
  }

  storeGroups(token: number, principalsKey: string, groups: string[]): void {
    if (this.#fresh(token)) this.#groups.set(principalsKey, groups);
  }

  invalidate(invalidations: Iterable<Invalidation>): void {
    for (const invalidation of invalidations) {
      this.#generation++;
      switch (invalidation.kind) {
        case 'object':
          this.#objects.delete(invalidation.key);
          break;
        case 'acl':
          this.#acls.delete(invalidation.uri);
          break;
        case 'groups':
          empty(this.#groups);
          break;
        case 'tree':
        case 'all':
          // Rare here (a bucket or collection deleted, a flush): start over rather than scan.
          // The embedded store's every commit (sqlite/read-cache.ts).
          empty(this.#objects);
          empty(this.#acls);
          empty(this.#groups);
          break;
      }
    }
  }

  /** Turns the cache on or off; either way it starts empty (what it held may be stale). */
  setEnabled(enabled: boolean): void {
    this.invalidate([{ kind: 'all' }]);
    this.#enabled = enabled && !this.#off;
  }
}

/**
 * Empties `cache`, unless it is already: lru-cache's clear() refills its arrays of `max` slots
 * whatever it holds (tens of µs at 10,000 entries), after every embedded commit.
 */
export function empty(cache: { readonly size: number; clear(): void }): void {
  if (cache.size > 0) cache.clear();
}

/** Invalidations as the notification payload, and back (`all` when they do not fit). */
export const NOTIFY_CHANNEL = 'quire_cache';
const MAX_PAYLOAD = 7_000; // PostgreSQL's limit is 8,000 bytes

export function encodeInvalidations(invalidations: Invalidation[]): string {
  const payload = JSON.stringify(invalidations);
  return Buffer.byteLength(payload) <= MAX_PAYLOAD ? payload : JSON.stringify([{ kind: 'all' }]);
}

export function decodeInvalidations(payload: string): Invalidation[] {
  try {
    const parsed = JSON.parse(payload) as unknown;
    if (Array.isArray(parsed)) return parsed as Invalidation[];
  } catch {
    // Not ours: forget everything, to be safe.
  }
  return [{ kind: 'all' }];
}
