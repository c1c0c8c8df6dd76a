import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../config.js';
import type { ChangeEntry } from './entries.js';
import { ChangeFeed } from './feed.js';
import { MonitorReads, type EntryRange } from './reads.js';
import { EventStream } from './stream.js';

function setup(overrides: Record<string, unknown> = {}) {
  const settings = { ...loadSettings({ env: {} }), ...overrides };
  const reads = new MonitorReads(settings, null, '');
  const feed = new ChangeFeed(settings, {} as never, reads, () => undefined);
  return { settings, reads, feed };
}

const identity = { userId: 'u', principals: ['u', 'system.Everyone'] };
const HOLDER = { address: '127.0.0.1', user: 'u' };
const acl = { read: ['u'] };

describe('change stream', () => {
  it('keeps a reader that falls behind, its waiting changes bounded, and catches it up from the store', async () => {
    const { settings, reads, feed } = setup({ changes_stream_max_buffer_bytes: 1_000 });
    const out = new PassThrough({ highWaterMark: 64 }); // read only when the test says
    const asked: EntryRange[] = [];
    const store: ChangeEntry[] = [];
    const stream = new EventStream(feed, { settings }, identity, HOLDER, out, [], async (range) => {
      asked.push(range);
      return {
        entries: store.filter((entry) => range.since === undefined || entry.last_modified > range.since),
        next: null,
      };
    });
    feed.add(stream);
    stream.start({});
    await new Promise((resolve) => setImmediate(resolve));
    for (let i = 1; i <= 200; i++) {
      const entry = reads.entry('b', `c${i}`, 1000 + i);
      store.push(entry);
      stream.offer(entry, acl, undefined);
    }
    // Never dropped, whatever it holds back.
    expect(stream.closed).toBe(false);
    expect(feed.streamCount).toBe(1);
    // Now it reads: what it missed comes from the store, after the oldest change it forgot.
    const text: string[] = [];
    out.on('data', (chunk: Buffer) => text.push(chunk.toString()));
    await expect.poll(() => text.join('').match(/^id: /gm)?.length ?? 0).toBeGreaterThanOrEqual(200);
    expect(asked.length).toBe(2);
    expect(asked[1]!.since).toBeLessThan(1001 + 10);
    const ids = new Set(text.join('').match(/^id: (\d+)$/gm));
    expect(ids.size).toBe(200);
    stream.close();
    expect(feed.streamCount).toBe(0);
  });

  it('sends an entry once per collection timestamp, never an older one, nothing the caller may not read', async () => {
    const { settings, reads, feed } = setup();
    const out = new PassThrough();
    const chunks: string[] = [];
    out.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
    const first = reads.entry('b', 'c', 5);
    const stream = new EventStream(feed, { settings }, identity, HOLDER, out, [], async () => ({
      entries: [first],
      next: null,
    }));
    stream.start({});
    await new Promise((resolve) => setImmediate(resolve));
    stream.offer(reads.entry('b', 'c', 5), acl, undefined);
    stream.offer(reads.entry('b', 'c', 3), acl, undefined);
    stream.offer(reads.entry('b', 'c', 7), { read: ['someone else'] }, undefined);
    stream.offer(reads.entry('b', 'c', 8), acl, undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(chunks.join('').match(/^id: .*$/gm)).toEqual(['id: 5', 'id: 8']);
  });

  it('gives changes offered during its first entries after them, the newer of the two once', async () => {
    const { settings, reads, feed } = setup();
    const out = new PassThrough();
    const chunks: string[] = [];
    out.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
    let release: (value: { entries: ChangeEntry[]; next: null }) => void = () => {};
    const stream = new EventStream(
      feed,
      { settings },
      identity,
      HOLDER,
      out,
      [],
      () => new Promise((resolve) => (release = resolve)),
    );
    stream.start({});
    stream.offer(reads.entry('b', 'c1', 20), acl, undefined); // newer than what the snapshot will read
    stream.offer(reads.entry('b', 'c2', 9), acl, undefined); // older than what it will read
    await new Promise((resolve) => setImmediate(resolve)); // the first read starts after a turn of the event loop
    release({ entries: [reads.entry('b', 'c2', 10), reads.entry('b', 'c1', 11)], next: null });
    await new Promise((resolve) => setImmediate(resolve));
    expect(chunks.join('').match(/^id: .*$/gm)).toEqual(['id: 10', 'id: 20']);
  });
});
