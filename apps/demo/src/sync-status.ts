/**
 * The sync state shown at a glance: online or not, local changes not yet on the server,
 * conflicts waiting, when the last sync ended, the progress of a long sync, and the current
 * problem in plain words. Built only from the client's public events (`change`, `progress`,
 * `sync`, `error`) and counts (`pending()`, `conflicts()`) of every collection it tracks.
 */
import type { Collection, LiveChanges, LiveStatus, SyncProgress, SyncResult } from '@quire/client';
import { describeError, describeRefusedChanges } from './errors.js';

export interface SyncSnapshot {
  /** `local`: lists on this device only, nothing is synced. */
  mode: 'account' | 'local';
  online: boolean;
  /** Local changes not yet accepted by the server (all lists). */
  pending: number;
  /** Conflicts waiting for a choice (all lists). */
  conflicts: number;
  lastSyncAt: number | null;
  /** A sync in progress that reported a total (a long first sync, a large upload). */
  progress: { label: string; phase: SyncProgress['phase']; done: number; total: number } | null;
  error: string | null;
  /** How other people's changes arrive: `stream` (pushed, connected), `poll`, or null (each list on its interval). */
  live: 'stream' | 'poll' | null;
}

type AnyCollection = Collection<Record<string, unknown>>;

interface Tracked {
  label: () => string;
  progress: SyncProgress | null;
  error: { message: string; network: boolean } | null;
  unsubscribe: () => void;
}

export class SyncStatus {
  #snapshot: SyncSnapshot;
  readonly #listeners = new Set<(snapshot: SyncSnapshot) => void>();
  readonly #tracked = new Map<AnyCollection, Tracked>();
  readonly #lastSyncKey: string;
  readonly #onOnline = () => this.#update({ online: true });
  readonly #onOffline = () => this.#update({ online: false });
  #countTimer: ReturnType<typeof setTimeout> | null = null;
  #stopLive: () => void = () => {};
  #closed = false;

  constructor(mode: SyncSnapshot['mode'], storageKey: string) {
    this.#lastSyncKey = `quire-demo:last-sync:${storageKey}`;
    const stored = Number(localStorage.getItem(this.#lastSyncKey));
    this.#snapshot = {
      mode,
      online: navigator.onLine,
      pending: 0,
      conflicts: 0,
      lastSyncAt: Number.isFinite(stored) && stored > 0 ? stored : null,
      progress: null,
      error: null,
      live: null,
    };
    addEventListener('online', this.#onOnline);
    addEventListener('offline', this.#onOffline);
  }

  get snapshot(): SyncSnapshot {
    return this.#snapshot;
  }

  subscribe(listener: (snapshot: SyncSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Shows whether changes are pushed (the client's live changes connection). */
  followLive(live: LiveChanges): void {
    const show = (status: LiveStatus) =>
      this.#update({ live: status.mode === 'none' || !(status.connected || status.follower) ? null : status.mode });
    const stop = live.onStatus(show);
    show(live.status);
    this.#stopLive = stop;
  }

  /** Follows a collection; `label` names it in progress messages (e.g. the list's title). */
  track<T extends Record<string, unknown>>(collection: Collection<T>, label: () => string): void {
    const key = collection as unknown as AnyCollection;
    if (this.#tracked.has(key)) return;
    const tracked: Tracked = { label, progress: null, error: null, unsubscribe: () => {} };
    const stops = [
      collection.on('change', () => this.#scheduleCounts()),
      collection.on('progress', (progress) => {
        tracked.progress = progress.done < progress.total ? progress : null;
        this.#derive();
      }),
      collection.on('sync', (result: SyncResult) => {
        tracked.progress = null;
        const refused = result.errors.filter((error) => error.status !== undefined);
        tracked.error = refused.length ? { message: describeRefusedChanges(refused, label()), network: false } : null;
        const now = Date.now();
        localStorage.setItem(this.#lastSyncKey, String(now));
        this.#update({ lastSyncAt: now });
        this.#scheduleCounts();
      }),
      collection.on('error', (error: unknown) => {
        tracked.progress = null;
        const code = (error as { code?: unknown }).code;
        tracked.error = {
          message: describeError(error),
          network: typeof code === 'string' && code.startsWith('QUIRE_ERR_TRANSPORT'),
        };
        this.#derive();
        this.#scheduleCounts();
      }),
    ];
    tracked.unsubscribe = () => {
      for (const stop of stops) stop();
    };
    this.#tracked.set(key, tracked);
    this.#scheduleCounts();
  }

  untrack<T extends Record<string, unknown>>(collection: Collection<T>): void {
    const key = collection as unknown as AnyCollection;
    this.#tracked.get(key)?.unsubscribe();
    this.#tracked.delete(key);
    this.#derive();
    this.#scheduleCounts();
  }

  /** Re-reads the pending and conflict counts (after a local write, a resolution…). */
  refresh(): void {
    this.#scheduleCounts();
  }

  close(): void {
    this.#closed = true;
    this.#stopLive();
    for (const tracked of this.#tracked.values()) tracked.unsubscribe();
    this.#tracked.clear();
    if (this.#countTimer) clearTimeout(this.#countTimer);
    removeEventListener('online', this.#onOnline);
    removeEventListener('offline', this.#onOffline);
    this.#listeners.clear();
  }

  #scheduleCounts(): void {
    if (this.#closed || this.#countTimer) return;
    // Coalesce bursts (a page of 500 pulled records is one count, not 500).
    this.#countTimer = setTimeout(() => {
      this.#countTimer = null;
      void this.#count();
    }, 50);
  }

  async #count(): Promise<void> {
    const collections = [...this.#tracked.keys()];
    try {
      const [pending, conflicts] = await Promise.all([
        Promise.all(collections.map((collection) => collection.pending())),
        Promise.all(collections.map((collection) => collection.conflicts())),
      ]);
      const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
      this.#update({ pending: sum(pending), conflicts: sum(conflicts.map((list) => list.length)) });
    } catch (error) {
      this.#update({ error: describeError(error) });
    }
  }

  /** Progress and error come from the tracked collections; the first one showing either wins. */
  #derive(): void {
    let progress: SyncSnapshot['progress'] = null;
    let error: string | null = null;
    for (const tracked of this.#tracked.values()) {
      if (!progress && tracked.progress) progress = { label: tracked.label(), ...tracked.progress };
      // While offline, "cannot reach the server" says nothing the offline badge does not.
      if (!error && tracked.error && !(tracked.error.network && !this.#snapshot.online)) error = tracked.error.message;
    }
    this.#update({ progress, error });
  }

  #update(patch: Partial<SyncSnapshot>): void {
    if (this.#closed) return;
    const next = { ...this.#snapshot, ...patch };
    const changed = (Object.keys(patch) as (keyof SyncSnapshot)[]).some((key) => next[key] !== this.#snapshot[key]);
    this.#snapshot = next;
    if (!changed) return;
    for (const listener of this.#listeners) listener(next);
    // Network errors are hidden while offline: going on or off line changes what is shown.
    if ('online' in patch) this.#derive();
  }
}
