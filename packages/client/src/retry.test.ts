import { describe, expect, it, vi } from 'vitest';
import { BackoffError, NetworkError, ServerError } from './errors.js';
import { parseRetryAfter, retryDelay, serverWait, sleep } from './retry.js';

describe('retryDelay', () => {
  const policy = { baseMs: 100, maxMs: 10_000 };

  it('doubles the ceiling with each retry and waits between half of it and all of it', () => {
    expect(retryDelay(policy, 0, null, () => 1)).toBe(100);
    expect(retryDelay(policy, 0, null, () => 0)).toBe(50);
    expect(retryDelay(policy, 3, null, () => 1)).toBe(800);
    expect(retryDelay(policy, 3, null, () => 0)).toBe(400);
  });

  it('never lets the ceiling pass the cap', () => {
    expect(retryDelay(policy, 20, null, () => 1)).toBe(10_000);
    expect(retryDelay(policy, 20, null, () => 0)).toBe(5_000);
  });

  it('never retries sooner than the server asked, nor sooner than its own delay', () => {
    expect(retryDelay(policy, 0, 3_000, () => 1)).toBe(3_000);
    expect(retryDelay(policy, 20, 3_000, () => 1)).toBe(10_000);
  });
});

describe('serverWait', () => {
  const withRetryAfter = (status: number, value: string) =>
    new ServerError(status, null, new Headers({ 'Retry-After': value }));

  it('reads Retry-After on 503, 409 and 429, and a BackoffError', () => {
    expect(serverWait(withRetryAfter(503, '3'))).toBe(3_000);
    expect(serverWait(withRetryAfter(409, '1'))).toBe(1_000);
    expect(serverWait(withRetryAfter(429, '2'))).toBe(2_000);
    expect(serverWait(new BackoffError(30_000))).toBe(30_000);
  });

  it('is null when the server said nothing about when to come back', () => {
    expect(serverWait(withRetryAfter(500, '3'))).toBeNull();
    expect(serverWait(new ServerError(503, null, new Headers()))).toBeNull();
    expect(serverWait(new NetworkError('refused'))).toBeNull();
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('3')).toBe(3_000);
    expect(parseRetryAfter(new Date(61_000).toUTCString(), 1_000)).toBe(60_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(null)).toBeNull();
  });
});

describe('sleep', () => {
  it('waits the given time', async () => {
    vi.useFakeTimers();
    try {
      let done = false;
      const waiting = sleep(1_000).then(() => (done = true));
      await vi.advanceTimersByTimeAsync(999);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await waiting;
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('ends as soon as its signal aborts, and at once when it already has', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const waiting = sleep(60_000, { signal: controller.signal });
    controller.abort();
    await waiting;
    await sleep(60_000, { signal: controller.signal });
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
