import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import { describe, expect, it } from 'vitest';
import { openCollectionDb } from '../store/db.js';
import { createLeaseLock } from './locks.js';

describe('lease lock (no Web Locks)', () => {
  it('a tab that closes while it holds the lease gives it up at once, not when it expires', async () => {
    const env = { indexedDB: new IDBFactory(), IDBKeyRange };
    const [first, second] = await Promise.all([
      openCollectionDb('locks-a', [], env),
      openCollectionDb('locks-a', [], env),
    ]);
    const leaving = createLeaseLock({ table: first.$locks, owner: 'tab-1', ttlMs: 60_000 });
    const staying = createLeaseLock({ table: second.$locks, owner: 'tab-2', ttlMs: 60_000, maxPollMs: 20 });
    let entered!: () => void;
    const holding = new Promise<void>((resolve) => (entered = resolve));
    // A sync under way when the tab closes: its work never ends by itself.
    void leaving.run('sync', () => {
      entered();
      return new Promise<never>(() => {});
    });
    await holding;
    const started = Date.now();
    const waiting = staying.run('sync', async () => Date.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await leaving.release?.();
    first.close();
    expect(await waiting).toBeLessThan(5_000); // the lease was for a minute
    second.close();
  });
});
