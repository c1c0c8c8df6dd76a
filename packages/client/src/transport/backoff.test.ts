import { describe, expect, it } from 'vitest';
import { BackoffState, exponentialDelay, parseRetryAfter } from './backoff.js';

describe('Backoff and Retry-After', () => {
  it('a Backoff header starts a pause that a response without it clears', () => {
    let now = 1_000;
    const state = new BackoffState(() => now);
    state.observe(new Headers({ Backoff: '30' }));
    expect(state.remaining()).toBe(30_000);
    now += 10_000;
    expect(state.remaining()).toBe(20_000);
    state.observe(new Headers());
    expect(state.remaining()).toBe(0);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('3')).toBe(3_000);
    expect(parseRetryAfter(new Date(61_000).toUTCString(), 1_000)).toBe(60_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(null)).toBeNull();
  });

  it('doubles the ceiling of the jittered delay up to the maximum', () => {
    expect(exponentialDelay(0, 100, 10_000, () => 1)).toBe(100);
    expect(exponentialDelay(3, 100, 10_000, () => 1)).toBe(800);
    expect(exponentialDelay(3, 100, 10_000, () => 0)).toBe(400);
    expect(exponentialDelay(20, 100, 10_000, () => 1)).toBe(10_000);
  });
});
