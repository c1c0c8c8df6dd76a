/**
 * A dump read as it downloads (`loadDump(response)`; loaded on first use): the records of its
 * `data` array are cut out of the text as it arrives, each parsed on its own, so that the replica
 * stores them in chunks while the rest is still on the network — the collection is queryable
 * from the first chunk on. The other top-level fields (`timestamp`) are read once the text ends,
 * wherever they stand. Accepts the two forms `readDump` does: `{ …, data: [records] }` and a bare
 * array of records.
 */
import type { RemoteRecord } from '../store/types.js';
import { DumpRecords } from './records.js';

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;

/** Splits a dump's text, fed in pieces, into its records (a record split across pieces is carried). */
export class DumpSplitter {
  #depth = 0;
  #inString = false;
  #escaped = false;
  /** Depth inside the records array (its elements start there), or -1 when not in it. */
  #dataDepth = -1;
  #done = false;
  /** The text of the record being read, from earlier pieces. */
  #partial = '';
  /** The top-level object without its records, to read `timestamp` from at the end. */
  #shell = '';
  /** The last string at depth 1 (a key), where it started in the current piece, and whether it ended. */
  #keyStart = -1;
  #keyPartial = '';
  #lastKey = '';

  /** The records completed by `text`. */
  push(text: string): RemoteRecord[] {
    const records: RemoteRecord[] = [];
    let start = this.#partial ? 0 : -1;
    let shellFrom = this.#dataDepth === -1 ? 0 : -1;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (code === BACKSLASH) this.#escaped = true;
        else if (code === QUOTE) {
          this.#inString = false;
          if (this.#keyStart >= 0) this.#lastKey = this.#keyPartial + text.slice(this.#keyStart, i);
          this.#keyStart = -1;
          this.#keyPartial = '';
        }
        continue;
      }
      if (code === QUOTE) {
        this.#inString = true;
        if (this.#depth === 1 && this.#dataDepth === -1) this.#keyStart = i + 1;
      } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
        if (this.#dataDepth !== -1 && this.#depth === this.#dataDepth) start = i;
        this.#depth++;
        const bare = this.#depth === 1 && code === OPEN_BRACKET;
        const named = this.#depth === 2 && code === OPEN_BRACKET && this.#lastKey === 'data';
        if (!this.#done && this.#dataDepth === -1 && (bare || named)) {
          // The records array: what stands outside it is the shell.
          this.#dataDepth = this.#depth;
          if (shellFrom >= 0) this.#shell += text.slice(shellFrom, i + 1);
          shellFrom = -1;
        }
      } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
        this.#depth--;
        if (this.#dataDepth !== -1 && this.#depth === this.#dataDepth && start >= 0) {
          records.push(JSON.parse(this.#partial + text.slice(start, i + 1)) as RemoteRecord);
          this.#partial = '';
          start = -1;
        } else if (this.#dataDepth !== -1 && this.#depth === this.#dataDepth - 1) {
          this.#dataDepth = -1;
          this.#done = true;
          shellFrom = i;
        }
      }
    }
    if (start >= 0) this.#partial += text.slice(start);
    if (shellFrom >= 0) this.#shell += text.slice(shellFrom);
    if (this.#inString && this.#keyStart >= 0) {
      this.#keyPartial += text.slice(this.#keyStart);
      this.#keyStart = 0;
    }
    return records;
  }

  /** The dump's `timestamp` once its text has ended (null: none, or a bare array). */
  timestamp(): number | null {
    if (this.#depth !== 0 || this.#inString || this.#partial) throw new TypeError('The dump ends before its end');
    if (!this.#shell.trimStart().startsWith('{')) return null;
    const shell = JSON.parse(this.#shell) as { timestamp?: unknown };
    return typeof shell.timestamp === 'number' ? shell.timestamp : null;
  }
}

/**
 * A dump's body as it downloads: its records in batches (each what a piece of the body completed;
 * tombstones and repeated ids left out, as `readDump` does), then, once they are all read, the
 * sync state the dump stands for.
 */
export function readDumpStream(body: ReadableStream<Uint8Array>): {
  batches: AsyncGenerator<RemoteRecord[]>;
  state(): { since: number | null; etag: number | null };
} {
  const splitter = new DumpSplitter();
  const accepted = new DumpRecords();
  let ended = false;
  async function* batches(): AsyncGenerator<RemoteRecord[]> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    for (let done = false; !done; ) {
      const read = await reader.read();
      done = read.done;
      const text = done ? decoder.decode() : decoder.decode(read.value, { stream: true });
      const records: RemoteRecord[] = [];
      for (const record of splitter.push(text)) {
        const kept = accepted.accept(record);
        if (kept) records.push(kept);
      }
      if (records.length > 0) yield records;
    }
    ended = true;
  }
  return {
    batches: batches(),
    state() {
      if (!ended) throw new Error('The dump has not been read to its end');
      return { since: accepted.since, etag: splitter.timestamp() ?? accepted.since };
    },
  };
}
