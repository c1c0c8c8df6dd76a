/**
 * Automatic sync: when the network comes back, on an interval, and shortly after local writes
 * (debounced). Failures retry with exponential backoff; a server-requested pause (`Backoff`, or
 * a `Retry-After` the transport did not wait out) is always waited out. The online source is
 * injectable (Node has no `online` events).
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
   * Sync as soon as the server announces a change of this collection, through the change monitor
   * (`LiveChanges`: the pushed stream when the server has one, else the monitor polled; default
   * true). Without a monitor on the server, only `intervalMs` brings remote changes.
   */
  live?: boolean;
}

export class SyncScheduler {
  readonly #run: () => Promise<unknown>;
  readonly #options: Required<Omit<AutoSyncOptions, 'debounceMs' | 'live' | 'backoffMs' | 'maxBackoffMs'>> & {
    debounceMs: number | null;
  };
  readonly #retry: RetryPolicy;
  readonly #onError: (error: unknown) => void;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #failures = 0;
  #running = false;
  #rerun = false;
  #stopped = true;
  #unsubscribe: () => void = () => {};

  constructor(run: () => Promise<unknown>, options: AutoSyncOptions, onError: (error: unknown) => void) {
    this.#run = run;
    this.#onError = onError;
    this.#options = {
      intervalMs: options.intervalMs ?? 60_000,
      debounceMs: options.debounceMs === undefined ? 1_000 : options.debounceMs,
      online: options.online ?? browserOnlineSource(),
    };
    this.#retry = { baseMs: options.backoffMs ?? 1_000, maxMs: options.maxBackoffMs ?? 300_000 };
  }

  get failures(): number {
    return this.#failures;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#unsubscribe = this.#options.online.subscribe((online) => {
      if (online) this.#schedule(0);
      else this.#clear();
    });
    this.#schedule(0);
  }

  stop(): void {
    this.#stopped = true;
    this.#unsubscribe();
    this.#clear();
  }

  /** The server announced a change (live changes): sync now, or right after the sync in progress. */
  syncNow(): void {
    if (this.#stopped || this.#failures > 0) return;
    if (this.#running) this.#rerun = true;
    else this.#schedule(0);
  }

  /** A local write happened: sync soon (debounced). */
  notifyLocalWrite(): void {
    if (this.#stopped || this.#options.debounceMs === null || this.#failures > 0) return;
    this.#schedule(this.#options.debounceMs);
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
    if (this.#stopped || !this.#options.online.isOnline()) return;
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
      delay = retryDelay(this.#retry, this.#failures - 1, serverWait(error));
      this.#onError(error);
    } finally {
      this.#running = false;
    }
    if (delay !== null) this.#schedule(delay);
    else if (this.#rerun) {
      this.#rerun = false;
      this.#schedule(0);
    } else if (this.#options.intervalMs > 0) this.#schedule(this.#options.intervalMs);
  }
}
