/**
 * A Web Locks stand-in (exclusive mode, as `navigator.locks.request` behaves): one holder per
 * name, the others queued in order; a request whose signal aborts while it waits rejects with
 * an AbortError and never runs. Several clients given the same manager are several tabs.
 */
import type { LockManagerLike } from '../../src/index.js';

export function memoryLockManager(): LockManagerLike & { maxHeld: number; held(name: string): boolean } {
  const queues = new Map<string, Promise<unknown>>();
  const holding = new Set<string>();
  let held = 0;
  const manager = {
    maxHeld: 0,
    held: (name: string) => holding.has(name),
    request<T>(name: string, options: { mode: 'exclusive'; signal?: AbortSignal }, fn: () => Promise<T>): Promise<T> {
      if (options.signal?.aborted) return Promise.reject(new DOMException('aborted', 'AbortError'));
      const previous = queues.get(name) ?? Promise.resolve();
      let abandoned = false;
      const granted = previous.catch(() => {});
      const run = new Promise<T>((resolve, reject) => {
        const onAbort = () => {
          abandoned = true;
          reject(new DOMException('aborted', 'AbortError'));
        };
        options.signal?.addEventListener('abort', onAbort, { once: true });
        void granted.then(async () => {
          options.signal?.removeEventListener('abort', onAbort);
          if (abandoned) return;
          held++;
          holding.add(name);
          manager.maxHeld = Math.max(manager.maxHeld, held);
          try {
            resolve(await fn());
          } catch (error) {
            reject(error);
          } finally {
            held--;
            holding.delete(name);
          }
        });
      });
      // The next request waits for this one to end (granted and released, or abandoned).
      queues.set(
        name,
        granted.then(() => run.catch(() => {})),
      );
      return run;
    },
  };
  return manager;
}
