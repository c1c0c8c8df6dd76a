/**
 * The server-requested pause: `Backoff: <s>` on any response means "come back later": while it
 * runs the sync engine refuses to start (kinto-http semantics: a response without the header
 * clears it). `Retry-After` is read where a retry is decided (retry.ts).
 */
export class BackoffState {
  #until = 0;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Milliseconds left, 0 when none. */
  remaining(): number {
    return Math.max(0, this.#until - this.#now());
  }

  observe(headers: Headers): void {
    const value = headers.get('backoff');
    const seconds = value === null ? 0 : Number.parseInt(value, 10);
    this.#until = Number.isFinite(seconds) && seconds > 0 ? this.#now() + seconds * 1000 : 0;
  }
}
