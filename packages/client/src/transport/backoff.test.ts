import { describe, expect, it } from 'vitest';
import { BackoffState } from './backoff.js';

describe('Backoff', () => {
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
});
