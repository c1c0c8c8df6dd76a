/**
 * The PostgreSQL backend through a real PgBouncer in transaction mode, stock configuration
 * (test/helpers/pgbouncer.ts): the whole storage suite, the driver's, the concurrency checks, and
 * what a pooler changes — its detection, notifications polled from the table (LISTEN cannot work
 * through it) or received on a direct connection (`listenUrl`).
 */
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  type Pgbouncer,
  pgbouncerUnavailable,
  startPgbouncer,
} from '../../../test/helpers/pgbouncer.js';
import { PG_URL, postgresUnavailable } from '../../../test/helpers/postgres.js';
import { describeStorage, randomScope } from '../testing.js';
import type { StoreChannelListener } from '../types.js';
import { describeConcurrency } from './concurrency-testing.js';
import { createPgDriver, detectPooler } from './drivers/pg.js';
import { pruneNotifications } from './drivers/pg-notifications.js';
import { describeDriver } from './drivers/testing.js';
import { createPostgresStorage, type PostgresStorageOptions, type SqlStorage } from './sql-storage.js';

const reason = (await postgresUnavailable('pooled.test.ts')) ?? pgbouncerUnavailable('pooled.test.ts');

/** Polls `read` until it gives `expected`, at most `ms`. */
async function eventually<T>(read: () => Promise<T> | T, expected: T, ms = 5_000): Promise<void> {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = structuredClone(await read()); // as it was then: a failure shows that, not what came later
    if (performance.now() > deadline || JSON.stringify(value) === JSON.stringify(expected))
      return expect(value).toEqual(expected);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** What a channel listener was told, in order. */
function recorder() {
  const heard: string[] = [];
  const listener: StoreChannelListener & { heard: string[] } = {
    heard,
    message: (payload) => void heard.push(payload),
    connected: () => void heard.push('<connected>'),
    disconnected: () => void heard.push('<disconnected>'),
  };
  return listener;
}

describe.skipIf(reason !== undefined)('postgresql through pgbouncer (transaction pooling)', { timeout: 60_000 }, () => {
  let bouncer: Pgbouncer;
  let database: { name: string; drop: () => Promise<void> };
  const opened: SqlStorage[] = [];
  let url = '';
  let directUrl = '';

  beforeAll(async () => {
    [bouncer, database] = await Promise.all([startPgbouncer({ poolSize: 6 }), createTestDatabase()]);
    url = bouncer.url(database.name);
    const direct = new URL(PG_URL);
    direct.pathname = `/${database.name}`;
    directUrl = direct.toString();
  });

  afterAll(async () => {
    await Promise.all(opened.map((each) => each.close()));
    await bouncer?.stop();
    await database?.drop();
  });

  /** A storage through the pooler, its pool its own (another process), detecting the pooler. */
  async function open(poolSize = 4, options: Partial<PostgresStorageOptions> = {}): Promise<SqlStorage> {
    const storage = await createPostgresStorage({ url, poolSize, autoMigrate: true, pollIntervalMs: 20, ...options });
    opened.push(storage);
    return storage;
  }
  /** Two stores as two processes: one sends, the other polls `channel` (up, and heard nothing yet). */
  async function pollingPair(channel: string) {
    const [sender, poller] = [await open(2), await open(2)];
    const listener = recorder();
    poller.channels!.listen(channel, listener);
    await eventually(() => listener.heard, ['<disconnected>', '<connected>']);
    listener.heard.length = 0;
    return { sender, listener };
  }
  let shared: Promise<SqlStorage> | undefined;
  const storage = () => (shared ??= open(10));

  describeStorage('postgresql through pgbouncer', storage);
  describeDriver('postgresql through pgbouncer', async () => {
    await storage(); // migrated
    return createPgDriver({ url, poolSize: 2, pooled: true });
  });
  describeConcurrency('postgresql through pgbouncer', (poolSize) => open(poolSize));

  describe('the pooler', () => {
    it('is detected: a stock PgBouncer refuses the startup options, one told to ignore them drops them', async () => {
      expect(await detectPooler(url)).toBe(true);
      expect(await detectPooler(directUrl)).toBe(false);
      const lenient = await startPgbouncer({ ignoreStartupParameters: ['options'] });
      try {
        expect(await detectPooler(lenient.url(database.name))).toBe(true);
      } finally {
        await lenient.stop();
      }
    });

    it('refuses a schema: it could only be set per connection', () => {
      expect(() => createPgDriver({ url, schema: 'elsewhere', pooled: true })).toThrow(/schema/);
    });

    it('without LISTEN, notifications are polled: each one once, in no time, none of a rollback', async () => {
      const [a, b, c] = [await open(2), await open(2), await open(2)];
      const heard = [recorder(), recorder()];
      b.channels!.listen('pooled_test', heard[0]!);
      c.channels!.listen('pooled_test', heard[1]!);
      // Down until every sender logs for the pollers (they look every second), then up.
      await eventually(() => heard.every((listener) => listener.heard.join() === '<disconnected>,<connected>'), true);
      // Concurrent senders, in transactions that commit in any order: each message arrives once.
      const sent = Array.from({ length: 40 }, (_, i) => `m${i}`);
      await Promise.all(
        sent.map((payload) => (Number(payload.slice(1)) % 2 ? a : b).channels!.notify('pooled_test', payload)),
      );
      const expected = ['<connected>', '<disconnected>', ...sent].sort();
      for (const listener of heard) await eventually(() => [...listener.heard].sort(), expected);
      // A notification sent in a transaction that rolls back is never read.
      const driver = createPgDriver({ url, poolSize: 1, pooled: true });
      try {
        await driver
          .transaction(async (tx) => {
            const statement = driver.notify!('pooled_test', 'rolled back');
            await tx.query(statement.text, statement.params);
            throw new Error('abandoned');
          })
          .catch(() => {});
      } finally {
        await driver.close();
      }
      await a.channels!.notify('pooled_test', 'after');
      await eventually(() => heard[0]!.heard.at(-1), 'after');
      expect(heard[0]!.heard).not.toContain('rolled back');
    });

    it('an open transaction holds back nothing committed after it; its notification comes at its commit', async () => {
      const { sender: a, listener } = await pollingPair('pooled_test_open');
      // A long writer (a bulk import, a slow batch) with a notification of its own, still open.
      const driver = createPgDriver({ url, poolSize: 1, pooled: true });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let ready!: () => void;
      const written = new Promise<void>((resolve) => (ready = resolve));
      const writer = driver.transaction(async (tx) => {
        const statement = driver.notify!('pooled_test_open', 'late');
        await tx.query(statement.text, statement.params);
        ready();
        await gate;
      });
      try {
        await written;
        await a.channels!.notify('pooled_test_open', 'first');
        await eventually(() => listener.heard, ['first'], 3_000);
        release();
        await writer;
        await eventually(() => listener.heard, ['first', 'late']);
        await a.channels!.notify('pooled_test_open', 'after');
        await eventually(() => listener.heard, ['first', 'late', 'after']);
      } finally {
        release();
        await writer.catch(() => {});
        await driver.close();
      }
    });

    it('more than a poll reads at once (500 rows) arrives in rounds, each notification once', async () => {
      const { sender: a, listener } = await pollingPair('pooled_test_rounds');
      const driver = createPgDriver({ url, poolSize: 1, pooled: true });
      const bulk = Array.from({ length: 1_100 }, (_, i) => `bulk${i}`);
      const single = Array.from({ length: 60 }, (_, i) => `single${i}`);
      try {
        await Promise.all([
          // One transaction's 1,100 rows, while others commit around it.
          driver.transaction(async (tx) => {
            for (const payload of bulk) {
              const statement = driver.notify!('pooled_test_rounds', payload);
              await tx.query(statement.text, statement.params);
            }
          }),
          ...single.map((payload) => a.channels!.notify('pooled_test_rounds', payload)),
        ]);
      } finally {
        await driver.close();
      }
      await eventually(() => [...listener.heard].sort(), [...bulk, ...single].sort(), 15_000);
    });

    it('a poller that may have missed pruned notifications is told the channel was down', async () => {
      const store = await open(2);
      const listener = recorder();
      store.channels!.listen('pooled_test_pruned', listener);
      await eventually(() => listener.heard, ['<disconnected>', '<connected>']);
      listener.heard.length = 0;
      await store.channels!.notify('pooled_test_pruned', 'kept');
      await eventually(() => listener.heard.at(-1), 'kept');
      // A notification pruned before this poller read it, as if it had been stopped for minutes.
      const driver = createPgDriver({ url, poolSize: 1, pooled: true });
      try {
        await driver.transaction(async (tx) => {
          const statement = driver.notify!('pooled_test_pruned', 'lost');
          await tx.query(statement.text, statement.params);
          await pruneNotifications((text, params) => tx.query(text, params), 0);
        });
      } finally {
        await driver.close();
      }
      await eventually(() => listener.heard, ['kept', '<disconnected>', '<connected>']);
      await store.channels!.notify('pooled_test_pruned', 'next');
      await eventually(() => listener.heard, ['kept', '<disconnected>', '<connected>', 'next']);
    });

    it('the shared cache stays off while notifications are polled: a change elsewhere is read at once', async () => {
      const [a, b] = [await open(2), await open(2)];
      const bucket = { resourceName: 'bucket', parentId: '' };
      const id = `polled-${randomScope().parentId.split('/')[2]}`;
      await a.transaction((session) => session.objects.create(bucket, id, { v: 1 }));
      expect(await b.read((session) => session.objects.get(bucket, id))).toMatchObject({ v: 1 });
      await a.transaction((session) => session.objects.update(bucket, id, { v: 2 }));
      // No waiting for a notification: b did not keep v1.
      expect(await b.read((session) => session.objects.get(bucket, id))).toMatchObject({ v: 2 });
    });

    it('a process that listens writes no log while nobody polls, and logs once a poller registers', async () => {
      const driver = createPgDriver({ url, poolSize: 1, pooled: true, listenUrl: directUrl });
      const logged = async () =>
        (await driver.query<{ count: number }>('SELECT count(*)::int AS count FROM notifications'))[0]!.count;
      try {
        // Whoever polled in the tests above is gone (closed): it unregistered.
        await Promise.all(opened.splice(0).map((each) => each.close()));
        shared = undefined;
        const send = async (payload: string) => {
          const statement = driver.notify!('pooled_test_log', payload);
          await driver.query(statement.text, statement.params);
        };
        driver.notify!('pooled_test_log', 'wake'); // the watch looks now
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const before = await logged();
        await send('unlogged');
        expect(await logged()).toBe(before);
        const poller = await open(1);
        const listener = recorder();
        poller.channels!.listen('pooled_test_log', listener);
        await eventually(() => listener.heard, ['<disconnected>', '<connected>']);
        await send('logged');
        await eventually(() => listener.heard.at(-1), 'logged');
        expect(await logged()).toBe(before + 1);
      } finally {
        await driver.close();
      }
    });

    it('with a direct listen URL, notifications are pushed and the cache works', async () => {
      const [a, b] = [await open(2, { listenUrl: directUrl }), await open(2, { listenUrl: directUrl })];
      const listener = recorder();
      b.channels!.listen('pooled_test_pushed', listener);
      await eventually(() => listener.heard, ['<connected>']);
      await a.channels!.notify('pooled_test_pushed', 'hello');
      await eventually(() => listener.heard, ['<connected>', 'hello']);
      const bucket = { resourceName: 'bucket', parentId: '' };
      const id = `pushed-${randomScope().parentId.split('/')[2]}`;
      await a.transaction((session) => session.objects.create(bucket, id, { v: 1 }));
      expect(await b.read((session) => session.objects.get(bucket, id))).toMatchObject({ v: 1 });
      await a.transaction((session) => session.objects.update(bucket, id, { v: 2 }));
      await eventually(async () => (await b.read((session) => session.objects.get(bucket, id)))?.v, 2);
    });
  });
});
