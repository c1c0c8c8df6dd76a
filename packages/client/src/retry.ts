/**
 * Waiting before trying again, written once for the transport (a request), auto-sync (a sync)
 * and live changes (a reconnection): delays grow exponentially up to a cap, with jitter so that
 * clients that failed together do not come back together, never sooner than the server asked,
 * and every wait ends early when its signal aborts.
 */
import { BackoffError, ServerError } from './errors.js';

export interface RetryPolicy {
  /** Ceiling of the delay before the first retry; it doubles with each further one. */
  baseMs: number;
  /** Cap of that ceiling. */
  maxMs: number;
}

/**
 * The delay before retry number `retry` (0 for the first): between half and all of
 * min(maxMs, baseMs · 2^retry), and never less than `serverWaitMs` (see serverWait).
 */
export function retryDelay(
  policy: RetryPolicy,
  retry: number,
  serverWaitMs: number | null = null,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** retry);
  const delay = Math.round(ceiling / 2 + (random() * ceiling) / 2);
  return serverWaitMs === null ? delay : Math.max(delay, serverWaitMs);
}

/** Statuses whose `Retry-After` says when to try again (the protocol sends it on 503 and 409, HTTP on 429). */
const RETRY_AFTER_STATUSES = new Set([409, 429, 503]);

/** How long the server asked us to wait after `error`, in ms; null when it did not say. */
export function serverWait(error: unknown): number | null {
  if (error instanceof BackoffError) return error.retryAfter;
  if (error instanceof ServerError && RETRY_AFTER_STATUSES.has(error.status))
    return parseRetryAfter(error.headers.get('retry-after'));
  return null;
}

/** Parses `Retry-After` (seconds or HTTP date) into milliseconds, null when absent or invalid. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

export interface SleepOptions {
  /** Ends the wait early; the caller then checks `signal.aborted`. */
  signal?: AbortSignal | undefined;
  /** Background waits: do not keep a Node process running for this timer alone. */
  unref?: boolean;
}

/** Waits `ms`; resolves at once when the signal is (or gets) aborted, never rejects. */
export function sleep(ms: number, { signal, unref = false }: SleepOptions = {}): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (unref) (timer as { unref?: () => void }).unref?.();
    signal?.addEventListener('abort', done, { once: true });
  });
}
