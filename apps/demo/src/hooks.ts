/**
 * The app's own hooks (the status bar, the network, the URL, actions). The data hooks — records,
 * conflicts — are @quire/react's, through preact/compat (vite.config.ts).
 */
import { useEffect, useState } from 'preact/hooks';
import type { SyncSnapshot, SyncStatus } from './sync-status.js';

/** The status bar's snapshot (sync-status.ts), re-rendered when it changes. */
export function useStatusBar(status: SyncStatus): SyncSnapshot {
  const [snapshot, setSnapshot] = useState(status.snapshot);
  useEffect(() => {
    setSnapshot(status.snapshot);
    return status.subscribe(setSnapshot);
  }, [status]);
  return snapshot;
}

/** `navigator.onLine`, kept current by the `online` / `offline` events. */
export function useOnline(): boolean {
  const [online, setOnline] = useState(navigator.onLine);
  useEffect(() => {
    const update = () => setOnline(navigator.onLine);
    addEventListener('online', update);
    addEventListener('offline', update);
    return () => {
      removeEventListener('online', update);
      removeEventListener('offline', update);
    };
  }, []);
  return online;
}

/** The list shown, from the URL (`#/list/<id>`): a reload stays on the same list. */
export function useSelectedListId(): [string | null, (id: string | null) => void] {
  const read = () => /^#\/list\/(.+)$/.exec(location.hash)?.[1] ?? null;
  const [id, setId] = useState(read);
  useEffect(() => {
    const onChange = () => setId(read());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  const select = (next: string | null) => {
    location.hash = next ? `#/list/${next}` : '';
    setId(next);
  };
  return [id, select];
}

/** Runs an async action, exposing whether it runs and its error (in plain words, via `describe`). */
export function useAction(describe: (error: unknown) => string) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async (action: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      await action();
      return true;
    } catch (caught) {
      setError(describe(caught));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}
