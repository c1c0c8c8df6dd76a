/**
 * What the embedded store's plain reads keep between requests: the same kinds as PostgreSQL's
 * shared cache (../sql/shared-cache.ts: users' groups, the ACLs of buckets and collections, the
 * buckets and collections themselves), plus scope timestamps. Without it a GET of one record and
 * a 304 poll each ran five statements (groups, ACLs, both parents, then the record or the
 * timestamp), 35% of the server's CPU in the benchmark's profile.
 *
 * Consistency is simpler than PostgreSQL's, because better-sqlite3 is synchronous:
 * - a write transaction of this process empties it in the same synchronous step as its COMMIT,
 *   so no read can come between the commit and the emptying;
 * - a value is stored in the same step as the statement that read it, so no commit comes between;
 * - another process sharing the file (`quire import`, a second server) is seen through the
 *   writer connection's `PRAGMA data_version`, which moves when any other connection commits
 *   (this process's readers never write): each read session asks it first, and the cache
 *   empties when it moved.
 * Only plain read sessions use it; transactions and snapshots read the database.
 */
import { LRUCache } from 'lru-cache';
import { empty, SharedCache } from '../sql/shared-cache.js';

export class SqliteReadCache {
  /** Groups, ACLs, buckets and collections (enabled: there is no channel to wait for). */
  readonly shared: SharedCache;
  /** Scope timestamps by scope key; null when the cache is off (`maxEntries` 0). */
  readonly #timestamps: LRUCache<string, number> | null;

  constructor(maxEntries: number) {
    this.shared = new SharedCache({ maxEntries, enabled: true });
    this.#timestamps = maxEntries > 0 ? new LRUCache({ max: maxEntries }) : null;
  }

  timestamp(key: string): number | undefined {
    return this.#timestamps?.get(key);
  }

  /** Keeps a scope timestamp (the least recently used forgotten first past `maxEntries`). */
  storeTimestamp(key: string, timestamp: number): void {
    this.#timestamps?.set(key, timestamp);
  }

  /** Forgets everything (a commit here, another process's commit, a flush). */
  clear(): void {
    this.shared.invalidate([{ kind: 'all' }]);
    if (this.#timestamps) empty(this.#timestamps);
  }
}
