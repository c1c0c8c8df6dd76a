/**
 * The history's write path (history/listener.ts + drainer.ts): entries are enqueued in the
 * change's transaction and moved into the history after commit. These tests check what that
 * design must keep, on both stores: read-your-writes, permissions as they were at the change,
 * entries left by a stopped process, bucket deletion; and — on PostgreSQL with two server
 * processes — entry order and `_since` polling under concurrent writers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { HISTORY_TOPIC } from '../src/history/drainer.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import type { Storage } from '../src/storage/types.js';
import { describeOnBackends, postgresSkipReason } from './helpers/backends.js';
import { basicAuth, testSettings } from './helpers/embedded-server.js';
import { dropSchema, newSchemaName, PG_URL } from './helpers/postgres.js';

const alice = basicAuth('alice');
const bob = basicAuth('bob');
const json = { ...alice, 'content-type': 'application/json' };

type Entry = {
  uri: string;
  action: string;
  last_modified: number;
  target: { data: { last_modified: number; n?: number } };
};

async function userId(app: FastifyInstance, headers: Record<string, string>): Promise<string> {
  return (await app.inject({ method: 'GET', url: '/v1/', headers })).json().user.id;
}

async function history(
  app: FastifyInstance,
  bucket: string,
  query = '',
  headers: Record<string, string> = alice,
): Promise<Entry[]> {
  const res = await app.inject({ method: 'GET', url: `/v1/buckets/${bucket}/history${query}`, headers });
  expect(res.statusCode).toBe(200);
  return res.json().data;
}

async function waitFor(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await condition()) return;
    await sleep(25);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describeOnBackends('history drain', { timeout: 60_000 }, (store) => {
  const server = () => store.serverWith({ history_enabled: true });

  it('a committed change is in the history its author reads next, and the outbox is then empty', async () => {
    const app = await server();
    await app.inject({ method: 'PUT', url: '/v1/buckets/ryw', headers: alice });
    await app.inject({ method: 'PUT', url: '/v1/buckets/ryw/collections/c', headers: alice });
    for (let n = 0; n < 10; n++) {
      await app.inject({
        method: 'PUT',
        url: '/v1/buckets/ryw/collections/c/records/r',
        headers: json,
        payload: { data: { n } },
      });
      const [newest] = await history(app, 'ryw', '?_sort=-last_modified&_limit=1');
      expect(newest!.target.data.n).toBe(n);
    }
    await waitFor(
      async () => (await store.storage.read((session) => session.outbox.keys(HISTORY_TOPIC))).length === 0,
      'an empty outbox',
    );
  });

  it('an entry keeps the readers of its change, even when permissions change before it is drained', async () => {
    const app = await server();
    const bobId = await userId(app, bob);
    await app.inject({ method: 'PUT', url: '/v1/buckets/snap', headers: alice });
    await app.inject({ method: 'PUT', url: '/v1/buckets/snap/collections/c', headers: alice });
    // Bob may read the record when it is created; the next request revokes that before
    // anything reads the history (the entry may or may not be drained by then).
    await app.inject({
      method: 'PUT',
      url: '/v1/buckets/snap/collections/c/records/shared',
      headers: json,
      payload: { data: { n: 1 }, permissions: { read: [bobId] } },
    });
    await app.inject({
      method: 'PATCH',
      url: '/v1/buckets/snap/collections/c/records/shared',
      headers: json,
      payload: { permissions: { read: [] } },
    });
    const seen = await history(app, 'snap', '', bob);
    expect(seen.map((entry) => `${entry.action} ${entry.uri}`)).toEqual([
      'create /buckets/snap/collections/c/records/shared',
    ]);
    expect(
      (seen[0] as unknown as { target: { permissions: Record<string, string[]> } }).target.permissions.read,
    ).toEqual([bobId]);
  });

  it('entries left pending by a stopped process are drained at start, and by the first reader', async () => {
    const writer = await server();
    await writer.inject({ method: 'PUT', url: '/v1/buckets/left', headers: alice });
    const aliceId = await userId(writer, alice);
    const pending = (n: number) => ({
      action: 'create',
      resource_name: 'record',
      uri: `/buckets/left/collections/c/records/r${n}`,
      user_id: 'x',
      date: '',
      target: { data: { id: `r${n}`, n }, permissions: {} },
      _read_principals: [aliceId],
    });
    // What a process that stopped between commit and drain leaves behind.
    await store.storage.transaction((session) =>
      session.outbox.enqueue(HISTORY_TOPIC, [{ key: '/buckets/left', payload: [pending(1), pending(2)] }]),
    );
    const restarted = await server();
    await restarted.ready(); // starts the sweep
    await waitFor(
      async () =>
        (await store.storage.read((session) => session.outbox.keys(HISTORY_TOPIC, '/buckets/left'))).length === 0,
      'the start-up sweep',
    );
    expect((await history(restarted, 'left', '?_sort=last_modified')).map((entry) => entry.target.data.n)).toEqual([
      undefined,
      1,
      2,
    ]);

    await store.storage.transaction((session) =>
      session.outbox.enqueue(HISTORY_TOPIC, [{ key: '/buckets/left', payload: [pending(3)] }]),
    );
    expect((await history(restarted, 'left', '?_sort=-last_modified&_limit=1'))[0]!.target.data.n).toBe(3);
  });

  it('a deleted bucket drops its pending entries: a bucket re-created with its id starts empty', async () => {
    const app = await server();
    await app.inject({ method: 'PUT', url: '/v1/buckets/gone', headers: alice });
    await store.storage.transaction((session) =>
      session.outbox.enqueue(HISTORY_TOPIC, [{ key: '/buckets/gone', payload: [] }]),
    );
    await app.inject({ method: 'DELETE', url: '/v1/buckets/gone', headers: alice });
    expect(await store.storage.read((session) => session.outbox.keys(HISTORY_TOPIC, '/buckets/gone'))).toEqual([]);
    await app.inject({ method: 'PUT', url: '/v1/buckets/gone', headers: alice });
    expect((await history(app, 'gone')).map((entry) => `${entry.action} ${entry.uri}`)).toEqual([
      'create /buckets/gone',
    ]);
  });
});

describe.skipIf(postgresSkipReason !== undefined)(
  'history drain on PostgreSQL, two server processes',
  { timeout: 120_000 },
  () => {
    const schema = newSchemaName();
    const storages: Storage[] = [];
    const apps: FastifyInstance[] = [];

    afterAll(async () => {
      for (const app of apps) await app.close();
      for (const storage of storages) await storage.close();
      await dropSchema(schema);
    });

    it('entries follow the order of the changes, and _since polling during the writes misses none', async () => {
      for (let i = 0; i < 2; i++) {
        // Each its own pool and drainer, as two processes would be.
        const storage = await createPostgresStorage({ url: PG_URL, schema, poolSize: 8, autoMigrate: true });
        storages.push(storage);
        apps.push(
          await buildServer({
            settings: testSettings({ history_enabled: true, history_drain_batch_size: 7 }),
            storage,
            logger: false,
          }),
        );
      }
      const [one, two] = apps as [FastifyInstance, FastifyInstance];
      await one.inject({ method: 'PUT', url: '/v1/buckets/race', headers: alice });
      for (const c of ['a', 'b', 'c'])
        await one.inject({ method: 'PUT', url: `/v1/buckets/race/collections/${c}`, headers: alice });
      await one.inject({
        method: 'PUT',
        url: '/v1/buckets/race/collections/a/records/hot',
        headers: json,
        payload: { data: { n: 0 } },
      });

      // A poller follows the history with _since while the writes run.
      const polled = new Map<string, Entry>();
      let since = Math.max(...(await history(one, 'race')).map((entry) => entry.last_modified));
      let writing = true;
      const poller = (async () => {
        for (;;) {
          const done = !writing;
          for (const entry of await history(two, 'race', `?_since=${since}&_sort=last_modified`)) {
            polled.set((entry as unknown as { id: string }).id, entry);
            since = Math.max(since, entry.last_modified);
          }
          if (done) return;
        }
      })();

      // 60 updates of one record (through both servers) and 60 creations in two other collections.
      const writes = [];
      for (let i = 1; i <= 60; i++) {
        const app = i % 2 ? one : two;
        writes.push(
          app.inject({
            method: 'PATCH',
            url: '/v1/buckets/race/collections/a/records/hot',
            headers: json,
            payload: { data: { n: i } },
          }),
        );
        writes.push(
          app.inject({
            method: 'POST',
            url: `/v1/buckets/race/collections/${i % 3 ? 'b' : 'c'}/records`,
            headers: json,
            payload: { data: { i } },
          }),
        );
      }
      const results = await Promise.all(writes);
      expect(results.map((res) => res.statusCode).filter((status) => status >= 300)).toEqual([]);
      writing = false;
      await poller;

      const all = await history(one, 'race', '?_sort=last_modified&_limit=1000');
      const hot = all.filter((entry) => entry.uri.endsWith('/records/hot') && entry.action === 'update');
      expect(hot).toHaveLength(60);
      // The history lists the updates of one record in the order they were applied.
      const versions = hot.map((entry) => entry.target.data.last_modified);
      expect(versions).toEqual([...versions].sort((a, b) => a - b));
      expect(new Set(hot.map((entry) => entry.last_modified)).size).toBe(60);
      // Every entry written after the poller started was seen by it.
      const afterStart = all
        .filter((entry) => entry.action !== 'create' || !entry.uri.endsWith('/records/hot'))
        .slice(5);
      expect(afterStart.filter((entry) => !polled.has((entry as unknown as { id: string }).id))).toEqual([]);
      expect(polled.size).toBe(120);
      for (const storage of storages)
        expect(await storage.read((session) => session.outbox.keys(HISTORY_TOPIC))).toEqual([]);
    });
  },
);
