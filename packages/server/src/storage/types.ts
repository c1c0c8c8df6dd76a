/**
 * The storage contract. Backends know nothing of HTTP: they store JSON objects keyed by
 * (resourceName, parentId, id), keep one timestamp sequence per (parentId, resourceName),
 * access-control entries, an outbox and nonces, each behind a facet of a session
 * (`StorageSession`); a `Storage` opens sessions. Every backend passes the shared suite in
 * `testing.ts`. The objects facet's contract is in object-store.ts, the permissions facet's in
 * permission-store.ts; this module re-exports both.
 *
 * Field names on the wire stay snake_case (`last_modified`), as Kinto sends them.
 */
import type { BulkImportOptions, BulkImportResult, BulkLoader } from './bulk-import.js';
import type { ObjectStore, Scope } from './object-store.js';
import type { PermissionStore } from './permission-store.js';

export * from './object-store.js';
export * from './permission-store.js';

/**
 * What one session (a transaction, a snapshot or plain reads) offers, one facet per concern,
 * as Kinto splits its storage and permission backends. A caller takes the facet it needs; the
 * facets of one session share its transaction. Deleting an object below which others live
 * (a bucket, a collection) is one call per facet: `outbox.deleteTree`, `objects.deleteTree`,
 * `permissions.deleteTree`, in that order (the resource engine's delete does it).
 */
export interface StorageSession {
  readonly objects: ObjectStore;
  readonly permissions: PermissionStore;
  readonly outbox: OutboxStore;
  readonly nonces: NonceStore;

  /**
   * A hint: the caller is about to read this object (`objects.get`) and its ACL
   * (`permissions.get` of `uri`). A backend may fetch both at once and answer those calls from
   * memory; it may also do nothing. Reads only (ignored in a transaction).
   */
  preload?(scope: Scope, id: string, uri: string): Promise<void>;
}

/**
 * An item to append to the outbox. `key` is an object URI: `outbox.deleteTree(uri)` drops its
 * items. For `moveToScope`, `payload` is the array of objects to store.
 */
export interface OutboxInput {
  key: string;
  payload: unknown;
}

export interface OutboxTarget {
  scope: Scope;
  /** The object the scope belongs to: items are dropped once it is gone. */
  whileExists: { scope: Scope; id: string };
}

/** Work stored in a transaction, applied after commit (the history). */
export interface OutboxStore {
  /**
   * Appends items to the outbox as the transaction commits (on PostgreSQL in the COMMIT's own
   * round trip; a failure rolls the transaction back). Items are drained per (topic, key) in
   * the order they were enqueued.
   */
  enqueue(topic: string, items: OutboxInput[]): Promise<void>;

  /**
   * Moves the oldest `limit` items of (topic, key) into `target.scope`, in the database, in
   * order. Each element of an item's payload (an array of objects) becomes an object of the
   * scope with that data, a new id and the next timestamp (above every timestamp of the scope,
   * which stays locked until the transaction ends). Items are dropped without a trace when
   * `target.whileExists` no longer exists. Returns the number of items taken.
   */
  moveToScope(topic: string, key: string, limit: number, target: OutboxTarget): Promise<number>;

  /** Keys that have items waiting in `topic` (only `key` itself, when given). */
  keys(topic: string, key?: string): Promise<string[]>;

  /**
   * Drops the items keyed by `uri` or below it, committed ones (a drainer holding some is
   * waited for: call it before `objects.deleteTree`, which then also removes what it stored).
   */
  deleteTree(uri: string): Promise<void>;
}

/** Single-use tokens (pagination tokens of a plural DELETE, account activation and reset keys). */
export interface NonceStore {
  /** Remembers a nonce for `ttlSeconds`. */
  store(nonce: string, ttlSeconds: number): Promise<void>;

  /** Forgets the nonce; true when it was stored and not expired (first use). */
  consume(nonce: string): Promise<boolean>;
}

/**
 * What a session is told of the request it works for (issue 36's database budget). A store that
 * shares connections (PostgreSQL) cancels the session's statements when `signal` aborts and gives
 * each `owner`, and each `address`, at most its share of the pool; another may ignore them.
 */
export interface SessionOptions {
  /** Aborted when nobody needs the work any more (its client went away, its batch ran out of time). */
  signal?: AbortSignal;
  /** Who the work is for: `user:<id>`, or `address:<key>` for anonymous callers. */
  owner?: string;
  /** The client address it came from (an IPv6 one: its /64), shared by every identity using it. */
  address?: string;
  /** Told how long each costly statement took (ms), which the server charges to the owner's share of its loop. */
  spent?: (ms: number) => void;
}

