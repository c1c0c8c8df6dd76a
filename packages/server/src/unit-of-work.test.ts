import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBus } from './events/bus.js';
import type { EventSubscriber, ResourceEvent } from './events/types.js';
import { createSqliteStorage, type SqliteStorage } from './storage/sqlite/sqlite-storage.js';
import type { StorageSession } from './storage/types.js';
import { type EventSource, UnitOfWork } from './unit-of-work.js';

const request: EventSource = {
  params: { bucket_id: 'b' },
  url: '/v1/buckets/b',
  identity: { userId: 'alice', principals: [] },
};
const scope = { resourceName: 'bucket', parentId: '' };

/** Records what it is given, and when: in the transaction (with what the session sees) or after commit. */
function recorder(options: { failInTransaction?: boolean } = {}) {
  const seen: Array<{ phase: 'in-transaction' | 'after-commit'; ids: string[] }> = [];
  const ids = (events: ResourceEvent[]) =>
    events.flatMap((event) => event.impactedObjects.map((object) => object.new.id));
  const subscriber: EventSubscriber = {
    name: 'recorder',
    actions: new Set(['create']),
    resources: null,
    async inTransaction(events: ResourceEvent[], _session: StorageSession) {
      seen.push({ phase: 'in-transaction', ids: ids(events) });
      if (options.failInTransaction) throw new Error('listener refused');
    },
    afterCommit(events: ResourceEvent[]) {
      seen.push({ phase: 'after-commit', ids: ids(events) });
    },
  };
  return { seen, subscriber };
}

describe('UnitOfWork', () => {
  let storage: SqliteStorage;
  beforeAll(async () => {
    storage = await createSqliteStorage();
  });
  afterAll(() => storage.close());

  async function create(work: UnitOfWork, id: string) {
    await work.run('write', async (session) => {
      const stored = await session.objects.create(scope, id, {});
      work.emit(request, {
        resourceName: 'bucket',
        parentId: '',
        action: 'create',
        timestamp: stored.last_modified,
        impactedObjects: [{ new: stored }],
      });
    });
  }

  it('delivers its events in the transaction, then after commit, then runs the after-commit work', async () => {
    const bus = new EventBus();
    const { seen, subscriber } = recorder();
    bus.subscribe(subscriber);
    const work = new UnitOfWork(storage, bus);
    const order: string[] = [];
    await work.run('write', async (session) => {
      const stored = await session.objects.create(scope, 'one', {});
      work.emit(request, {
        resourceName: 'bucket',
        parentId: '',
        action: 'create',
        timestamp: stored.last_modified,
        impactedObjects: [{ new: stored }],
      });
      work.afterCommit(() => {
        order.push(`after commit, events seen: ${seen.length}`);
      });
    });
    expect(seen).toEqual([
      { phase: 'in-transaction', ids: ['one'] },
      { phase: 'after-commit', ids: ['one'] },
    ]);
    expect(order).toEqual(['after commit, events seen: 2']);
    expect(work.isOpen).toBe(false);
  });

  it('rolls back when an in-transaction subscriber fails: nothing after commit, nothing stored', async () => {
    const bus = new EventBus();
    const { seen, subscriber } = recorder({ failInTransaction: true });
    bus.subscribe(subscriber);
    const work = new UnitOfWork(storage, bus);
    let ranAfterCommit = false;
    await expect(
      work.run('write', async (session) => {
        const stored = await session.objects.create(scope, 'two', {});
        work.emit(request, {
          resourceName: 'bucket',
          parentId: '',
          action: 'create',
          timestamp: stored.last_modified,
          impactedObjects: [{ new: stored }],
        });
        work.afterCommit(() => {
          ranAfterCommit = true;
        });
      }),
    ).rejects.toThrow('listener refused');
    expect(seen.map((entry) => entry.phase)).toEqual(['in-transaction']);
    expect(ranAfterCommit).toBe(false);
    expect(await storage.read((session) => session.objects.get(scope, 'two'))).toBeNull();
  });

  it(
    'lets work inside an open unit join its session: one transaction, its events delivered once at the end (a ' +
      'batch)',
    async () => {
      const bus = new EventBus();
      const { seen, subscriber } = recorder();
      bus.subscribe(subscriber);
      const batch = new UnitOfWork(storage, bus, true);
      await batch.run('write', async (outer) => {
        await create(batch, 'three');
        await create(batch, 'four');
        // Both in the outer transaction: visible to it before commit.
        expect(await outer.objects.get(scope, 'four')).not.toBeNull();
        expect(seen).toEqual([]);
      });
      expect(seen).toEqual([
        { phase: 'in-transaction', ids: ['three', 'four'] },
        { phase: 'after-commit', ids: ['three', 'four'] },
      ]);
    },
  );

  it('refuses events and after-commit work outside a session, logs a failure after commit, never fails', async () => {
    const logged: unknown[] = [];
    const bus = new EventBus(() => ({ error: (entry: unknown) => logged.push(entry) }) as never);
    bus.subscribe(recorder().subscriber);
    const work = new UnitOfWork(storage, bus);
    expect(() =>
      work.emit(request, { resourceName: 'bucket', parentId: '', action: 'create', timestamp: 1, impactedObjects: [] }),
    ).toThrow(/outside a session/);
    expect(() => work.afterCommit(() => {})).toThrow(/outside a session/);
    await work.run('write', async () => {
      work.afterCommit(() => {
        throw new Error('mail server down');
      });
    });
    expect(logged).toHaveLength(1);
  });
});
