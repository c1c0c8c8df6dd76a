import { describe, expect, it } from 'vitest';
import { sessionOwner } from '../../../http/session-budget.js';
import { FairShare, type Release } from './fair-share.js';

describe('FairShare', () => {
  it('holds one owner to its share while others find slots free, and serves waiting owners in turn', async () => {
    const share = new FairShare({ slots: 4, perOwner: 2, perAddress: 4, waitMs: 5_000, what: 'slot' });
    const granted: string[] = [];
    const take = (owner: string) =>
      share.acquire({ owner }).then((release) => {
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
    const share = new FairShare({ slots: 1, perOwner: 1, perAddress: 1, waitMs: 100, what: 'slot' });
    const held = await share.acquire({ owner: 'a' });
    const controller = new AbortController();
    const leaving = share.acquire({ owner: 'b' }, controller.signal);
    controller.abort(new Error('gone'));
    await expect(leaving).rejects.toThrow(/gone/);
    await expect(share.acquire({ owner: 'c' })).rejects.toThrow(/no slot free within 100 ms/);
    held();
    expect(share.stats).toEqual({ held: 0, waiting: 0 });
    (await share.acquire({ owner: 'c' }))();
  });

  it('holds the identities of one address to its share, and serves waiting addresses in turn', async () => {
    const share = new FairShare({ slots: 4, perOwner: 1, perAddress: 2, waitMs: 5_000, what: 'slot' });
    const granted: string[] = [];
    const take = (owner: string, address: string) =>
      share.acquire({ owner, address }).then((release) => {
        granted.push(owner);
        return release;
      });
    // Five identities of one address: two slots, though four are free.
    const flood = ['m1', 'm2', 'm3', 'm4', 'm5'].map((owner) => take(owner, '10.0.0.1'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(granted).toEqual(['m1', 'm2']);
    const other = await take('o1', '10.0.0.2');
    const anonymous = await share.acquire({ owner: 'address:10.0.0.3', address: '10.0.0.3' });
    expect(share.stats).toEqual({ held: 4, waiting: 3 });
    const otherWaiting = take('o2', '10.0.0.2');
    // A slot of the flooding address frees: its next identity; then one of the other address's
    // frees: the other address (waiting, under its cap) before the flood's third.
    ((await flood[0]) as Release)();
    await new Promise((resolve) => setImmediate(resolve));
    other();
    await new Promise((resolve) => setImmediate(resolve));
    expect(granted.slice(3)).toEqual(['m3', 'o2']);
    anonymous();
    await new Promise((resolve) => setImmediate(resolve));
    expect(granted.slice(5)).toEqual([]); // the flood is at its cap of two
    for (const release of await Promise.all([flood[1]!, flood[2]!, otherWaiting])) release();
    for (const release of await Promise.all(flood.slice(3))) release();
    expect(share.stats).toEqual({ held: 0, waiting: 0 });
  });

  it('keys callers by identity, anonymous ones by address (an IPv6 one by /64)', () => {
    expect(sessionOwner('basicauth:x', '1.2.3.4')).toBe('user:basicauth:x');
    expect(sessionOwner(null, '2001:db8::1')).toBe(sessionOwner(null, '2001:db8::2'));
    expect(sessionOwner(null, '1.2.3.4')).not.toBe(sessionOwner(null, '1.2.3.5'));
  });
});
