/**
 * Cache headers of reads (protocol-reference §12.5). Authenticated callers always get
 * `no-cache, no-store`. Anonymous callers may be let cache — by a CDN in front of public,
 * read-mostly collections — for as long as the settings say (`<resource>_cache_expires_seconds`)
 * or, for records, as their collection's `cache_expires` says; otherwise `no-cache, no-store`
 * as well, which is what Kinto sends.
 *
 * A listing of records asked with a cache-buster (`_expected=<ts>`, the timestamp the caller read
 * in the change monitor) is keyed by it in a CDN: when the answer holds that timestamp it may be
 * kept for the longer `record_cache_maximum_expires_seconds`, as kinto-changes does; when it does
 * not (a reader on a lagging replica), it is never cacheable, which kinto-changes does not check:
 * a CDN would keep the stale answer under the URL of the newer data for the whole lifetime.
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
  /** A listing asked with `_expected`: the timestamp asked for, and the listing's own (its ETag). */
  busting?: { expected: number; timestamp: number };
}

/** How long a read of `target` by `identity` may be cached, in seconds (0: not at all). */
export function cacheLifetime(settings: HttpSettings, identity: Identity, target: CacheTarget): number {
  if (identity.userId !== null) return 0;
  if (target.resourceName === 'record') {
    const { busting } = target;
    if (busting && busting.timestamp < busting.expected) return 0;
    const maximum = busting
      ? settingFor(
          settings.record_cache_maximum_expires_seconds_by_parent,
          target.parentUri,
          settings.record_cache_maximum_expires_seconds,
        )
      : 0;
    return maximum > 0 ? maximum : recordLifetime(settings, target);
  }
  const setting = LIFETIME_SETTINGS[target.resourceName as keyof typeof LIFETIME_SETTINGS];
  return (setting && settings[setting]) ?? 0;
}

/**
 * Most specific first: the collection's own attribute (checked on write), then the settings
 * for its collection, for its bucket, for every record.
 */
function recordLifetime(settings: HttpSettings, target: CacheTarget): number {
  const own = target.parent?.cache_expires;
  if (typeof own === 'number') return own;
  return settingFor(
    settings.record_cache_expires_seconds_by_parent,
    target.parentUri,
    settings.record_cache_expires_seconds,
  );
}

function settingFor(byParent: Record<string, number>, parentUri: string, otherwise: number | null): number {
  const bucketUri = parentUri.replace(/\/collections\/.*$/, '');
  return byParent[parentUri] ?? byParent[bucketUri] ?? otherwise ?? 0;
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
