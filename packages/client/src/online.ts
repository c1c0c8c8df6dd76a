/**
 * Whether the device has a network: `navigator.onLine` and the `online` / `offline` events in
 * browsers, always online elsewhere, or driven by the app (Node, tests). Auto-sync, live changes
 * and the transport's retries follow it: nothing is tried while offline, everything resumes at
 * once when the network comes back. `onLine === false` is reliable (no network at all); `true`
 * only means "maybe", so failures while online still back off.
 */

export interface OnlineSource {
  isOnline(): boolean;
  subscribe(listener: (online: boolean) => void): () => void;
}

/** `navigator.onLine` + window events in browsers; always online elsewhere. */
export function browserOnlineSource(): OnlineSource {
  const target = globalThis as {
    addEventListener?: Window['addEventListener'];
    removeEventListener?: Window['removeEventListener'];
    navigator?: { onLine?: boolean };
  };
  return {
    isOnline: () => target.navigator?.onLine ?? true,
    subscribe(listener) {
      if (!target.addEventListener || !target.removeEventListener) return () => {};
      const on = () => listener(true);
      const off = () => listener(false);
      target.addEventListener('online', on);
      target.addEventListener('offline', off);
      return () => {
        target.removeEventListener!('online', on);
        target.removeEventListener!('offline', off);
      };
    },
  };
}

/** An online source driven by the app (Node, tests). */
export function createManualOnlineSource(initial = true): OnlineSource & { set(online: boolean): void } {
  let online = initial;
  const listeners = new Set<(online: boolean) => void>();
  return {
    isOnline: () => online,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    set(value) {
      if (value === online) return;
      online = value;
      for (const listener of [...listeners]) listener(value);
    },
  };
}

/** Resolves once `source` is online (at once when it is), or when `signal` aborts. */
export function untilOnline(source: OnlineSource, signal?: AbortSignal): Promise<void> {
  if (source.isOnline() || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      unsubscribe();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const unsubscribe = source.subscribe((online) => online && done());
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Code loaded on first use (a dynamic `import()`), for an offline-first app: a load that fails
 * while offline (the chunk not cached) is tried again once the network is back, and a failure
 * while online twice more after a short wait; then it rejects.
 */
export async function loadWhenOnline<T>(load: () => Promise<T>, source: OnlineSource): Promise<T> {
  for (let failures = 0; ; ) {
    try {
      return await load();
    } catch (error) {
      if (!source.isOnline()) await untilOnline(source);
      else if (++failures > 2) throw error;
      else await new Promise((resolve) => setTimeout(resolve, 500 * failures));
    }
  }
}
