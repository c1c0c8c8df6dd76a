import { describe, expect, it } from 'vitest';
import { sessionOwner } from '../../../http/session-budget.js';
import { FairShare, type Release } from './fair-share.js';

describe('FairShare', () => {
  it('holds one owner to its share while others find slots free, and serves waiting owners in turn', async () => {
    const share = new FairShare(4, 2, 5_000);
    const granted: string[] = [];
    const take = (owner: string) =>
      share.acquire(owner).then((release) => {
        granted.push(owner);
        return release;
      });
    const first = await Promise.all([take('a'), take('a')]);
    const aWaiting = [take('a'), take('a'), take('a')];
    await new Promise((resolve) => setImmediate(resolve));
    expect(granted).toEqual(['a', 'a']); // a's third waits though two slots are free
    const b = await take('b');
    const c = await take('c');
    expect(share.stats).toEqual({ held: 4, waiting: 3 });
    const dWaiting = take('d');
    // A slot of a frees: d (never served) and a alternate, a never past its two.
    first[0]!();
    await new Promise((resolve) => setImmediate(resolve));
    b();
    await new Promise((resolve) => setImmediate(resolve));
    expect(granted.slice(4)).toEqual(['a', 'd']);
    for (const release of [first[1]!, c, await dWaiting, ...(await Promise.all(aWaiting.slice(0, 1)))] as Release[])
      release();
    await Promise.all(aWaiting).then((releases) => {
      for (const release of releases) release();
    });
    expect(share.stats).toEqual({ held: 0, waiting: 0 });
  });

  it('lets a waiter leave when its signal aborts, and fails one that waits too long', async () => {
    const share = new FairShare(1, 1, 100);
    const held = await share.acquire('a');
    const controller = new AbortController();
    const leaving = share.acquire('b', controller.signal);
    controller.abort(new Error('gone'));
    await expect(leaving).rejects.toThrow(/gone/);
    await expect(share.acquire('c')).rejects.toThrow(/no database connection free within 100 ms/);
    held();
    expect(share.stats).toEqual({ held: 0, waiting: 0 });
    (await share.acquire('c'))();
  });

  it('keys callers by identity, anonymous ones by address (an IPv6 one by /64)', () => {
    expect(sessionOwner('basicauth:x', '1.2.3.4')).toBe('user:basicauth:x');
    expect(sessionOwner(null, '2001:db8::1')).toBe(sessionOwner(null, '2001:db8::2'));
    expect(sessionOwner(null, '1.2.3.4')).not.toBe(sessionOwner(null, '1.2.3.5'));
  });
});
