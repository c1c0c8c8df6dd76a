/**
 * The fair share of the stream caps (stream-caps.ts), on the accounting alone: which stream goes
 * when a full cap admits a lighter holder, and which holders are refused. The HTTP side (real
 * streams from distinct addresses, both stores) is test/faults/stream-caps.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { type StreamHolder, StreamSlots, streamHolder } from './stream-caps.js';

class Stream {
  constructor(
    readonly holder: StreamHolder,
    readonly name: string,
  ) {}
}

function slots(perProcess: number, perAddress: number, perUser = 1000): StreamSlots<Stream> {
  return new StreamSlots<Stream>({
    changes_stream_max_per_process: perProcess,
    changes_stream_max_per_address: perAddress,
    changes_stream_max_per_user: perUser,
  });
}

/** Admits and adds a stream as the feed does (closing the victim first); the refusal, else null. */
function open(caps: StreamSlots<Stream>, holder: StreamHolder, name: string, closed: string[]): string | null {
  const admission = caps.admit(holder);
  if ('refused' in admission) return admission.refused;
  if (admission.victim) {
    caps.remove(admission.victim);
    closed.push(admission.victim.name);
  }
  caps.add(new Stream(holder, name));
  return null;
}

describe('stream caps, fair per address and per identity', () => {
  it('counts verified users by identity and everyone else by address, IPv6 by its /64', () => {
    expect(streamHolder({ userId: 'account:ann' }, '::ffff:10.0.0.1')).toEqual({
      address: '10.0.0.1',
      user: 'account:ann',
    });
    expect(streamHolder({ userId: 'basicauth:abc' }, '10.0.0.1')).toEqual({ address: '10.0.0.1', user: null });
    expect(streamHolder({ userId: null }, '2001:db8:1:2::7')).toEqual({ address: '2001:db8:1:2::/64', user: null });
  });

  it('a full process admits an address holding fewer, in place of the heaviest address’s oldest stream', () => {
    const caps = slots(6, 100);
    const closed: string[] = [];
    const attacker = (user: string) => ({ address: 'a', user });
    for (let index = 0; index < 6; index++)
      expect(open(caps, attacker(`u${index % 2}`), `a${index}`, closed)).toBeNull();
    // The process is full of one address's streams: a newcomer takes the oldest of its heaviest identity.
    expect(open(caps, { address: 'b', user: null }, 'b0', closed)).toBeNull();
    expect(closed).toEqual(['a0']);
    expect(open(caps, { address: 'c', user: 'account:c' }, 'c0', closed)).toBeNull();
    expect(caps.size).toBe(6);
    // The heaviest address gets nothing more; nor does an address already holding its share.
    expect(open(caps, attacker('u9'), 'a9', closed)).toBe('process');
    expect(open(caps, { address: 'b', user: null }, 'b1', closed)).toBeNull();
    expect(open(caps, { address: 'b', user: null }, 'b2', closed)).toBe('process');
    expect(closed).toEqual(['a0', 'a1', 'a2']);
  });

  it('a full address admits an identity holding fewer there, in place of the heaviest one’s oldest stream', () => {
    const caps = slots(1000, 4);
    const closed: string[] = [];
    for (let index = 0; index < 4; index++)
      expect(open(caps, { address: 'nat', user: null }, `anon${index}`, closed)).toBeNull();
    expect(open(caps, { address: 'nat', user: null }, 'anon4', closed)).toBe('address');
    expect(open(caps, { address: 'nat', user: 'account:ann' }, 'ann0', closed)).toBeNull();
    expect(open(caps, { address: 'nat', user: 'account:ann' }, 'ann1', closed)).toBeNull();
    expect(closed).toEqual(['anon0', 'anon1']);
    // Two each now: neither takes the other's place.
    expect(open(caps, { address: 'nat', user: 'account:ann' }, 'ann2', closed)).toBe('address');
    expect(open(caps, { address: 'nat', user: null }, 'anon5', closed)).toBe('address');
    // Another address is not concerned.
    expect(open(caps, { address: 'elsewhere', user: null }, 'x0', closed)).toBeNull();
  });

  it('refuses a verified user over its own cap, and frees places as streams close', () => {
    const caps = slots(3, 100, 2);
    const closed: string[] = [];
    const ann = { address: 'a', user: 'account:ann' };
    expect(open(caps, ann, 'ann0', closed)).toBeNull();
    expect(open(caps, { address: 'b', user: 'account:ann' }, 'ann1', closed)).toBeNull();
    expect(open(caps, ann, 'ann2', closed)).toBe('user');
    const bob = new Stream({ address: 'c', user: 'account:bob' }, 'bob0');
    expect(caps.admit(bob.holder)).toEqual({ victim: null });
    caps.add(bob);
    expect(open(caps, { address: 'd', user: null }, 'd0', closed)).toBe('process');
    caps.remove(bob);
    expect(open(caps, { address: 'd', user: null }, 'd0', closed)).toBeNull();
    expect(closed).toEqual([]);
  });
});
