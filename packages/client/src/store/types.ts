/** Shapes stored in IndexedDB. Records keep the server's snake_case fields. */

/** A record as the app sees it: its fields plus `id` and, once synced, the server's `last_modified`. */
export type LocalRecord<T = Record<string, unknown>> = T & { id: string; last_modified?: number };

/** A server record or tombstone. */
export interface RemoteRecord {
  id: string;
  last_modified: number;
  deleted?: boolean;
  [field: string]: unknown;
}

/**
 * One pending local change per record, written in the same transaction as the record.
 * `base` is the server `last_modified` the change was made on (sent as If-Match), null for a
 * record the server never had. `rev` is new on every local write (a random token) so that a push acknowledges only
 * the version it sent (a write made during the push stays pending).
 */
export interface OutboxEntry {
  id: string;
  op: 'create' | 'update' | 'delete';
  base: number | null;
  rev: string;
  /** Set while a manual conflict on this record waits for the app. */
  blocked?: boolean;
  /** Insertion order, for pushing oldest first. */
  seq: number;
}

export interface ConflictEntry {
  id: string;
  /** `incoming`: found while pulling; `outgoing`: the server refused our push (412). */
  type: 'incoming' | 'outgoing';
  /** The local version, null when deleted locally. */
  local: LocalRecord | null;
  /** The server version, null when deleted on the server. */
  remote: RemoteRecord | null;
}

/**
 * Pull progress persisted page by page (in the page's own transaction). A pull sweeps
 * `(floor, before)` newest first; `lowest` is the oldest `last_modified` received in the current
 * sweep, `newest` the newest received in the whole pull.
 */
export interface PullCheckpoint {
  floor: number | null;
  before: number | null;
  lowest: number | null;
  newest: number | null;
  /** A catch-up sweep from `newest` is needed once the current sweep finishes (the collection changed). */
  catchUp: boolean;
  /** The pull started on an empty replica that never completed a pull. */
  cold?: boolean;
}

export interface SyncState {
  /** `_since` bound: the newest `last_modified` received by a completed pull. */
  since: number | null;
  /** ETag of the last completed pull, sent as If-None-Match to get a 304. */
  etag: number | null;
  lastSyncAt: number | null;
}

export interface MetaEntry {
  key: string;
  value: unknown;
}

export interface LockEntry {
  name: string;
  owner: string;
  expires: number;
}
