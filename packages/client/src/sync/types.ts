/** What a sync is asked, reports, and runs on (engine.ts and run.ts share them; the app sees the first ones). */
import type { LocalCollection } from '../store/local-collection.js';
import type { SyncLock } from '../tabs/locks.js';
import type { TransformChain } from '../transform/transformers.js';
import type { HttpTransport } from '../transport/http.js';
import type { Conflict, ConflictStrategy } from './conflicts.js';
import type { SubsetFilters } from './subset.js';

export interface SyncProgress {
  phase: 'pull' | 'push';
  done: number;
  /** From `Total-Objects` when the server sends it, else what is known so far. */
  total: number;
}

export interface SyncOptions {
  strategy?: ConflictStrategy;
  /** Only bring server changes down; local changes stay pending. */
  pullOnly?: boolean;
  /** Sync even if the server asked to back off (use sparingly). */
  ignoreBackoff?: boolean;
  signal?: AbortSignal;
  onProgress?: (progress: SyncProgress) => void;
  /**
   * Keep only the records matching these filters (a partial replica; the protocol's list
   * filters: `{ done: false, min_priority: 3, in_tag: ['a', 'b'] }`), from this sync on; `null`:
   * the whole collection. Absent: the collection's subset as it was (its `filters` option, or the
   * last one given here).
   */
  filters?: SubsetFilters | null;
}

export interface ConflictReport extends Conflict {
  /** How it was settled: `manual` ones wait in `collection.conflicts()`. */
  resolution: 'remote' | 'local' | 'merged' | 'manual';
}

export interface SyncErrorReport {
  id?: string;
  status?: number;
  code?: string;
  message: string;
  body?: unknown;
}

export interface SyncResult {
  /** No error and no conflict left for the app. */
  ok: boolean;
  /** Server changes applied locally (creations, updates, deletions). */
  pulled: number;
  /** Local changes the server accepted. */
  pushed: number;
  conflicts: ConflictReport[];
  errors: SyncErrorReport[];
  /** Server changes with no local effect (already known, unknown tombstones, waiting conflicts). */
  skipped: number;
  /**
   * Records dropped because the server no longer has them (`serverFlushed`) or no longer lets us
   * read them.
   */
  removed: number;
  /** Of `removed`, the records dropped because they left the subset (`filters`). */
  leftSubset?: number;
  /**
   * The server's copy of the collection was found emptied since the last sync — deleted and
   * re-created, or the whole server flushed (the protocol's signal: a `_since` poll returned no
   * change while the collection's timestamp moved past the replica's; kinto.js reports it as
   * "Server has been flushed"). Synced records the server no longer has were dropped (counted in
   * `removed`); local changes were kept: pending updates now re-create their records (pushed in
   * this sync, counted in `pushed`), or under the `manual` strategy became conflicts against
   * the server's deletion (`conflicts`, `remote: null`). False when nothing held was missing.
   */
  serverFlushed: boolean;
  /**
   * The server's collection is deleted (the pull met a 404, which is in `errors`), or the change
   * monitor announced its deletion since the replica last pulled (its bucket's too: the pull then
   * meets a 403, or, re-created meanwhile, succeeds). As for `serverFlushed`, synced records the
   * server does not have were dropped (`removed`) and local changes kept; the sync state was reset,
   * so once the collection exists again the next sync pulls it whole and pushes them.
   */
  serverDeleted: boolean;
  /** The server answered 304: nothing changed remotely. */
  notModified: boolean;
  /**
   * Offline attachments (collections opened with `attachments`): queued files the server now has
   * (`uploaded`), removed, dropped (the server's version won their record's conflict, or the
   * server refused them for good: in `errors`), and files the `eager` policy downloaded.
   */
  attachments?: { uploaded: number; removed: number; dropped: number; downloaded: number };
}

export interface ChangeNotice {
  type: 'create' | 'update' | 'delete';
  id: string;
}

export interface SyncEngineOptions {
  http: HttpTransport;
  local: LocalCollection;
  bucket: string;
  collection: string;
  pageSize: number;
  strategy: ConflictStrategy;
  lock: SyncLock;
  lockName: string;
  batchSize: () => Promise<number | null>;
  /**
   * Check for records that lost read permission: after a sync that changed something, and at
   * least every `intervalMs` otherwise (null: never).
   */
  checkReadable: { intervalMs: number } | null;
  onChanges: (changes: ChangeNotice[]) => void;
  /** The collection's remote transformers (none: records travel as they are). */
  transform?: TransformChain;
  /** The collection's subset (`filters` option): a partial replica. */
  filters?: SubsetFilters | null;
  /** The server lists what left a subset (capability `partial_replicas`). */
  partialReplicas?: () => Promise<boolean>;
}
