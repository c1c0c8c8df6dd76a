/**
 * React bindings for @quire/client (Preact too, through preact/compat): the client from a
 * provider, and hooks over the SDK's live queries — a list or any read of a collection, one
 * record, the conflicts, the pending changes, the sync status (shared by the app's tabs) and the
 * live-changes connection. Each hook is `useSyncExternalStore` over the SDK's subscribables:
 * no copy of the data, no effect to keep in step.
 *
 * - Suspense-friendly: `{ suspense: true }` suspends until the first result (in the browser).
 * - SSR-safe: on the server every hook renders its "not loaded yet" state and touches no
 *   IndexedDB (React uses the server snapshot there, and hydration starts from the same state).
 */
import type {
  Collection,
  ConflictEntry,
  ListQuery,
  LiveQuery,
  LiveQueryState,
  LiveStatus,
  LocalRecord,
  QuireClient,
  SyncStatus,
} from '@quire/client';
import { createContext, createElement, type ReactNode, useContext, useMemo, useSyncExternalStore } from 'react';

const ClientContext = createContext<QuireClient | null>(null);

/** Makes `client` what `useQuireClient()` (and `useCollection`) return below it. */
export function QuireProvider({ client, children }: { client: QuireClient; children?: ReactNode }) {
  return createElement(ClientContext.Provider, { value: client }, children);
}

/** The client of the nearest `<QuireProvider>`. */
export function useQuireClient(): QuireClient {
  const client = useContext(ClientContext);
  if (!client) throw new Error('useQuireClient: no <QuireProvider client={…}> above this component');
  return client;
}

/** `client.bucket(bucket).collection(name, options)` of the provider's client (the same object on every render). */
export function useCollection<T extends object = Record<string, unknown>>(
  bucket: string,
  name: string,
  options?: Parameters<QuireClient['collection']>[2],
): Collection<T> {
  const client = useQuireClient();
  // biome-ignore lint/correctness/useExhaustiveDependencies: the client keeps a collection's first options
  return useMemo(() => client.collection<T>(bucket, name, options), [client, bucket, name]);
}

export interface LiveOptions {
  /** Suspend (throw the first read's promise) until the first result; in the browser only. */
  suspense?: boolean;
}

const NOT_LOADED: LiveQueryState<never> = Object.freeze({ value: undefined, error: undefined, loaded: false });
const nothingToSubscribe = () => () => {};
const inBrowser = () => typeof window !== 'undefined' && typeof document !== 'undefined';

/** The state of a live query (`{ value, error, loaded }`), re-rendering when it changes. `null`: not loaded. */
export function useLiveQuery<R>(query: LiveQuery<R> | null | undefined, options: LiveOptions = {}): LiveQueryState<R> {
  const state = useSyncExternalStore(
    query ? query.subscribeState : nothingToSubscribe,
    query ? query.getSnapshot : () => NOT_LOADED as LiveQueryState<R>,
    () => NOT_LOADED as LiveQueryState<R>,
  );
  if (options.suspense && query && inBrowser()) {
    if (!state.loaded) throw query.load();
    if (state.error !== undefined && state.value === undefined) throw state.error;
  }
  return state;
}

/** The records of `collection.list(query)`, kept current (undefined until loaded). */
export function useRecords<T extends object>(
  collection: Collection<T> | null | undefined,
  query: ListQuery = {},
  options?: LiveOptions,
): LocalRecord<T>[] | undefined {
  const key = JSON.stringify(query);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the query is compared by value (key)
  const live = useMemo(() => collection?.live(query) ?? null, [collection, key]);
  return useLiveQuery(live, options).value;
}

/** One record, kept current (undefined while it does not exist or is not loaded yet). */
export function useRecord<T extends object>(
  collection: Collection<T> | null | undefined,
  id: string | null | undefined,
  options?: LiveOptions,
): LocalRecord<T> | undefined {
  const live = useMemo(() => (collection && id ? collection.liveRecord(id) : null), [collection, id]);
  return useLiveQuery(live, options).value;
}

const NO_CONFLICTS: ConflictEntry[] = [];

/** Conflicts waiting for the app (manual strategy), kept current. */
export function useConflicts<T extends object>(collection: Collection<T> | null | undefined): ConflictEntry[] {
  const live = useMemo(() => collection?.liveConflicts() ?? null, [collection]);
  return useLiveQuery(live).value ?? NO_CONFLICTS;
}

/** Local changes not yet accepted by the server (undefined until loaded). */
export function usePending<T extends object>(collection: Collection<T> | null | undefined): number | undefined {
  const live = useMemo(() => collection?.livePending() ?? null, [collection]);
  return useLiveQuery(live).value;
}

const NO_SYNC_STATUS: SyncStatus = Object.freeze({
  syncing: false,
  progress: null,
  lastSyncAt: null,
  lastResult: null,
  error: null,
  autoSync: null,
});

/** The collection's sync status, the same in every tab (running, progress, last result or failure, who auto-syncs). */
export function useSyncStatus<T extends object>(collection: Collection<T> | null | undefined): SyncStatus {
  return useSyncExternalStore(
    useMemo(
      () => (collection ? (onChange: () => void) => collection.onStatus(onChange) : nothingToSubscribe),
      [collection],
    ),
    () => collection?.status ?? NO_SYNC_STATUS,
    () => NO_SYNC_STATUS,
  );
}

/** The live-changes connection of the provider's client (or of `client`). */
export function useLiveStatus(client?: QuireClient): LiveStatus {
  const fromContext = useContext(ClientContext);
  const target = client ?? fromContext;
  if (!target) throw new Error('useLiveStatus: no client (pass one, or use a <QuireProvider>)');
  const subscribe = useMemo(() => (onChange: () => void) => target.live.onStatus(onChange), [target]);
  const snapshot = useMemo(() => {
    let last = target.live.status;
    return () => {
      const next = target.live.status;
      if (JSON.stringify(next) !== JSON.stringify(last)) last = next;
      return last;
    };
  }, [target]);
  return useSyncExternalStore(subscribe, snapshot, snapshot);
}