/**
 * A store: sessions to work in, and its own upkeep. Every read and write goes through a
 * session: `storage.read((session) => session.objects.get(…))`, `storage.transaction(…)`.
 */
export interface Storage {
  /** Human name for logs and heartbeat, e.g. `postgresql` or `pglite`. */
  readonly backend: string;

  /**
   * Runs `fn` in one transaction: all or nothing. Writes to a scope lock that scope's
   * timestamp until commit, so a concurrent `_since` poll never returns an ETag greater
   * than the timestamp of a change that commits after it.
   */
  transaction<T>(fn: (session: StorageSession) => Promise<T>, options?: SessionOptions): Promise<T>;

  /**
   * Runs `fn` on one consistent snapshot (read only): the scope timestamp and the listed
   * objects seen by `fn` belong to the same moment.
   */
  snapshot<T>(fn: (session: StorageSession) => Promise<T>, options?: SessionOptions): Promise<T>;

  /**
   * Runs `fn` on plain reads, without a transaction: each statement sees what was committed when
   * it started. Cheaper than `snapshot()` (no transaction to open and end); what it must not be
   * used for is reading a scope's objects before its timestamp — read the timestamp first, and
   * an ETag never claims a change the listing did not show (it may show a newer one, which the
   * next `_since` poll gives again).
   */
  read<T>(fn: (session: StorageSession) => Promise<T>, options?: SessionOptions): Promise<T>;

  /**
   * Where several processes share the store (PostgreSQL): a channel between them, LISTEN/NOTIFY.
   * `listen` keeps a connection of its own, reconnecting until the store closes; `notify` sends
   * at once (autocommit). Absent where the store lives in one process only.
   */
  readonly channels?: StoreChannels;

  /**
   * On a hot standby (PostgreSQL), instead of `channels` (NOTIFY does not reach a standby): the
   * replicated log of the scopes whose timestamps moved, as the primary's transactions commit.
   */
  readonly scopeLog?: ScopeLog;

  /**
   * On a hot standby: how far behind its primary it is, in seconds, as last measured (0: it has
   * replayed all it received). Absent elsewhere.
   */
  replicaLagSeconds?(): number;

  /** Names of the migrations applied when this process opened the store (`quire migrate` lists them). */
  readonly migrationsApplied?: readonly string[];

  /** true when the backend answers. */
  ping(): Promise<boolean>;

  /** Deletes everything (flush endpoint, tests). */
  flush(): Promise<void>;

  close(): Promise<void>;

  /** The connection pool's state, for metrics (absent where there is no pool). */
  stats?(): PoolStats | null;

  /**
   * `quire import` at bulk speed, all or nothing (bulk-import.ts): `fill` adds the import's objects
   * to a loader, in one transaction that commits when `fill` resolves and the store's checks pass.
   */
  bulkImport?(options: BulkImportOptions, fill: (loader: BulkLoader) => Promise<void>): Promise<BulkImportResult>;

  /**
   * Where collections may declare indexes (declared-indexes.ts): brings the store's indexes in
   * line with the declarations now, and resolves with the fields indexed (tests, benchmarks;
   * the store also does it by itself).
   */
  updateIndexes?(): Promise<ReadonlySet<string>>;
}

export interface PoolStats {
  /** Connections open. */
  total: number;
  /** Of those, idle. */
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
}

/** What a notification channel tells its listener (the SQL drivers' `ChannelListener`). */
export interface StoreChannelListener {
  message(payload: string): void;
  connected(): void;
  disconnected(): void;
}

/** What the scope log tells a watcher (`Storage.scopeLog`). */
export interface ScopeLogListener {
  /** Scopes (`[parentId, resourceName]`) whose timestamps moved in transactions now visible. */
  changed(scopes: ReadonlyArray<readonly [string, string]>): void;
  /** Changes may have been missed (a start, a pruned log): what matters must be read again. */
  restarted(): void;
  /** Whether the log must be read now (default: yes); an idle watcher costs no statement. */
  wanted?(): boolean;
}

export interface ScopeLog {
  /** Starts telling `listener`; returns the function that stops it. */
  watch(listener: ScopeLogListener): () => void;
}

export interface StoreChannels {
  listen(channel: string, listener: StoreChannelListener): void;
  notify(channel: string, payload: string): Promise<void>;
}
