/**
 * One tab leads: of the tabs asking for the same name, exactly one runs `run` at a time, until it
 * releases the leadership (auto-sync stopped, client closed) or the tab goes away; then the next
 * tab waiting takes over. Built on the cross-tab lock of locks.ts (Web Locks, or the IndexedDB
 * lease), held for as long as the tab leads.
 *
 * Used for what must happen once per app rather than once per tab: holding the change stream
 * (per server and user) and auto-syncing a collection (per replica). The other tabs follow:
 * they see the leader's work in the shared IndexedDB and hear about it on a BroadcastChannel.
 */
import type { SyncLock } from './locks.js';

export interface Leadership {
  /** This tab leads now. */
  readonly leading: boolean;
  /** Gives the leadership up, or stops waiting for it: `run`'s signal aborts; resolves once the lock is free. */
  release(): Promise<void>;
}

/** A lock for a single tab (no platform lock, no shared database): it always leads at once. */
export const SOLE_TAB: SyncLock = { run: (_name, fn) => fn() };

/**
 * Runs `run(signal)` once this tab leads under `name`; `signal` aborts when the leadership is
 * released. The leadership is held until `release()`, even after `run` returned.
 * `onChange` hears when this tab starts and stops leading.
 */
export function lead(
  lock: SyncLock,
  name: string,
  run: (signal: AbortSignal) => unknown,
  onChange?: (leading: boolean) => void,
): Leadership {
  const controller = new AbortController();
  const { signal } = controller;
  let leading = false;
  const held = lock
    .run(
      name,
      async () => {
        if (signal.aborted) return;
        leading = true;
        onChange?.(true);
        try {
          await run(signal);
          await new Promise<void>((resolve) => {
            if (signal.aborted) resolve();
            else signal.addEventListener('abort', () => resolve(), { once: true });
          });
        } finally {
          leading = false;
          onChange?.(false);
        }
      },
      signal,
    )
    .catch(() => {});
  return {
    get leading() {
      return leading;
    },
    release() {
      controller.abort();
      return held;
    },
  };
}
