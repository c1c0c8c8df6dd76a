/** What a collection tells the app (`collection.on(event, listener)`), and what it asks the browser for them. */
import type { StoreError } from '../errors.js';
import type { ChangeNotice, SyncProgress, SyncResult } from '../sync/engine.js';

export interface ChangeEvent {
  /** `local`: a write in this tab; `sync`: applied by a sync in this tab; `tab`: another tab. */
  source: 'local' | 'sync' | 'tab';
  /** For `tab`: whether that tab wrote them (`local`) or a sync there applied them (`sync`). */
  tab?: 'local' | 'sync';
  changes: ChangeNotice[];
}

/** The server announced that this collection changed (live changes): a sync follows. */
export interface RemoteChangeEvent {
  /** The collection's timestamp on the server: the replica is current once it has pulled up to it. */
  lastModified: number;
  receivedAt: number;
}

/** The device's storage is full: a write (local, or of a sync) was rolled back, nothing was lost. */
export interface StorageFullEvent {
  /** `StoreError` with code `QUIRE_ERR_STORE_QUOTA`. */
  error: StoreError;
  /** From `navigator.storage.estimate()` where available, in bytes. */
  usage: number | null;
  quota: number | null;
}

/** Offline attachments (`@quire/client/attachments`): transfers and what became of queued files. */
export type AttachmentEvent =
  | { type: 'progress'; id: string; direction: 'upload' | 'download'; loaded: number; total: number }
  /**
   * `uploaded`/`removed`: the server has it; `dropped`: the server's version of the record won a
   * conflict, the queued change is gone; `downloaded`: now cached.
   */
  | { type: 'uploaded' | 'removed' | 'dropped' | 'downloaded'; id: string };

export interface CollectionEvents {
  change: ChangeEvent;
  remote: RemoteChangeEvent;
  /** Syncs run in this tab (every tab sees them all through `status`). */
  progress: SyncProgress;
  sync: SyncResult;
  /** A sync found the server's collection deleted (`SyncResult.serverDeleted`): only local changes were kept. */
  serverDeleted: SyncResult;
  error: unknown;
  /** Storage is full (in this tab): show it, free space, and sync or write again. */
  quota: StorageFullEvent;
  /** Offline attachments: progress of transfers, queued files uploaded, removed or dropped. */
  attachment: AttachmentEvent;
}

/** What the browser says of the origin's storage (`navigator.storage.estimate()`), nulls where it says nothing. */
export async function storageEstimate(): Promise<{ usage: number | null; quota: number | null }> {
  type Estimate = { usage?: number; quota?: number };
  const storage = (globalThis as { navigator?: { storage?: { estimate?: () => Promise<Estimate> } } }).navigator
    ?.storage;
  const estimate: Estimate = (await storage?.estimate?.().catch(() => ({}))) ?? {};
  return { usage: estimate.usage ?? null, quota: estimate.quota ?? null };
}
