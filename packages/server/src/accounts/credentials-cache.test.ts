import { describe, expect, it } from 'vitest';
import { VerifiedCredentialsCache } from './credentials-cache.js';

describe('VerifiedCredentialsCache', () => {
  it('remembers a verified pair, and only that pair', () => {
    const cache = new VerifiedCredentialsCache(30, 100);
    cache.remember('alice', 's3cret');
    expect(cache.has('alice', 's3cret')).toBe(true);
    expect(cache.has('alice', 'other')).toBe(false);
    expect(cache.has('bob', 's3cret')).toBe(false);
  });

  it('forgets every password of one account, not those of an account whose id it prefixes', () => {
    const cache = new VerifiedCredentialsCache(30, 100);
    cache.remember('alice', 'one');
    cache.remember('alice', 'two');
    cache.remember('alice2', 'one');
    cache.forget('alice');
    expect(cache.has('alice', 'one')).toBe(false);
    expect(cache.has('alice', 'two')).toBe(false);
    expect(cache.has('alice2', 'one')).toBe(true);
  });

  it('lets entries expire a fixed time after the check, used or not', async () => {
    const cache = new VerifiedCredentialsCache(0.5, 100);
    cache.remember('alice', 's3cret');
    expect(cache.has('alice', 's3cret')).toBe(true); // a use does not extend it
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(cache.has('alice', 's3cret')).toBe(false);
  });

  it('keeps at most maxEntries, dropping the least recently used', () => {
    const cache = new VerifiedCredentialsCache(30, 2);
    cache.remember('a', 'p');
    cache.remember('b', 'p');
    expect(cache.has('a', 'p')).toBe(true); // a is now the most recently used
    cache.remember('c', 'p');
    expect(cache.has('b', 'p')).toBe(false);
    expect(cache.has('a', 'p')).toBe(true);
    expect(cache.has('c', 'p')).toBe(true);
  });

  it('remembers nothing with a time to live of 0', () => {
    const cache = new VerifiedCredentialsCache(0, 100);
    cache.remember('alice', 's3cret');
    expect(cache.has('alice', 's3cret')).toBe(false);
  });
});
