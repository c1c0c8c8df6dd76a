import { describe, expect, it, vi } from 'vitest';
import { backoffDelay, sleep } from './retry.js';

describe('backoffDelay', () => {
  it('doubles from the first delay up to the cap', () => {
    const options = { firstMs: 50, maxMs: 1_000 };
    expect([0, 1, 2, 3, 4, 5, 10].map((step) => backoffDelay(options, step))).toEqual([
      50, 100, 200, 400, 800, 1_000, 1_000,
    ]);
  });

  it('grows by steps when linear', () => {
    const options = { firstMs: 250, maxMs: 1_000, linear: true };
    expect([0, 1, 2, 3, 4].map((step) => backoffDelay(options, step))).toEqual([250, 500, 750, 1_000, 1_000]);
  });

  it('draws a jittered delay between 0 and the computed one', () => {
    const random = vi.spyOn(Math, 'random');
    random.mockReturnValueOnce(0).mockReturnValueOnce(0.5).mockReturnValueOnce(0.999);
    const options = { firstMs: 20, maxMs: 1_000, linear: true, jitter: true };
    expect(backoffDelay(options, 0)).toBe(0);
    expect(backoffDelay(options, 1)).toBe(20);
    expect(backoffDelay(options, 2)).toBeCloseTo(59.94);
  });
});

describe('sleep', () => {
  it('waits the delay', async () => {
    vi.useFakeTimers();
    try {
      let done = false;
      const waiting = sleep(100).then(() => {
        done = true;
      });
      await vi.advanceTimersByTimeAsync(99);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await waiting;
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('resolves early when its signal aborts, and at once when it already has', async () => {
    const controller = new AbortController();
    const started = performance.now();
    const waiting = sleep(60_000, { signal: controller.signal });
    controller.abort();
    await waiting;
    await sleep(60_000, { signal: controller.signal });
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
