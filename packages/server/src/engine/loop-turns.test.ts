import { describe, expect, it } from 'vitest';
import { LoopTurns } from './loop-turns.js';

/** Busy work on the loop for `ms`. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** `slices` slices of `ms` each for `owner`, each after its turn; records the order they ran in. */
async function work(turns: LoopTurns, owner: string, slices: number, ms: number, log: string[]): Promise<void> {
  for (let slice = 0; slice < slices; slice++) {
    await turns.take(owner);
    spin(ms);
    log.push(owner);
  }
}

describe('LoopTurns', () => {
  it('gives each owner one slice per round once its share is spent, however many requests it runs', async () => {
    const turns = new LoopTurns(2);
    const log: string[] = [];
    // Four requests of a heavy owner, one of a light one: the light one is not behind all four.
    await Promise.all([
      ...Array.from({ length: 4 }, () => work(turns, 'heavy', 3, 3, log)),
      work(turns, 'light', 3, 0, log),
    ]);
    expect(log.filter((owner) => owner === 'light')).toHaveLength(3);
    // Each round: at most one slice of the heavy owner before the light one's next.
    const lightAt = log.flatMap((owner, index) => (owner === 'light' ? [index] : []));
    for (let k = 1; k < lightAt.length; k++) expect(lightAt[k]! - lightAt[k - 1]!).toBeLessThanOrEqual(2);
    expect(turns.waiting).toBe(0);
  });

  it('lets an owner run several short slices in one round, within its share', async () => {
    const turns = new LoopTurns(50);
    let polled = 0;
    const poll = setInterval(() => polled++, 0);
    const log: string[] = [];
    await work(turns, 'alone', 5, 0, log);
    clearInterval(poll);
    expect(log).toHaveLength(5);
    expect(polled).toBe(0); // all in the same round: no turn of the loop between them
  });

  it('lets the loop poll I/O between the rounds of a single busy owner', async () => {
    const turns = new LoopTurns(1);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    await work(turns, 'alone', 40, 2, []);
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(5);
  });

  it('charges an owner for work done elsewhere: its next slice waits a round per turn of it', async () => {
    const turns = new LoopTurns(2);
    const log: string[] = [];
    turns.charge('heavy', 10);
    await Promise.all([work(turns, 'heavy', 1, 0, log), work(turns, 'light', 8, 2, log)]);
    // 10 ms at 2 ms a round: five rounds of the light owner's slices first.
    expect(log.indexOf('heavy')).toBe(5);
    expect(turns.waiting).toBe(0);
  });

  it('lets a lone owner pay its charge in idle turns of the loop', async () => {
    const turns = new LoopTurns(2);
    turns.charge('alone', 1_000); // at most MAX_DEBT_MS of it
    const started = performance.now();
    await work(turns, 'alone', 1, 0, []);
    expect(performance.now() - started).toBeLessThan(100);
  });
});
