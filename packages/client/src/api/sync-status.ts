/**
 * What the app shows about a collection's sync, shared by its tabs: whether a sync runs and how
 * far it got, when the last one ended and how (its result, or its failure), and who auto-syncs it.
 * Only one tab auto-syncs a collection (the leader); the others receive its status over the
 * collection's BroadcastChannel, so every tab's status bar tells the same story.
 */
import { QuireError } from '../errors.js';
import { serverWait } from '../retry.js';
import type { SyncProgress, SyncResult } from '../sync/engine.js';

/** A failed sync, as a plain object (it crosses tabs): the error's `code`, message and what to wait. */
export interface SyncFailure {
  code: string;
  name: string;
  message: string;
  /** HTTP status of a server error. */
  status?: number;
  /** How long the server asked to wait, in ms. */
  retryAfter?: number;
}

export interface SyncStatus {
  /** A sync of this collection runs now (in this tab, or in the tab that auto-syncs it). */
  syncing: boolean;
  /** The running sync's progress, when it reported some. */
  progress: SyncProgress | null;
  /** When the last pull completed (kept in the replica: known at start) or the last sync ended. */
  lastSyncAt: number | null;
  /** The last completed sync's result. */
  lastResult: SyncResult | null;
  /** The last sync's failure; null once a sync succeeds. */
  error: SyncFailure | null;
  /** Auto-sync in this tab: `leader` (this tab syncs), `follower` (another tab does), null (off). */
  autoSync: 'leader' | 'follower' | null;
}

export const INITIAL_SYNC_STATUS: SyncStatus = {
  syncing: false,
  progress: null,
  lastSyncAt: null,
  lastResult: null,
  error: null,
  autoSync: null,
};

/** The part of the status every tab shares (`autoSync` is each tab's own). */
export type SharedSyncStatus = Omit<SyncStatus, 'autoSync'>;

export function describeFailure(error: unknown): SyncFailure {
  const wait = serverWait(error);
  const status = (error as { status?: unknown } | null)?.status;
  return {
    code: error instanceof QuireError ? error.code : 'QUIRE_ERR_UNKNOWN',
    name: (error as Error | null)?.name ?? 'Error',
    message: (error as Error | null)?.message ?? String(error),
    ...(typeof status === 'number' ? { status } : {}),
    ...(wait !== null ? { retryAfter: wait } : {}),
  };
}

export class SyncStatusStore {
  #status: SyncStatus = INITIAL_SYNC_STATUS;
  readonly #listeners = new Set<(status: SyncStatus) => void>();
  readonly #share: (status: SharedSyncStatus) => void;

  /** `share` tells the other tabs (the collection channel). */
  constructor(share: (status: SharedSyncStatus) => void) {
    this.#share = share;
  }

  get snapshot(): SyncStatus {
    return this.#status;
  }

  subscribe(listener: (status: SyncStatus) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A change made here: applied, and shared unless it is only this tab's. */
  update(patch: Partial<SyncStatus>): void {
    if (!this.#apply(patch)) return;
    if (Object.keys(patch).some((key) => key !== 'autoSync')) {
      const { autoSync: _own, ...shared } = this.#status;
      this.#share(shared);
    }
  }

  /** The status another tab shared. */
  receive(shared: SharedSyncStatus): void {
    this.#apply(shared);
  }

  #apply(patch: Partial<SyncStatus>): boolean {
    const next = { ...this.#status, ...patch };
    const keys = Object.keys(patch) as (keyof SyncStatus)[];
    if (keys.every((key) => next[key] === this.#status[key])) return false;
    this.#status = next;
    for (const listener of [...this.#listeners]) listener(next);
    return true;
  }
}
