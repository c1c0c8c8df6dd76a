/**
 * Scope timestamps kept in the process, so that a poll (`GET …/records` with `If-None-Match`,
 * a `_since` with nothing new) is answered without a round trip to PostgreSQL.
 *
 * Every change of a timestamp, by any process, is logged in `scope_changes` by a trigger of its
 * statement, in its transaction (migration 012). While polls come, the cache reads the rows it
 * has not seen every quarter of `maxStalenessMs` (one indexed statement, whatever the number of
 * polls) and drops what they name. Rows are keyed by transaction id, and the cache keeps the
 * snapshot of its last read: the next read takes the rows of the transactions that snapshot did
 * not see (those it listed in progress, those from its xmax on), so none is missed, whatever
 * the order in which transactions commit.
 *
 * Bounded staleness, by construction: a read's snapshot is taken after it was sent, so it sees
 * every transaction committed before the local time it was sent. The cache answers only while
 * its last completed read was sent less than `maxStalenessMs` ago: a poll answered from memory
 * misses no change committed, by any process, more than that before it. Values are only ever
 * read from the database, so an entry is never ahead of the data (an ETag never runs ahead of
 * its rows); at worst it is behind, within that bound. A value read while a log read ran is not
 * stored (the generation moved); when the database cannot be read, nothing is answered.
 *
 * This process's own commits drop every entry at once (before the response leaves): a client
 * that wrote here and polls here sees its write. Works the same through a pooler and on a hot
 * standby (the table replicates; NOTIFY would not). There the reads also feed the change
 * streams (`watch`, `Storage.scopeLog`): while streams are open the log is read every
 * `watchIntervalMs` too, and each read tells them the scopes it names.
 */
import { LRUCache } from 'lru-cache';
import type { ScopeLogListener } from '../types.js';
import type { Row } from './drivers/types.js';
import { empty } from './shared-cache.js';

/** Rows read at most at once; past that the cache forgets everything (a burst of writes). */
const READ_LIMIT = 5_000;
/** Rows older than this are deleted (pruneScopeChanges); a cache idle longer starts over. */
export const SCOPE_CHANGES_RETENTION_MS = 600_000;

type Run = <R extends Row>(text: string, params: unknown[]) => Promise<R[]>;

interface ChangeRow extends Row {
  snapshot: string;
  pruned: string | null;
  scopes: string | null;
}

/**
 * This statement's snapshot, the highest id pruned, and the rows the last snapshot did not see
 * ($1 in progress, $2 xmax).
 */
const READ_CHANGES = `
  WITH now AS MATERIALIZED (SELECT pg_current_snapshot()::text AS snapshot)
  SELECT now.snapshot, (SELECT through::text FROM scope_changes_pruned) AS pruned, c.scopes
  FROM now LEFT JOIN LATERAL (
    SELECT scopes FROM scope_changes WHERE xid = ANY($1::xid8[])
    UNION ALL
    (SELECT scopes FROM scope_changes WHERE xid >= $2::xid8 ORDER BY xid, id LIMIT ${READ_LIMIT})
  ) c ON true`;

/** Deletes the rows past retention and records the highest transaction id deleted (any process on the primary). */
export const PRUNE_SCOPE_CHANGES = `
  WITH gone AS (
    DELETE FROM scope_changes WHERE created_at < clock_timestamp() - $1::int * interval '1 millisecond' RETURNING xid
  )
  UPDATE scope_changes_pruned SET through = GREATEST(through, (SELECT max(xid) FROM gone))
  WHERE EXISTS (SELECT 1 FROM gone)`;

export interface ScopeCacheOptions {
  /** Entries at most; 0 turns the cache off. */
  maxEntries: number;
  /** The oldest a cached answer may be (see above); 0 turns the cache off. */
  maxStalenessMs: number;
  /** Runs one statement (autocommit). */
  run: Run;
  /**
   * Told when a scope of buckets, collections, groups or accounts moved (or anything may have):
   * on a standby, where NOTIFY does not come, the shared read cache forgets what it holds.
   */
  containersChanged?: () => void;
  /** While someone watches the log (`watch`), it is read at least this often, polls or not. */
  watchIntervalMs?: number;
}

/** Scopes whose changes leave the shared read cache (shared-cache.ts) as it is. */
const LEAF_SCOPES = new Set(['record', 'history', 'attachment', 'quota']);

export function scopeKey(parentId: string, resourceName: string): string {
  return `${parentId}\u0000${resourceName}`;
}

export class ScopeCache {
  readonly #entries: LRUCache<string, number>;
  readonly #maxStalenessMs: number;
  readonly #run: Run;
  readonly #off: boolean;
  readonly #containersChanged: () => void;
  /** The snapshot of the last complete read of the log: every row it saw was read. */
  #seen: { xmax: string; inProgress: string[] } | null = null;
  /** When the last complete read was sent (the cache is exact up to then). */
  #exactAt = Number.NEGATIVE_INFINITY;
  #generation = 0;
  #reading: Promise<void> | null = null;
  /** Whether a poll asked since the last tick (else the tick reads nothing). */
  #asked = false;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  readonly #watchers = new Set<ScopeLogListener>();
  readonly #watchIntervalMs: number;
  /** When the last read was sent (a watched log is read every `watchIntervalMs`). */
  #sentAt = Number.NEGATIVE_INFINITY;

