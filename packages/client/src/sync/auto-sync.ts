/**
 * Auto-sync of one collection, in ONE tab per replica: this tab asks for the leadership
 * (tabs/leadership.ts); while it leads, a scheduler (scheduler.ts) syncs at start, on its
 * interval, after local writes and after an outage. Unless `live: false`, it also listens to the
 * client's live changes (live.ts): an entry for this collection makes the leading tab pull, and
 * only when the replica is older than the entry — the stream opens with every collection's
 * timestamp, which costs nothing to collections already current. Deletion entries are noted for
 * whichever tab syncs next. The other tabs follow through the shared replica.
 */
import type { OnlineSource } from '../online.js';
import { type Leadership, lead } from '../tabs/leadership.js';
import type { SyncLock } from '../tabs/locks.js';
import type { SyncEngine } from './engine.js';
import type { ChangeEntry, LiveMode } from './live.js';
import type { LiveChanges } from './live-changes.js';
import { type AutoSyncOptions, type RecoverySource, SyncScheduler } from './scheduler.js';

/** What auto-sync needs of its collection. */
export interface AutoSyncHost {
  bucket: string;
  collection: string;
  engine: SyncEngine;
  /** Elects the tab that auto-syncs, under `leaderName`. */
  leaderLock: SyncLock;
  leaderName: string;
  online: OnlineSource;
  /** The server answers again after an outage (HttpTransport.onRecovered). */
  recovered: RecoverySource;
  /** The client's live changes, when it has them. */
  live?: LiveChanges;
  /** The collection's own sync (calls made meanwhile share one follow-up run). */
  sync(): Promise<unknown>;
  /** Resolves once the sync in progress in this tab, if any, has ended. */
  settled(): Promise<void>;
  /** This tab starts or stops leading. */
  leading(leading: boolean): void;
  /** The server announced a change of this collection (the `remote` event). */
  remote(entry: ChangeEntry): void;
}

export class AutoSync {
  readonly #host: AutoSyncHost;
  readonly #options: AutoSyncOptions;
  #leadership: Leadership | null = null;
  #scheduler: SyncScheduler | null = null;
  #stopLive: () => void = () => {};
  #stopped = false;

  constructor(host: AutoSyncHost, options: AutoSyncOptions) {
    this.#host = host;
    this.#options = { ...options, online: options.online ?? host.online };
  }

  /** Starts leading (or waiting to) and listening; resolves to how remote changes are learnt. */
  async start(): Promise<LiveMode> {
    const host = this.#host;
    this.#leadership = lead(
      host.leaderLock,
      host.leaderName,
      (signal) => {
        const scheduler = new SyncScheduler(
          () => host.sync(),
          this.#options,
          () => {},
          host.recovered,
        );
        this.#scheduler = scheduler;
        scheduler.start();
        signal.addEventListener('abort', () => {
          scheduler.stop();
          if (this.#scheduler === scheduler) this.#scheduler = null;
        });
      },
      (leading) => host.leading(leading),
    );
    if (this.#options.live === false || !host.live) return 'none';
    const connection = await host.live.connection();
    if (this.#stopped) return 'none';
    const watch = await connection.watch(host.bucket, host.collection, (entry) => this.#announced(entry));
    if (this.#stopped) {
      watch.stop();
      return 'none';
    }
    this.#stopLive = watch.stop;
    return watch.mode;
  }

  /** A local write (this tab's or another's): the leading tab pushes it soon. */
  notifyLocalWrite(): void {
    this.#scheduler?.notifyLocalWrite();
  }

  /** Stops; resolves once the leadership is given up (another tab may take over). */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#stopLive();
    this.#stopLive = () => {};
    this.#scheduler?.stop();
    this.#scheduler = null;
    const leadership = this.#leadership;
    this.#leadership = null;
    return leadership ? leadership.release() : Promise.resolve();
  }

  /** The pull-or-not decision for an entry of this collection. */
  #announced(entry: ChangeEntry): void {
    const { engine } = this.#host;
    this.#host.remote(entry);
    if (entry.deleted) engine.noteDeletion(entry.last_modified); // any tab may sync next
    const scheduler = this.#scheduler;
    if (!scheduler) return; // another tab auto-syncs this collection: it got the entry too
    // The replica may hold that version already: compare once the sync in progress, if any, has ended.
    void (async () => {
      await this.#host.settled();
      const pulled = await engine.pulledTimestamp();
      if (pulled === null || entry.last_modified > pulled) scheduler.syncNow();
    })().catch(() => scheduler.syncNow());
  }
}
