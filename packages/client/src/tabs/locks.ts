/**
 * One tab syncs a collection at a time. Web Locks (`navigator.locks`) when the platform has them;
 * otherwise a lease record in the collection's own IndexedDB (`$locks`), taken in a read-write
 * transaction (IndexedDB serialises those across tabs and processes), renewed while held and
 * expiring if its holder dies.
 */
import type { Table } from 'dexie';
import { sleep } from '../retry.js';
import type { LockEntry } from '../store/types.js';

export interface SyncLock {
  /** Runs `fn` while holding the lock named `name`; waits for it when another holder has it. */
  run<T>(name: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /**
   * Gives up what this tab holds, before its database closes (a lease would otherwise stay until
   * it expires, and the other tabs wait that long). Web Locks need nothing: the browser frees them.
   */
  release?(): Promise<void>;
}

/** The subset of the Web Locks API we use (injectable). */
export interface LockManagerLike {
  request<T>(name: string, options: { mode: 'exclusive'; signal?: AbortSignal }, fn: () => Promise<T>): Promise<T>;
}

export function webLockManager(): LockManagerLike | null {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks;
  return locks && typeof locks.request === 'function' ? locks : null;
}

export function createWebLock(manager: LockManagerLike): SyncLock {
  return {
    run: (name, fn, signal) => manager.request(name, { mode: 'exclusive', ...(signal ? { signal } : {}) }, fn),
  };
}

export interface LeaseLockOptions {
  table: Table<LockEntry, string>;
  owner: string;
  /** Lease length; renewed every third of it while held (default 10 s). */
  ttlMs?: number;
  /** First wait between attempts, doubled up to `maxPollMs` (defaults 25 ms, 500 ms). */
  pollMs?: number;
  maxPollMs?: number;
  now?: () => number;
}

export function createLeaseLock(options: LeaseLockOptions): SyncLock {
  const ttl = options.ttlMs ?? 10_000;
  const poll = options.pollMs ?? 25;
  const maxPoll = options.maxPollMs ?? 500;
  const now = options.now ?? Date.now;
  const { table, owner } = options;

  const tryAcquire = (name: string) =>
    table.db.transaction('rw', table, async () => {
      const current = await table.get(name);
      if (current && current.owner !== owner && current.expires > now()) return false;
      await table.put({ name, owner, expires: now() + ttl });
      return true;
    });

  /** Names held by this tab, with their renewal timers. */
  const held = new Map<string, ReturnType<typeof setInterval>>();
  const releaseLease = async (name: string) => {
    clearInterval(held.get(name));
    held.delete(name);
    await table.db
      .transaction('rw', table, async () => {
        if ((await table.get(name))?.owner === owner) await table.delete(name);
      })
      .catch(() => {});
  };

  return {
    async release() {
      await Promise.all([...held.keys()].map(releaseLease));
    },
    async run(name, fn, signal) {
      let wait = poll;
      while (!(await tryAcquire(name))) {
        signal?.throwIfAborted();
        // Waiting for a lock is background work: it must not keep a Node process alive.
        await sleep(wait, { signal, unref: true });
        signal?.throwIfAborted();
        wait = Math.min(wait * 2, maxPoll);
      }
      // Renewed only while still ours: a lease that expired meanwhile (a frozen tab) and was
      // taken by another tab is not stolen back.
      const renew = setInterval(() => {
        void table.db
          .transaction('rw', table, async () => {
            if ((await table.get(name))?.owner === owner) await table.update(name, { expires: now() + ttl });
          })
          .catch(() => {});
      }, ttl / 3);
      (renew as { unref?: () => void }).unref?.();
      held.set(name, renew);
      try {
        return await fn();
      } finally {
        await releaseLease(name);
      }
    },
  };
}
