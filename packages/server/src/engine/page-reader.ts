/**
 * A page of a listing read from the store in chunks, so that neither memory nor the event loop
 * pays for a whole page at once: each statement reads about `CHUNK_BYTES` of objects (sized by
 * what the objects of that list weighed last time, a few objects when that is not known yet),
 * continuing after the last object of the previous chunk (keyset, as the next page would), and
 * each chunk waits for its owner's turn of the event loop (loop-turns.ts). A page ends after
 * `limit` objects or at the object that would take its JSON past `max_page_bytes` (one object at
 * least): Next-Page continues from there, as after any page. Whether another page follows is
 * known from one object more, as before.
 */
import { performance } from 'node:perf_hooks';
import type { ListedJson, ListOptions } from '../storage/types.js';
import { TURN_MS, type Turn } from './loop-turns.js';

/** About this much JSON per statement: what one chunk holds in memory, and its share of the event loop. */
const CHUNK_BYTES = 1024 * 1024;
/** A chunk's objects where their size is not known yet. */
const FIRST_CHUNK = 10;
/** Lists whose object size is remembered (the least recently read forgotten first). */
const REMEMBERED_LISTS = 1000;

/** What the objects of each list weighed when last read (JSON bytes per object), for the size of the next chunks. */
export class ObjectSizes {
  readonly #sizes = new Map<string, number>();

  get(list: string): number | undefined {
    return this.#sizes.get(list);
  }

  set(list: string, bytes: number): void {
    this.#sizes.delete(list);
    this.#sizes.set(list, bytes);
    if (this.#sizes.size > REMEMBERED_LISTS) this.#sizes.delete(this.#sizes.keys().next().value as string);
  }
}

export interface PageRequest {
  /** Objects per page. */
  limit: number;
  /** `max_page_bytes`: the JSON of a page's objects stops before it would pass this (one object at least). */
  maxBytes: number;
  options: Omit<ListOptions, 'limit' | 'after'>;
  /** Where the page starts (a token's last object), as `ListOptions.after`. */
  after: Record<string, unknown> | undefined;
  /** The sort fields' values of an object (the keyset of the next chunk). */
  keyOf(item: ListedJson): Record<string, unknown>;
  /** Awaited before each chunk: the request owner's turn of the event loop. */
  turn: Turn;
}

export interface ReadPage {
  items: ListedJson[];
  /** Objects follow the page. */
  more: boolean;
}

/** A page read chunk by chunk through `read` (a store's `listJson` on one list); `list` names the list for `sizes`. */
export async function readPage(
  read: (options: ListOptions) => Promise<ListedJson[]>,
  page: PageRequest,
  sizes: ObjectSizes,
  list: string,
): Promise<ReadPage> {
  const items: ListedJson[] = [];
  let bytes = 0;
  let after = page.after;
  let perObject = sizes.get(list);
  for (;;) {
    await page.turn();
    // One more than the page holds: whether another page follows.
    const wanted = page.limit + 1 - items.length;
    const chunk = Math.min(
      wanted,
      perObject === undefined ? FIRST_CHUNK : Math.max(1, Math.floor(CHUNK_BYTES / perObject)),
    );
    const rows = await read({ ...page.options, limit: chunk, ...(after ? { after } : {}) });
    let chunkBytes = 0;
    for (const [index, row] of rows.entries()) {
      const size = row.json.length + 1;
      chunkBytes += size;
      const full = items.length === page.limit || (items.length > 0 && bytes + size > page.maxBytes);
      if (full) {
        if (rows.length > 0) sizes.set(list, Math.ceil(chunkBytes / (index + 1)));
        return { items, more: true };
      }
      items.push(row);
      bytes += size;
    }
    if (rows.length > 0) {
      perObject = Math.ceil(chunkBytes / rows.length);
      sizes.set(list, perObject);
    }
    if (rows.length < chunk) return { items, more: false };
    after = page.keyOf(rows[rows.length - 1]!);
  }
}

/**
 * `fn` over `items`, asking `turn` every few milliseconds: work per object (parsing, presenting,
 * projecting, serialising a page) in slices rather than in one block, each in its owner's turn.
 */
export async function mapInSlices<T, R>(items: readonly T[], fn: (item: T) => R, turn: Turn): Promise<R[]> {
  const results: R[] = [];
  let sliceStart = performance.now();
  for (let index = 0; index < items.length; index++) {
    results.push(fn(items[index]!));
    if ((index & 15) === 15 && performance.now() - sliceStart > TURN_MS) {
      await turn();
      sliceStart = performance.now();
    }
  }
  return results;
}
