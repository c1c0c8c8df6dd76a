/**
 * A long list read page by page as it is scrolled, following the server's Next-Page links
 * (§7.7). The first page is small, so that it shows at once; later pages grow (up to
 * `maxPageSize`) when the reader jumps far ahead. With `count`, a HEAD request (Total-Objects)
 * tells the list's full length, so the scrollbar is right from the start.
 */
import { type AdminRemote, asError, isAbort } from './remote.js';

export interface PagedState<T> {
  items: T[];
  /** Total-Objects, or null when unknown (no HEAD on this endpoint). */
  total: number | null;
  /** Every page was read. */
  complete: boolean;
  loading: boolean;
  error: Error | null;
  /** Milliseconds from the start to the first page shown. */
  firstPageMs: number | null;
}

export interface PagedListOptions {
  count?: boolean;
  firstPageSize?: number;
  minPageSize?: number;
  maxPageSize?: number;
}

const COUNT_IGNORED = ['_sort', '_fields', '_limit', '_token'];

export class PagedList<T extends { id?: string }> {
  #state: PagedState<T> = { items: [], total: null, complete: false, loading: false, error: null, firstPageMs: null };
  #listeners = new Set<(state: PagedState<T>) => void>();
  #next: string | null = null;
  #wanted = 0;
  #running = false;
  readonly #controller = new AbortController();
  readonly #options: Required<PagedListOptions>;

  constructor(
    readonly api: AdminRemote,
    readonly path: string,
    readonly params: URLSearchParams,
    options: PagedListOptions = {},
  ) {
    this.#options = { count: false, firstPageSize: 100, minPageSize: 250, maxPageSize: 5000, ...options };
  }

  get state(): PagedState<T> {
    return this.#state;
  }

  subscribe(listener: (state: PagedState<T>) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #set(patch: Partial<PagedState<T>>) {
    this.#state = { ...this.#state, ...patch };
    for (const listener of this.#listeners) listener(this.#state);
  }

  start(): void {
    const started = performance.now();
    const first = new URLSearchParams(this.params);
    first.set('_limit', String(this.#options.firstPageSize));
    this.#wanted = this.#options.firstPageSize;
    if (this.#options.count) {
      const counted = new URLSearchParams(this.params);
      for (const name of COUNT_IGNORED) counted.delete(name);
      const query = String(counted);
      void this.api.count(`${this.path}${query ? `?${query}` : ''}`, this.#controller.signal).then(
        (total) => {
          if (total !== null && !this.#controller.signal.aborted && !this.#state.complete)
            this.#set({ total: Math.max(total, this.#state.items.length) });
        },
        () => {},
      );
    }
    void this.#load(`${this.path}?${first}`, started);
  }

  /** Make sure items up to `index` get loaded. */
  want(index: number): void {
    if (index < this.#wanted) return;
    this.#wanted = index + 1;
    if (!this.#running && this.#next && !this.#state.error) void this.#load(this.#next);
  }

  async #load(url: string, started?: number): Promise<void> {
    this.#running = true;
    this.#set({ loading: true, error: null });
    let next: string | null = url;
    try {
      while (next && !this.#controller.signal.aborted) {
        const page = await this.api.page<T>(next, this.#controller.signal);
        const items = this.#state.items.concat(page.data);
        this.#next = page.nextPage;
        const patch: Partial<PagedState<T>> = { items, complete: !page.nextPage };
        if (started !== undefined && this.#state.firstPageMs === null)
          patch.firstPageMs = Math.round(performance.now() - started);
        if (!page.nextPage) patch.total = items.length;
        else if (this.#state.total !== null && items.length > this.#state.total) patch.total = items.length;
        this.#set(patch);
        if (!page.nextPage || this.#wanted <= items.length) break;
        const size = Math.min(
          this.#options.maxPageSize,
          Math.max(this.#options.minPageSize, this.#wanted - items.length + 100),
        );
        next = withLimit(page.nextPage, size);
      }
      this.#set({ loading: false });
    } catch (error) {
      if (isAbort(error)) return;
      this.#set({ loading: false, error: asError(error) });
    } finally {
      this.#running = false;
    }
    if (this.#next && this.#wanted > this.#state.items.length && !this.#state.error && !this.#controller.signal.aborted)
      void this.#load(this.#next);
  }

  /** Try again after an error. */
  retry(): void {
    if (this.#running) return;
    if (this.#state.items.length === 0 && !this.#next) this.start();
    else if (this.#next) void this.#load(this.#next);
  }

  /** Replace an item in place (after an edit in the console). */
  update(item: T): void {
    const index = this.#state.items.findIndex((candidate) => candidate.id === item.id);
    if (index === -1) return;
    const items = this.#state.items.slice();
    items[index] = item;
    this.#set({ items });
  }

  remove(id: string): void {
    const items = this.#state.items.filter((candidate) => candidate.id !== id);
    if (items.length === this.#state.items.length) return;
    this.#set({ items, total: this.#state.total === null ? null : this.#state.total - 1 });
  }

  prepend(item: T): void {
    this.#set({
      items: [item, ...this.#state.items],
      total: this.#state.total === null ? null : this.#state.total + 1,
    });
  }

  dispose(): void {
    this.#controller.abort();
    this.#listeners.clear();
  }
}

/** Rows to lay out: the total when known, else what is loaded plus one placeholder while more may come. */
export function rowCount(state: PagedState<unknown & { id?: string }>): number {
  if (state.error && state.items.length === 0) return 0;
  if (state.items.length === 0 && state.loading) return 0;
  return state.total ?? state.items.length + (state.complete || state.error ? 0 : 1);
}

/** `1,234 records` once known; '' while loading or after an error with nothing shown. */
export function countLabel(state: PagedState<unknown & { id?: string }>, noun: string, plural = `${noun}s`): string {
  if (state.error && state.items.length === 0) return '';
  const count = state.total ?? (state.complete ? state.items.length : null);
  if (count === null)
    return state.loading ? 'Loading…' : `${new Intl.NumberFormat('en-US').format(state.items.length)} ${plural} so far`;
  return `${new Intl.NumberFormat('en-US').format(count)} ${count === 1 ? noun : plural}`;
}

/** The Next-Page URL with another page size (the token does not depend on it). */
export function withLimit(nextPage: string, limit: number): string {
  try {
    const url = new URL(nextPage);
    url.searchParams.set('_limit', String(limit));
    return String(url);
  } catch {
    return nextPage;
  }
}
