/**
 * `client.live`: how fresh the client's knowledge of remote changes is (`status`), and every
 * entry heard (`onEntry`). The connection itself (live.ts: detection, the stream or the poll,
 * leading or following other tabs) is code an app pays for only when it turns auto-sync on: it is
 * loaded on first use.
 */
import { loadWhenOnline } from '../online.js';
import type { ChangeEntry } from './change-monitor.js';
import type { LiveConnection, LiveSetup } from './live.js';
import type { LiveStatus } from './live-status.js';

export class LiveChanges {
  readonly #setup: LiveSetup;
  #status: LiveStatus = {
    mode: 'none',
    state: 'idle',
    connected: false,
    follower: false,
    lastContact: null,
    lastEventId: null,
  };
  readonly #statusListeners = new Set<(status: LiveStatus) => void>();
  readonly #entryListeners = new Set<(entry: ChangeEntry) => void>();
  #connection: Promise<LiveConnection> | null = null;

  constructor(setup: LiveSetup) {
    this.#setup = setup;
  }

  get status(): LiveStatus {
    // Before the connection is loaded (auto-sync started offline), the browser says it all.
    if (this.#connection === null && !this.#setup.online.isOnline()) return { ...this.#status, state: 'offline' };
    return { ...this.#status };
  }

  onStatus(listener: (status: LiveStatus) => void): () => void {
    this.#statusListeners.add(listener);
    return () => this.#statusListeners.delete(listener);
  }

  /** Every entry received (all collections). */
  onEntry(listener: (entry: ChangeEntry) => void): () => void {
    this.#entryListeners.add(listener);
    return () => this.#entryListeners.delete(listener);
  }

  /** @internal The connection (auto-sync watches through it), loaded on first use. */
  connection(): Promise<LiveConnection> {
    this.#connection ??= loadWhenOnline(() => import('./live.js'), this.#setup.online).then(
      ({ LiveConnection }) =>
        new LiveConnection(this.#setup, {
          status: (status) => {
            this.#status = status;
            for (const listener of [...this.#statusListeners]) listener({ ...status });
          },
          entry: (entry) => {
            for (const listener of [...this.#entryListeners]) listener(entry);
          },
        }),
    );
    return this.#connection;
  }

  close(): void {
    void this.#connection?.then((connection) => connection.close());
  }
}
