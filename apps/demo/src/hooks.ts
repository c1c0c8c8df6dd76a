/** Preact hooks over the client's live queries and events. */
import type { Collection, ConflictEntry, LocalRecord } from '@quire/client';
import { useEffect, useState } from 'preact/hooks';
import type { SyncSnapshot, SyncStatus } from './sync-status.js';

/**
 * The records of a collection, kept current by its live query (`watch()`): local writes, synced
 * changes and other tabs' writes all re-render. `undefined` until the first result.
 */
export function useRecords<T extends Record<string, unknown>>(collection: Collection<T> | null): LocalRecord<T>[] | undefined {
  const [records, setRecords] = useState<LocalRecord<T>[] | undefined>(undefined);
  useEffect(() => {
    setRecords(undefined);
    if (!collection) return;
    const subscription = collection.watch().subscribe({ next: setRecords, error: () => setRecords([]) });
    return () => subscription.unsubscribe();
  }, [collection]);
  return records;
}

/** Manual conflicts of a collection by record id, re-read after every change and sync. */
export function useConflicts<T extends Record<string, unknown>>(collection: Collection<T> | null): Map<string, ConflictEntry> {
  const [conflicts, setConflicts] = useState<Map<string, ConflictEntry>>(new Map());
  useEffect(() => {
    setConflicts(new Map());
    if (!collection) return;
    let stopped = false;
    const load = () =>
      void collection
        .conflicts()
        .then((entries) => !stopped && setConflicts(new Map(entries.map((entry) => [entry.id, entry]))))
        .catch(() => {});
    load();
    const stops = [collection.on('change', load), collection.on('sync', load)];
    return () => {
      stopped = true;
      for (const stop of stops) stop();
    };
  }, [collection]);
  return conflicts;
}

export function useSyncStatus(status: SyncStatus): SyncSnapshot {
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
