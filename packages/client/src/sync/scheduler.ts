/**
 * Automatic sync: when the network comes back, on an interval, and shortly after local writes
 * (debounced). Failures retry with exponential backoff; a server-requested pause (`Backoff`, or
 * a `Retry-After` the transport did not wait out) is always waited out. The online source is
 * injectable (Node has no `online` events).
 *
 * Recovery: the back-off is for a server that is still down. As soon as there is evidence that it
 * is back — the browser's `online` event, any request answered again (`recovered`: the live
 * stream reconnecting, another collection's sync), a change announced for this collection — the
 * failures are forgotten and a sync runs within `recoveryJitterMs` (a random delay, so that the
 * clients that lost the server together do not all come back in the same instant).
 */
import { browserOnlineSource, type OnlineSource } from '../online.js';
import { type RetryPolicy, retryDelay, serverWait } from '../retry.js';

export interface AutoSyncOptions {
  /** Sync every `intervalMs` (default 60 s; 0 disables). */
  intervalMs?: number;
  /** Sync this long after the last local write (default 1 s; null disables). */
  debounceMs?: number | null;
  /** First retry delay after a failure, doubled each time (default 1 s) up to `maxBackoffMs` (default 5 min). */
  backoffMs?: number;
  maxBackoffMs?: number;
  online?: OnlineSource;
  /**
   * After an outage (the `online` event, the server answering again), sync within this many ms:
   * a random delay in [0, recoveryJitterMs] spreads the clients coming back together (default 1 s).
   */
  recoveryJitterMs?: number;
  /**
   * Sync as soon as the server announces a change of this collection, through the change monitor
   * (`LiveChanges`: the pushed stream when the server has one, else the monitor polled; default
   * true). Without a monitor on the server, only `intervalMs` brings remote changes.
   */
  live?: boolean;
}

/** Hears when the server answers again after it could not be reached (HttpTransport.onRecovered). */
export type RecoverySource = (listener: () => void) => () => void;

export class SyncScheduler {
  readonly #run: () => Promise<unknown>;
  readonly #intervalMs: number;
  readonly #debounceMs: number | null;
  readonly #jitterMs: number;
  readonly #online: OnlineSource;
  readonly #recovered: RecoverySource;
  readonly #retry: RetryPolicy;
  readonly #onError: (error: unknown) => void;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #failures = 0;
  /** No sync before this time (ms since epoch): what the server asked (Backoff, Retry-After). */
  #notBefore = 0;
  #running = false;
  #rerun = false;
  #stopped = true;
  #unsubscribe: () => void = () => {};

  constructor(
    run: () => Promise<unknown>,
    options: AutoSyncOptions,
    onError: (error: unknown) => void,
    recovered: RecoverySource = () => () => {},
  ) {
    this.#run = run;
    this.#onError = onError;
    this.#recovered = recovered;
    this.#intervalMs = options.intervalMs ?? 60_000;
    this.#debounceMs = options.debounceMs === undefined ? 1_000 : options.debounceMs;
    this.#jitterMs = options.recoveryJitterMs ?? 1_000;
    this.#online = options.online ?? browserOnlineSource();
    this.#retry = { baseMs: options.backoffMs ?? 1_000, maxMs: options.maxBackoffMs ?? 300_000 };
  }

  get failures(): number {
    return this.#failures;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    // Back online: sync (nothing ran while offline), failures or not.
    const offOnline = this.#online.subscribe((online) => {
      if (online) this.#recover(true);
      else this.#clear();
    });
    const offRecovered = this.#recovered(() => this.#recover(false));
    this.#unsubscribe = () => {
      offOnline();
      offRecovered();
    };
    this.#schedule(0);
  }

  stop(): void {
    this.#stopped = true;
    this.#unsubscribe();
    this.#clear();
  }

  /**
   * The server announced a change (live changes): sync now, or right after the sync in progress.
   * The announcement came from the server: a failure back-off ends (a server-requested wait does not).
   */
  syncNow(): void {
    if (this.#stopped) return;
    this.#failures = 0;
    if (this.#running) this.#rerun = true;
    else this.#schedule(this.#serverWait());
  }

  /** A local write happened: sync soon (debounced). */
  notifyLocalWrite(): void {
    if (this.#stopped || this.#debounceMs === null || this.#failures > 0) return;
    this.#schedule(Math.max(this.#debounceMs, this.#serverWait()));
  }

  /** The network or the server is back: forget the failures, sync after a random delay (see the module comment). */
  #recover(always: boolean): void {
    if (this.#stopped || (this.#failures === 0 && !always)) return;
    this.#failures = 0;
    if (this.#running) this.#rerun = true;
    else this.#schedule(Math.max(Math.round(Math.random() * this.#jitterMs), this.#serverWait()));
  }

  #serverWait(): number {
    return Math.max(0, this.#notBefore - Date.now());
  }

  #clear(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#clear();
    this.#timer = setTimeout(() => void this.#tick(), delay);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  async #tick(): Promise<void> {
    this.#timer = null;
    if (this.#stopped || !this.#online.isOnline()) return;
    if (this.#running) {
      this.#rerun = true;
      return;
    }
    this.#running = true;
    let delay: number | null = null;
    try {
      await this.#run();
      this.#failures = 0;
    } catch (error) {
      this.#failures++;
      const asked = serverWait(error);
      if (asked !== null) this.#notBefore = Date.now() + asked;
      delay = retryDelay(this.#retry, this.#failures - 1, asked);
      this.#onError(error);
    } finally {
      this.#running = false;
    }
    const rerun = this.#rerun;
    this.#rerun = false;
    // A change announced during a sync that succeeded: one more run.
    if (rerun && delay === null) this.#schedule(this.#serverWait());
    else if (delay !== null) this.#schedule(delay);
    else if (this.#intervalMs > 0) this.#schedule(this.#intervalMs);
  }
}
