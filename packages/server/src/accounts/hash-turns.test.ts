/** Turns at argon2: the capacity, the rotation between addresses, the refusals. */
import { describe, expect, it } from 'vitest';
import { HashTurns } from './hash-turns.js';

/** Work that ends when told to, noting when it started. */
function gatedWork(log: string[], name: string) {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const work = () => {
    log.push(name);
    return ended.then(() => name);
  };
  return { work, end };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('HashTurns', () => {
  it('runs at most `capacity` at once, then serves waiting addresses in rotation', async () => {
    const turns = new HashTurns({ capacity: 2, maxQueued: 100, waitMs: 10_000 });
    const started: string[] = [];
    const flood = Array.from({ length: 10 }, (_, i) => gatedWork(started, `a${i}`));
    const runs = flood.map(({ work }) => turns.run('10.0.0.1', work));
    const other = gatedWork(started, 'b0');
    const otherRun = turns.run('10.0.0.2', other.work);
    await tick();
    expect(started).toEqual(['a0', 'a1']);
    expect(turns.stats).toEqual({ running: 2, waiting: 9 });
    flood[0]!.end();
    flood[1]!.end();
    await tick();
    // The flood's address had its turn; the other address, behind its eight waiting, the next.
    expect(started).toEqual(['a0', 'a1', 'a2', 'b0']);
    other.end();
    await otherRun;
    for (const { end } of flood) end();
    expect(await Promise.all(runs)).toEqual(flood.map((_, i) => `a${i}`));
    expect(turns.stats).toEqual({ running: 0, waiting: 0 });
  });

  it('counts an IPv6 /64 as one address', async () => {
    const turns = new HashTurns({ capacity: 1, maxQueued: 1, waitMs: 10_000 });
    const started: string[] = [];
    const first = gatedWork(started, 'first');
    const running = turns.run('2001:db8::1', first.work);
    const waiting = turns.run('2001:db8::2', async () => 'second');
    await expect(turns.run('2001:db8:0:0:ffff::3', async () => 'third')).rejects.toMatchObject({
      status: 429,
      errno: 117,
    });
    first.end();
    expect([await running, await waiting]).toEqual(['first', 'second']);
  });

  it('refuses past the queue of an address (429) and after the wait (503 with Retry-After)', async () => {
    const turns = new HashTurns({ capacity: 1, maxQueued: 2, waitMs: 50 });
    const started: string[] = [];
    const held = gatedWork(started, 'held');
    const running = turns.run('10.0.0.1', held.work);
    const waiters = [turns.run('10.0.0.2', async () => 1), turns.run('10.0.0.2', async () => 2)];
    await expect(turns.run('10.0.0.2', async () => 3)).rejects.toMatchObject({ status: 429, errno: 117 });
    for (const waiter of waiters) {
      await expect(waiter).rejects.toMatchObject({ status: 503, errno: 201, headers: { 'Retry-After': '1' } });
    }
    expect(turns.stats).toEqual({ running: 1, waiting: 0 });
    held.end();
    await running;
    // A turn freed with nobody waiting: the next one runs at once.
    expect(await turns.run('10.0.0.2', async () => 'now')).toBe('now');
  });

  it('frees the turn of work that throws', async () => {
    const turns = new HashTurns({ capacity: 1, maxQueued: 4, waitMs: 10_000 });
    await expect(turns.run('10.0.0.1', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await turns.run('10.0.0.1', async () => 'next')).toBe('next');
    expect(turns.stats).toEqual({ running: 0, waiting: 0 });
  });
});