  constructor({
    maxEntries,
    maxStalenessMs,
    run,
    containersChanged = () => {},
    watchIntervalMs = 250,
  }: ScopeCacheOptions) {
    this.#containersChanged = containersChanged;
    this.#watchIntervalMs = watchIntervalMs;
    this.#entries = new LRUCache({ max: Math.max(1, maxEntries) });
    this.#maxStalenessMs = maxStalenessMs;
    this.#run = run;
    this.#off = maxEntries === 0 || maxStalenessMs === 0;
  }

  /** Taken before reading the database; `store` only keeps a value read under the same token. */
  get token(): number {
    return this.#off ? -1 : this.#generation;
  }

  /** The scope's timestamp, when known and recent enough (see above). */
  get(parentId: string, resourceName: string): number | undefined {
    return this.fresh() ? this.#entries.get(scopeKey(parentId, resourceName)) : undefined;
  }

  /** Whether every change committed more than the bound ago has been read (the log is read while asked). */
  fresh(): boolean {
    if (this.#off || this.#closed) return false;
    // The log is read only while polls are asked (an idle process reads nothing): the first
    // poll after a quiet spell goes to the database while the log is read.
    this.#asked = true;
    this.#startTicking();
    if (Date.now() - this.#exactAt <= this.#maxStalenessMs) return true;
    void this.#read();
    return false;
  }

  store(token: number, parentId: string, resourceName: string, timestamp: number): void {
    if (this.#off || !this.#seen || token !== this.#generation) return;
    // Two reads may end out of order: keep the newer (a scope's timestamp only grows while it lives).
    const key = scopeKey(parentId, resourceName);
    if (!((this.#entries.get(key) ?? Number.NEGATIVE_INFINITY) > timestamp)) this.#entries.set(key, timestamp);
  }

  /** A commit of this process may have moved any timestamp: forget them all, now. */
  forgetAll(): void {
    this.#generation++;
    // After every transaction; with the poll cache off (a primary) it is always empty, and
    // clearing an empty lru-cache still costs (1.4% of a POST's CPU: shared-cache.ts `empty`).
    empty(this.#entries);
  }

  /**
   * Tells `listener` the scopes of every change the log gives from now on, read every
   * `watchIntervalMs` (one statement, shared with the polls' reads, whatever the number of
   * watchers); `restarted` when changes may have been missed (the first read, a pruned or
   * overflowing log). The change feed of a hot standby, where NOTIFY does not come.
   */
  watch(listener: ScopeLogListener): () => void {
    this.#watchers.add(listener);
    this.#startTicking();
    return () => this.#watchers.delete(listener);
  }

  #startTicking(): void {
    if (this.#timer || this.#closed) return;
    const polled = this.#off ? Number.POSITIVE_INFINITY : Math.floor(this.#maxStalenessMs / 4);
    const period = Math.max(1, Math.min(polled, this.#watchIntervalMs));
    this.#timer = setInterval(() => {
      // Watched: on time, give or take half a tick.
      const due =
        Date.now() - this.#sentAt >= this.#watchIntervalMs - period / 2 &&
        [...this.#watchers].some((watcher) => watcher.wanted?.() ?? true);
      if (!this.#asked && !due) return;
      this.#asked = false;
      void this.#read();
    }, period);
    this.#timer.unref();
  }

  /** Reads the log once (one read at a time); a failure leaves the cache to age out. */
  #read(): Promise<void> {
    this.#reading ??= this.#readOnce()
      .catch(() => {})
      .finally(() => (this.#reading = null));
    return this.#reading;
  }

  async #readOnce(): Promise<void> {
    const sentAt = Date.now();
    this.#sentAt = sentAt;
    const seen = this.#seen;
    const rows = await this.#run<ChangeRow>(READ_CHANGES, [seen?.inProgress ?? [], seen?.xmax ?? '0']);
    const first = rows[0];
    if (!first || this.#closed) return;
    const [, xmax = '0', list = ''] = first.snapshot.split(':');
    const now = { xmax, inProgress: list === '' ? [] : list.split(',') };
    const idle = sentAt - this.#exactAt > SCOPE_CHANGES_RETENTION_MS / 2;
    const pruned = first.pruned !== null && seen !== null && BigInt(first.pruned) >= BigInt(seen.xmax);
    // A start, or rows that may be gone unread: start over from this snapshot. Reads begun
    // before it may have missed what it saw, hence a new generation.
    const scopes = !seen || idle || pruned || rows.length >= READ_LIMIT ? null : this.#forget(rows);
    this.#seen = now;
    this.#exactAt = sentAt;
    if (scopes === null) this.#startOver();
    else if (scopes.length > 0) for (const watcher of this.#watchers) watcher.changed(scopes);
  }

  #startOver(): void {
    this.forgetAll();
    this.#containersChanged();
    for (const watcher of this.#watchers) watcher.restarted();
  }

  /** Drops the scopes the rows name and returns them (null: a row could not name its scopes). */
  #forget(rows: ChangeRow[]): Array<readonly [string, string]> | null {
    const changed: Array<readonly [string, string]> = [];
    let containers = false;
    for (const { scopes } of rows) {
      if (scopes === null) continue;
      this.#generation++;
      let parsed: unknown = null;
      try {
        parsed = scopes === '*' ? null : JSON.parse(scopes);
      } catch {
        // Not ours: forget everything, to be safe.
      }
      if (!Array.isArray(parsed)) return null;
      for (const scope of parsed as Array<[string, string]>) {
        this.#entries.delete(scopeKey(scope[0], scope[1]));
        if (!LEAF_SCOPES.has(scope[1])) containers = true;
        changed.push(scope);
      }
    }
    if (containers) this.#containersChanged();
    return changed;
  }

  close(): void {
    this.#closed = true;
    this.forgetAll();
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}
