/**
 * Cache headers of reads (protocol-reference §12.5). Authenticated callers always get
 * `no-cache, no-store`. Anonymous callers may be let cache — by a CDN in front of public,
 * read-mostly collections — for as long as the settings say (`<resource>_cache_expires_seconds`)
 * or, for records, as their collection's `cache_expires` says; otherwise `no-cache, no-store`
 * as well, which is what Kinto sends.
 */
import type { Identity } from '../auth/policy.js';
import type { HttpSettings } from './settings.js';

const NO_CACHE = 'no-cache, no-store';

/** Resources whose anonymous reads a setting may make cacheable. */
const LIFETIME_SETTINGS = {
  bucket: 'bucket_cache_expires_seconds',
  group: 'group_cache_expires_seconds',
  collection: 'collection_cache_expires_seconds',
  record: 'record_cache_expires_seconds',
} as const satisfies Record<string, keyof HttpSettings>;

export interface CacheTarget {
  resourceName: string;
  /** URI of the objects' parent (`/buckets/b/collections/c` for records). */
  parentUri: string;
  /** The parent object itself, when the handler has read it (its `cache_expires` counts for records). */
  parent?: Record<string, unknown> | null;
}

/** How long a read of `target` by `identity` may be cached, in seconds (0: not at all). */
export function cacheLifetime(settings: HttpSettings, identity: Identity, target: CacheTarget): number {
  if (identity.userId !== null) return 0;
  if (target.resourceName === 'record') {
    // Most specific first: the collection's own attribute (checked on write), then the
    // settings for its collection, for its bucket, for every record.
    const own = target.parent?.cache_expires;
    if (typeof own === 'number') return own;
    const byParent = settings.record_cache_expires_seconds_by_parent;
    const bucketUri = target.parentUri.replace(/\/collections\/.*$/, '');
    return byParent[target.parentUri] ?? byParent[bucketUri] ?? settings.record_cache_expires_seconds ?? 0;
  }
  const setting = LIFETIME_SETTINGS[target.resourceName as keyof typeof LIFETIME_SETTINGS];
  return (setting && settings[setting]) ?? 0;
}

/** `Cache-Control: max-age` with its `Expires` date, or `no-cache, no-store` for 0. */
export function setCacheHeaders(reply: { header(name: string, value: string): unknown }, seconds: number): void {
  if (seconds <= 0) {
    reply.header('Cache-Control', NO_CACHE);
    return;
  }
  reply.header('Cache-Control', `max-age=${seconds}`);
  reply.header('Expires', new Date(Date.now() + seconds * 1000).toUTCString());
}
