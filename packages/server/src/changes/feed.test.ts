/**
 * The feed across processes, with the notification channel played by the test: entries another
 * process announces reach this process's streams, and a lost notification is made up for when the
 * channel comes back (every collection's timestamp read again).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadSettings } from '../config.js';
import { EventBus } from '../events/bus.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import type { Permissions, Storage, StoreChannelListener } from '../storage/types.js';
import type { ChangeEntry } from './entries.js';
import { CHANGES_CHANNEL, ChangeFeed, type FeedStream } from './feed.js';
import { MonitorReads } from './reads.js';

/**
 * A stream that records what it is offered and may read (its principals against the bucket's ACL),
 * and catches up from the store.
 */
class RecordingStream implements FeedStream {
  readonly holder = { address: '127.0.0.1', user: 'u' };
  readonly userId = 'u';
  principals: readonly string[] = ['u'];
  readonly entries: ChangeEntry[] = [];
  readonly #sent = new Map<string, number>();
  constructor(readonly catchUpFrom?: (since: number, principals: readonly string[]) => Promise<ChangeEntry[]>) {}
  offer(entry: ChangeEntry, bucketAcl: Permissions | undefined): void {
    if (!bucketAcl?.read?.some((principal) => this.principals.includes(principal))) return;
    this.#take(entry);
  }
  catchUp(since: number): void {
    void this.catchUpFrom?.(since, this.principals).then((entries) => {
      for (const entry of entries) this.#take(entry);
    });
  }
  #take(entry: ChangeEntry): void {
    const key = `${entry.bucket}/${entry.collection}`;
    if ((this.#sent.get(key) ?? -1) >= entry.last_modified) return;
    this.#sent.set(key, entry.last_modified);
    this.entries.push(entry);
  }
  heartbeat(): void {}
  close(): void {}
}

describe('change feed and the notification channel', () => {
  let dir: string;
  let storage: Storage;
  let listener: StoreChannelListener | undefined;
  const sent: string[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'quire-feed-'));
    const real = await createSqliteStorage({ path: join(dir, 'q.sqlite') });
    // The store as a PostgreSQL one looks to the feed: with a channel between processes.
    storage = {
      read: real.read.bind(real),
      transaction: real.transaction.bind(real),
      close: real.close.bind(real),
      channels: {
        listen: (channel: string, l: StoreChannelListener) => {
          if (channel === CHANGES_CHANNEL) listener = l;
        },
        notify: async (_channel: string, payload: string) => void sent.push(payload),
      },
    } as unknown as Storage;
    await storage.transaction(async (session) => {
      await session.objects.create({ resourceName: 'bucket', parentId: '' }, 'b', {});
      await session.permissions.set('/buckets/b', { read: ['u'] });
      await session.objects.create({ resourceName: 'collection', parentId: '/buckets/b' }, 'c', {});
    });
  });

  /** A feed on the store, started, with one recording stream (catching up from the store if asked). */
  function startFeed({ catchingUp = false } = {}) {
    const settings = loadSettings({ env: {}, overrides: { changes_stream_coalesce_ms: 0 } });
    const reads = new MonitorReads(settings, null, '');
    const feed = new ChangeFeed(settings, storage, reads, () => undefined);
    feed.start(new EventBus());
    const stream = new RecordingStream(
      catchingUp
        ? (since, principals) =>
            storage.read(
              async (session) => (await reads.page(session, principals, { since, order: 'asc', limit: 100 })).entries,
            )
        : undefined,
    );
    feed.add(stream);
    return { feed, stream };
  }

  afterEach(async () => {
    await storage.close();
    await rm(dir, { recursive: true, force: true });
    sent.length = 0;
    listener = undefined;
  });

  it('offers what another process announces; makes up for a notification lost while the channel was down', async () => {
    const { feed, stream } = startFeed();
    expect(listener).toBeDefined();

    // Another process wrote and said so.
    const first = await storage.transaction((session) =>
      session.objects.create({ resourceName: 'record', parentId: '/buckets/b/collections/c' }, 'r1', {}),
    );
    listener!.message(JSON.stringify({ o: 'another-process', e: [['b', 'c', first.last_modified]] }));
    await expect.poll(() => stream.entries.map((entry) => entry.last_modified)).toEqual([first.last_modified]);

    // The channel drops; a write happens meanwhile and its notification is lost.
    listener!.disconnected();
    const second = await storage.transaction((session) =>
      session.objects.create({ resourceName: 'record', parentId: '/buckets/b/collections/c' }, 'r2', {}),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stream.entries).toHaveLength(1);
    listener!.connected();
    await expect
      .poll(() => stream.entries.map((entry) => entry.last_modified))
      .toEqual([first.last_modified, second.last_modified]);

    // Too many changes for one payload: "re-read everything".
    const third = await storage.transaction((session) =>
      session.objects.create({ resourceName: 'record', parentId: '/buckets/b/collections/c' }, 'r3', {}),
    );
    listener!.message(JSON.stringify({ o: 'another-process', r: second.last_modified }));
    await expect.poll(() => stream.entries.at(-1)?.last_modified).toBe(third.last_modified);
    // Our own notifications are not offered twice.
    listener!.message(JSON.stringify({ o: 'ignored-if-ours', e: [['b', 'c', third.last_modified]] }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stream.entries).toHaveLength(3);
    feed.close();
  });

  it('a stream gaining a group through a change announced after an entry it was refused gets that entry', async () => {
    const { feed, stream } = startFeed({ catchingUp: true });
    await storage.transaction(async (session) => {
      await session.objects.create({ resourceName: 'bucket', parentId: '' }, 'shared', {});
      await session.permissions.set('/buckets/shared', { read: ['/buckets/shared/groups/readers'] });
      await session.objects.create({ resourceName: 'collection', parentId: '/buckets/shared' }, 'c', {});
      await session.objects.create({ resourceName: 'group', parentId: '/buckets/shared' }, 'readers', {
        members: ['u'],
      });
      await session.permissions.setGroupMembers('/buckets/shared/groups/readers', ['u']);
    });
    const written = await storage.transaction((session) =>
      session.objects.create({ resourceName: 'record', parentId: '/buckets/shared/collections/c' }, 'r', {}),
    );
    // The write's process announced it first (the grant's process waits for its coalescing):
    // the stream's groups are still the old ones, so it is refused, and the feed offers it once.
    listener!.message(JSON.stringify({ o: 'writer', e: [['shared', 'c', written.last_modified]] }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stream.entries).toEqual([]);
    // Then the grant: the stream reads its groups again, and what it was refused.
    listener!.message(JSON.stringify({ o: 'granter', g: ['u'] }));
    await expect
      .poll(() => stream.entries.map((entry) => [entry.bucket, entry.last_modified]))
      .toEqual([['shared', written.last_modified]]);
    expect(stream.principals).toContain('/buckets/shared/groups/readers');
    feed.close();
  });

  it('the channel back after a drop: streams read their groups again before what changed meanwhile', async () => {
    const { feed, stream } = startFeed();
    listener!.disconnected();
    // Meanwhile, lost: a grant through a group, then a write the group may read.
    await storage.transaction(async (session) => {
      await session.objects.create({ resourceName: 'bucket', parentId: '' }, 'granted', {});
      await session.permissions.set('/buckets/granted', { read: ['/buckets/granted/groups/g'] });
      await session.objects.create({ resourceName: 'collection', parentId: '/buckets/granted' }, 'c', {});
      await session.permissions.setGroupMembers('/buckets/granted/groups/g', ['u']);
    });
    const written = await storage.transaction((session) =>
      session.objects.create({ resourceName: 'record', parentId: '/buckets/granted/collections/c' }, 'r', {}),
    );
    listener!.connected();
    await expect
      .poll(() => stream.entries.map((entry) => [entry.bucket, entry.last_modified]))
      .toContainEqual(['granted', written.last_modified]);
    feed.close();
  });
});
