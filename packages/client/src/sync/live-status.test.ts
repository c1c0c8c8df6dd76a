import { describe, expect, it } from 'vitest';
import { INITIAL_LIVE_STATUS, type LiveEvent, LiveStatusMachine, nextLiveStatus } from './live-status.js';

const run = (events: LiveEvent[]) => events.reduce(nextLiveStatus, INITIAL_LIVE_STATUS);

describe('live status machine', () => {
  it('leads: detect → mode → connect → open (connected) → retry → connect → open', () => {
    const status = run([
      { type: 'detect' },
      { type: 'mode', mode: 'stream' },
      { type: 'connect' },
      { type: 'open', at: 10 },
    ]);
    expect(status).toEqual({
      mode: 'stream',
      state: 'connected',
      connected: true,
      follower: false,
      lastContact: 10,
      lastEventId: null,
    });
    const dropped = nextLiveStatus(status, { type: 'retry' });
    expect(dropped).toMatchObject({ state: 'retrying', connected: false, lastContact: 10 });
    expect(
      run([
        { type: 'mode', mode: 'stream' },
        { type: 'connect' },
        { type: 'open', at: 10 },
        { type: 'retry' },
        { type: 'connect' },
        { type: 'open', at: 20 },
      ]),
    ).toMatchObject({
      state: 'connected',
      lastContact: 20,
    });
  });

  it('follows another tab: not connected itself, yet current through the entries it forwards', () => {
    const status = run([
      { type: 'mode', mode: 'stream' },
      { type: 'follow' },
      { type: 'entry', lastModified: 5, at: 30 },
      { type: 'entry', lastModified: 3, at: 31 },
    ]);
    expect(status).toMatchObject({
      state: 'following',
      follower: true,
      connected: false,
      lastEventId: 5,
      lastContact: 31,
    });
    // Taking the leadership over.
    expect(nextLiveStatus(status, { type: 'connect' })).toMatchObject({
      state: 'connecting',
      follower: false,
      lastEventId: 5,
    });
  });

  it('offline: waits without trying; a heartbeat while not connected is no contact', () => {
    const offline = run([
      { type: 'mode', mode: 'poll' },
      { type: 'connect' },
      { type: 'open', at: 1 },
      { type: 'offline' },
    ]);
    expect(offline).toMatchObject({ state: 'offline', connected: false, lastContact: 1 });
    expect(nextLiveStatus(offline, { type: 'contact', at: 2 })).toBe(offline);
    // Watching from the start while offline: it waits.
    expect(nextLiveStatus(INITIAL_LIVE_STATUS, { type: 'offline' })).toMatchObject({
      state: 'offline',
      connected: false,
    });
  });

  it('no monitor (`none`) and stop leave it idle, keeping what it learnt', () => {
    expect(run([{ type: 'detect' }, { type: 'mode', mode: 'none' }])).toMatchObject({ mode: 'none', state: 'idle' });
    expect(
      run([
        { type: 'mode', mode: 'stream' },
        { type: 'connect' },
        { type: 'entry', lastModified: 9, at: 5 },
        { type: 'stop' },
      ]),
    ).toMatchObject({
      state: 'idle',
      connected: false,
      lastEventId: 9,
    });
  });

  it('tells listeners only of real changes', () => {
    const machine = new LiveStatusMachine();
    const seen: string[] = [];
    machine.subscribe((status) => seen.push(status.state));
    machine.send({ type: 'detect' });
    machine.send({ type: 'detect' });
    machine.send({ type: 'contact', at: 1 });
    machine.send({ type: 'mode', mode: 'stream' });
    machine.send({ type: 'connect' });
    expect(seen).toEqual(['detecting', 'detecting', 'connecting']);
  });
});
