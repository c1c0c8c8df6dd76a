/**
 * A live query: a read of the replica kept current. It runs while someone listens, runs again
 * whenever the collection changes (a write in this tab, a sync, another tab: the collection's
 * `change` events), and tells its listeners only when the result differs from the last one.
 *
 * One object, three ways to listen, so that any UI library can bind it without an adapter:
 * - `subscribe(fn)`: the Svelte store contract (fn gets the current value at once, then each new
 *   one; returns the unsubscribe function) — also what Vue's recipe uses (README);
 * - `subscribeState(fn)` + `getSnapshot()`: what React's `useSyncExternalStore` wants (a stable
 *   snapshot `{ value, error, loaded }` replaced on every change); `load()` for Suspense;
 * - `[Symbol.observable]()` / `observable()`: an Observable (`{ next, error }`) for RxJS & co.
 *
 * Nothing here touches IndexedDB by itself: `read` does, and `watch` says when to read again.
 */
import { deepEqual } from '../store/record-fields.js';

export interface LiveQueryState<R> {
  /** The latest result (undefined until the first read completes). */
  value: R | undefined;
  /** The latest read's failure, if it failed (the value stays the last good one). */
  error: unknown;
  /** A read has completed (successfully or not). */
  loaded: boolean;
}

export interface Observer<R> {
  next?(value: R): void;
  error?(error: unknown): void;
}

export interface Subscription {
  unsubscribe(): void;
  readonly closed: boolean;
}

export interface ObservableLike<R> {
  subscribe(observer: Observer<R> | ((value: R) => void)): Subscription;
  [Symbol.observable](): ObservableLike<R>;
}

declare global {
  interface SymbolConstructor {
    readonly observable: symbol;
  }
}

/** `Symbol.observable` where a polyfill set it, else the conventional string key. */
const OBSERVABLE: symbol | '@@observable' =
  (typeof Symbol === 'function' && (Symbol as { observable?: symbol }).observable) || '@@observable';

export class LiveQuery<R> {
  readonly #read: () => Promise<R>;
  readonly #watch: (onChange: () => void) => () => void;
  #state: LiveQueryState<R> = { value: undefined, error: undefined, loaded: false };
  readonly #listeners = new Set<(state: LiveQueryState<R>) => void>();
  #unwatch: (() => void) | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  #scheduled = false;

  /** `read` computes the result; `watch(onChange)` calls onChange when it may have changed, returns a stop. */
  constructor(read: () => Promise<R>, watch: (onChange: () => void) => () => void) {
    this.#read = read;
    this.#watch = watch;
  }

  get value(): R | undefined {
    return this.#state.value;
  }

  get error(): unknown {
    return this.#state.error;
  }

  get loaded(): boolean {
    return this.#state.loaded;
  }

  /** The current state: the same object until something changes (React's getSnapshot). */
  getSnapshot = (): LiveQueryState<R> => this.#state;

  /** Svelte's store contract: `listener` gets the current value now, then every new one. */
  subscribe(listener: (value: R | undefined) => void): () => void {
    listener(this.#state.value);
    let last = this.#state.value;
    return this.subscribeState((state) => {
      if (state.value === last) return;
      last = state.value;
      listener(state.value);
    });
  }

  /** Every new state (value, error or first load); returns the unsubscribe function. */
  subscribeState = (listener: (state: LiveQueryState<R>) => void): (() => void) => {
    this.#listeners.add(listener);
    if (!this.#unwatch) {
      this.#unwatch = this.#watch(() => this.#invalidate());
      this.#invalidate();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) {
        this.#unwatch?.();
        this.#unwatch = null;
      }
    };
  };

  /** The first result (or the current one when loaded): for Suspense, or a one-off read. Rejects if it fails. */
  async load(): Promise<R> {
    if (!this.#state.loaded) await (this.#running ?? this.#run());
    if (this.#state.error !== undefined && this.#state.value === undefined) throw this.#state.error;
    return this.#state.value as R;
  }

  /** The results as an Observable (`next` for each new result, `error` when a read fails). */
  observable(): ObservableLike<R> {
    const observable: ObservableLike<R> = {
      subscribe: (observer) => {
        const { next, error } = typeof observer === 'function' ? { next: observer, error: undefined } : observer;
        let closed = false;
        let seen: LiveQueryState<R> | null = null;
        const stop = this.subscribeState((state) => {
          if (closed || state === seen) return;
          seen = state;
          if (state.error !== undefined) error?.call(observer, state.error);
          else if (state.loaded) next?.call(observer, state.value as R);
        });
        if (this.#state.loaded && this.#state.error === undefined) {
          seen = this.#state;
          next?.call(observer, this.#state.value as R);
        }
        return {
          unsubscribe() {
            closed = true;
            stop();
          },
          get closed() {
            return closed;
          },
        };
      },
      [OBSERVABLE as typeof Symbol.observable]: () => observable,
    };
    return observable;
  }

  [OBSERVABLE as typeof Symbol.observable](): ObservableLike<R> {
    return this.observable();
  }

  /** Something changed: read again, once for all the changes of one turn, never two reads at once. */
  #invalidate(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      if (!this.#running) void this.#run();
    });
  }

  #run(): Promise<void> {
    const run = (async () => {
      let next: LiveQueryState<R>;
      try {
        const value = await this.#read();
        const same = this.#state.loaded && this.#state.error === undefined && deepEqual(value, this.#state.value);
        next = same ? this.#state : { value, error: undefined, loaded: true };
      } catch (error) {
        next = { value: this.#state.value, error, loaded: true };
      }
      if (next !== this.#state) {
        this.#state = next;
        for (const listener of [...this.#listeners]) listener(next);
      }
    })();
    this.#running = run;
    void run.finally(() => {
      this.#running = null;
      if (this.#again) {
        this.#again = false;
        if (this.#listeners.size > 0) this.#invalidate();
      }
    });
    return run;
  }
}
