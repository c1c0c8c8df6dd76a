import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../config.js';
import { makeEntry } from './entries.js';
import { ChangeFeed } from './feed.js';
import { EventStream } from './stream.js';

describe('change stream', () => {
  it('drops a reader that falls more than changes_stream_max_buffer_bytes behind', () => {
    const settings = { ...loadSettings({}), changes_stream_max_buffer_bytes: 1_000 };
    const feed = new ChangeFeed(settings, {} as never, null, () => undefined);
    let destroyed = false;
    const socket = { writableLength: 0, destroy: () => (destroyed = true) };
    const out = new PassThrough({ highWaterMark: 16 }); // nobody reads it: writes pile up
    const request = { identity: { userId: 'u', principals: ['u', 'system.Everyone'] }, ip: '::1' };
    const stream = new EventStream(feed, { settings, storage: {} } as never, request as never, { raw: socket } as never, out, []);
    feed.add(stream);
    const acl = { read: ['u'] };
    for (let i = 1; i <= 5; i++) stream.offer(makeEntry('', 'b', `c${i}`, i), acl, undefined);
    expect(destroyed).toBe(false);
    for (let i = 6; i <= 40 && !destroyed; i++) stream.offer(makeEntry('', 'b', `c${i}`, i), acl, undefined);
    expect(destroyed).toBe(true);
    expect(feed.streamCount).toBe(0);
  });

  it('sends an entry once per collection timestamp, never an older one', () => {
    const settings = loadSettings({});
    const feed = new ChangeFeed(settings, {} as never, null, () => undefined);
    const out = new PassThrough();
    const chunks: string[] = [];
    out.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
    const request = { identity: { userId: 'u', principals: ['u'] }, ip: '::1' };
    const stream = new EventStream(feed, { settings, storage: {} } as never, request as never, { raw: { writableLength: 0, destroy() {} } } as never, out, []);
    const acl = { read: ['u'] };
    stream.offer(makeEntry('', 'b', 'c', 5), acl, undefined);
    stream.offer(makeEntry('', 'b', 'c', 5), acl, undefined);
    stream.offer(makeEntry('', 'b', 'c', 3), acl, undefined);
    stream.offer(makeEntry('', 'b', 'c', 7), { read: ['someone else'] }, undefined);
    stream.offer(makeEntry('', 'b', 'c', 8), acl, undefined);
    return new Promise<void>((resolve) => setImmediate(() => {
      expect(chunks.join('').match(/^id: .*$/gm)).toEqual(['id: 5', 'id: 8']);
      resolve();
    }));
  });
});
