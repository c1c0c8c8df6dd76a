/** Small Preact hooks shared by the pages. */
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { PagedList, type PagedListOptions, type PagedState } from './paged-list.js';
import { type AdminRemote, asError, isAbort } from './remote.js';

interface AsyncState<T> {
  data: T | undefined;
  error: Error | null;
  loading: boolean;
  reload: () => void;
  /** Replace the data without reloading (after a write that answered the new value). */
  set: (data: T) => void;
}

/** Runs `load` when `deps` change; the last call wins. */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): AsyncState<T> {
  const [state, setState] = useState<{ data: T | undefined; error: Error | null; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((current) => ({ ...current, loading: true, error: null }));
    load(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, error: null, loading: false }),
      (error: unknown) => {
        if (controller.signal.aborted || isAbort(error)) return;
        setState({ data: undefined, error: asError(error), loading: false });
      },
    );
    return () => controller.abort();
  }, [...deps, version]);
  const reload = useCallback(() => setVersion((value) => value + 1), []);
  const set = useCallback((data: T) => setState({ data, error: null, loading: false }), []);
  return { ...state, reload, set };
}

const EMPTY: PagedState<never> = {
  items: [],
  total: 0,
  complete: true,
  loading: false,
  error: null,
  firstPageMs: null,
};

/** A PagedList for `path?params`, recreated when they change. */
export function usePagedList<T extends { id?: string }>(
  api: AdminRemote,
  path: string | null,
  params: string,
  options: PagedListOptions = {},
  version = 0,
): [PagedState<T>, PagedList<T> | null] {
  const list = useMemo(
    () => (path ? new PagedList<T>(api, path, new URLSearchParams(params), options) : null),
    [api, path, params, version],
  );
  // The list holds the state; this only re-renders on its changes.
  const [, setState] = useState<PagedState<T> | null>(null);
  useEffect(() => {
    if (!list) return;
    const stop = list.subscribe(setState);
    list.start();
    return () => {
      stop();
      list.dispose();
    };
  }, [list]);
  return [list ? list.state : EMPTY, list];
}

/** A value that follows `value` after `ms` without changes. */
export function useDebounced<T>(value: T, ms: number): T {
  const [current, setCurrent] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setCurrent(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return current;
}

/** Calls `handler` on Escape while mounted. */
export function useEscape(handler: () => void): void {
  const ref = useRef(handler);
  ref.current = handler;
  useEffect(() => {
    const listener = (event: KeyboardEvent) => {
      if (event.key === 'Escape') ref.current();
    };
    window.addEventListener('keydown', listener);
    return () => window.removeEventListener('keydown', listener);
  }, []);
}

export type Validator = typeof import('./validate.js');

let validatorModule: Promise<Validator> | null = null;

/** Ajv, loaded the first time a page needs it (most pages never do). */
function loadValidator(): Promise<Validator> {
  validatorModule ??= import('./validate.js');
  return validatorModule;
}

/** The validation module once loaded, when `needed`. */
export function useValidator(needed: boolean): Validator | null {
  const [module, setModule] = useState<Validator | null>(null);
  useEffect(() => {
    if (!needed || module) return;
    let live = true;
    void loadValidator().then((loaded) => live && setModule(loaded));
    return () => {
      live = false;
    };
  }, [needed, module]);
  return module;
}

/** A write in progress, and the error that ended the last one. */
export interface Saving {
  busy: boolean;
  error: Error | string | null;
  setError: (error: Error | string | null) => void;
  /**
   * Runs `task` with `busy` on and the last error cleared; what it throws is shown as `error` and
   * answered (null when it succeeded).
   */
  run: (task: () => Promise<void>) => Promise<Error | null>;
}

export function useSaving(): Saving {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | string | null>(null);
  const run = async (task: () => Promise<void>): Promise<Error | null> => {
    setBusy(true);
    setError(null);
    try {
      await task();
      return null;
    } catch (caught) {
      const failure = asError(caught);
      setError(failure);
      return failure;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}
