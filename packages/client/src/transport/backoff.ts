/**
 * Server-requested pauses. `Backoff: <s>` on any response means "come back later": while it runs
 * the sync engine refuses to start (kinto-http semantics: a response without the header clears it).
 * `Retry-After` on 503/409 is honoured by waiting before one retry.
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

/** Parses `Retry-After` (seconds or HTTP date) into milliseconds, null when absent or invalid. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** Exponential backoff with full jitter. */
export function exponentialDelay(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** attempt);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
