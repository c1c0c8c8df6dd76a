/**
 * The published `kinto` client (kinto.js, over fake-indexeddb) syncing with four `quire start`
 * processes that reach one PostgreSQL database through one PgBouncer in transaction mode, behind
 * a round-robin proxy (the server's test helper): the scenarios the sync bench runs with it
 * (bench/sync.ts: cold sync, no-change poll, push of local records), and between two clients
 * an update, a deletion and a conflict, each request possibly on another process.
 */
import 'fake-indexeddb/auto';
import Kinto from 'kinto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgbouncerUnavailable } from '../../server/test/helpers/pgbouncer.js';
import { type PooledDeployment, startPooledDeployment } from '../../server/test/helpers/pooled-deployment.js';
import { postgresUnavailable } from '../../server/test/helpers/postgres.js';
import { basicAuth } from './support/server.js';

const skip = (await postgresUnavailable('kinto-pooled.test.ts')) ?? pgbouncerUnavailable('kinto-pooled.test.ts');

interface Task extends Record<string, unknown> {
  id: string;
  title: string;
  n: number;
}

describe.skipIf(skip !== undefined)(
  'kinto.js against four processes through one pgbouncer (transaction pooling)',
  { timeout: 60_000 },
  () => {
    let deployment: PooledDeployment;

    beforeAll(async () => {
      deployment = await startPooledDeployment({ processes: 4 });
      for (const path of ['/buckets/kinto', '/buckets/kinto/collections/tasks']) {
        const response = await fetch(`${deployment.url}${path}`, {
          method: 'PUT',
          headers: { Authorization: basicAuth('alice') },
        });
        expect(response.status).toBe(201);
      }
    }, 180_000);

    afterAll(async () => {
      await deployment?.close();
    }, 60_000);

    /** A kinto.js client of alice's with a local database of its own. */
    const client = (name: string) =>
      new Kinto({
        remote: deployment.url,
        bucket: 'kinto',
        headers: { Authorization: basicAuth('alice') },
        adapterOptions: { dbName: name },
      } as ConstructorParameters<typeof Kinto>[0]).collection<Task>('tasks');

    const sync = async (collection: ReturnType<typeof client>, strategy = Kinto.syncStrategy.SERVER_WINS) => {
      const result = await collection.sync({ strategy } as never);
      expect(result.errors).toEqual([]);
      return result;
    };

    it('pushes, cold-syncs elsewhere, polls nothing new, then carries updates, deletions and a conflict', async () => {
      const a = client('a');
      const b = client('b');
      for (let n = 0; n < 60; n++) await a.create({ title: `task ${n}`, n });
      const pushed = await sync(a);
      expect(pushed.published).toHaveLength(60);

      const cold = await sync(b);
      expect(cold.created).toHaveLength(60);
      const local = (await b.list()).data;
      expect(local.map((task) => task.n).sort((x, y) => x - y)).toEqual(Array.from({ length: 60 }, (_, n) => n));

      const idle = await sync(b);
      expect([idle.created, idle.updated, idle.deleted, idle.published]).toEqual([[], [], [], []]);

      const [first, second, third] = local as [Task, Task, Task];
      await b.update({ ...first, title: 'renamed' });
      await b.delete(second.id);
      expect((await sync(b)).published).toHaveLength(2);
      const pulled = await sync(a);
      expect(pulled.updated.map((change) => change.new.id)).toEqual([first.id]);
      expect(pulled.deleted.map((deleted) => deleted.id)).toEqual([second.id]);
      expect((await a.get(first.id)).data.title).toBe('renamed');

      // Both change the same task: the second to sync meets a conflict and takes the server's.
      await a.update({ ...third, title: 'from a' });
      await b.update({ ...third, title: 'from b' });
      await sync(a);
      const conflicted = await b.sync({ strategy: Kinto.syncStrategy.MANUAL } as never);
      expect(conflicted.conflicts).toHaveLength(1);
      expect(conflicted.conflicts[0]!.remote).toMatchObject({ id: third.id, title: 'from a' });
      await b.resolve(conflicted.conflicts[0]!, conflicted.conflicts[0]!.remote as Task);
      await sync(b);
      expect((await b.get(third.id)).data.title).toBe('from a');
      expect((await sync(a)).updated).toEqual([]);
    });
  },
);
