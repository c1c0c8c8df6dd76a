/**
 * How long to wait before trying again, for every loop of the server that retries: storage
 * transactions that deadlocked, the PostgreSQL connections that reopen (shared, LISTEN, at
 * start), the Redis listener, the workers' restarts. One formula, so that their delays are read
 * in one place; each caller keeps its own count of failures, since they count differently.
 */

export interface BackoffOptions {
  /** The delay of step 0, in ms. */
  firstMs: number;
  /** No delay exceeds this. */
  maxMs: number;
  /**
   * Step n waits `firstMs × (n + 1)` instead of `firstMs × 2ⁿ`: for ioredis's reconnection and the
   * retry of a deadlocked transaction, which have always grown by steps.
   */
  linear?: boolean;
  /**
   * A random delay between 0 and the computed one: peers that failed together (a deadlock's two
   * sides) do not collide again.
   */
  jitter?: boolean;
}

/** The delay of step `step` (0, 1, 2…). */
export function backoffDelay({ firstMs, maxMs, linear = false, jitter = false }: BackoffOptions, step: number): number {
  const grown = linear ? firstMs * (step + 1) : firstMs * 2 ** step;
  const capped = Math.min(maxMs, grown);
  return jitter ? Math.random() * capped : capped;
}

export interface SleepOptions {
  /** Ends the wait early (the promise then resolves: the caller checks why it woke). */
  signal?: AbortSignal;
  /** The wait does not keep the process alive. */
  unref?: boolean;
}

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export function sleep(ms: number, { signal, unref = false }: SleepOptions = {}): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (unref) timer.unref();
    signal?.addEventListener('abort', done, { once: true });
  });
}
