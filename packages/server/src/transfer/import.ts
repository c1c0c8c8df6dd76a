/**
 * `quire import`: loads an export (format.ts) into any store, objects and tombstones with their
 * ids and `last_modified`, their ACLs, group memberships and the scope timestamps — so clients
 * keep syncing with `_since` against the new store as against the old one.
 *
 * All or nothing: the whole import is ONE transaction of the store's bulk path
 * (storage/bulk-import.ts: COPY on PostgreSQL, multi-row inserts on SQLite). The input is read
 * once, line by line (a line longer than the limit is refused before it is held whole); each line
 * is checked as the API would check the request that made it (validate.ts), and against the lines
 * before it by the store (parents given and live, no object twice unless `replace`, unique
 * timestamps per scope, no file named twice). The first refusal names its line and rolls
 * everything back; so does an interruption (`signal`) or a store failure. A killed process leaves
 * its transaction uncommitted: the store stays as it was, and the next import says so.
 */
import { hostname } from 'node:os';
import type { Readable } from 'node:stream';
import { BackendError } from '../storage/errors.js';
import { ImportConflict, ImportInterrupted, type ImportRun, throwIfAborted } from '../storage/bulk-import.js';
import type { Storage } from '../storage/types.js';
import { FORMAT, VERSION } from './format.js';
import { numberedLines } from './lines.js';
import { describeConflict } from './refusals.js';
import { RowBatcher } from './rows.js';
import { checkHeader, checkLine, DEFAULT_LIMITS, ImportError, type LineLimits, parseLine } from './validate.js';

export { ImportError } from './validate.js';
export { ImportInterrupted } from '../storage/bulk-import.js';

/**
 * Lines checked before they go to the store's loader: few, so that their parsed values die young
 * (the loader encodes them at once; held for a whole batch, they cost a fifth of the import in
 * garbage collection).
 */
const SLICE = 256;

export interface ImportOptions {
  /** Lines per write of the store (memory is bounded by it). */
  batchSize: number;
  /**
   * Empty a store that holds data first, rather than refusing; and let a later line for the
   * same object replace an earlier one, rather than refusing the import.
   */
  replace: boolean;
  /** PostgreSQL: memory for the index builds' sorts, in MB (`storage_import_sort_memory_mb`). */
  sortMemoryMb?: number;
  /** Bounds on one line (default: from the API's default limits on a request body). */
  limits?: LineLimits;
  /** The attachments' folder pattern (`attachment_folder`): no index entry may name another collection's file. */
  attachmentFolder?: string;
  /** The input's name, for the store's record of imports under way (default: `a stream`). */
  inputName?: string;
  /** Interrupts the import (rolled back; `abort(reason)` with a string says why, e.g. `interrupted by SIGINT`). */
  signal?: AbortSignal;
  /** Called after each batch: objects read so far, and bytes of the input. */
  onProgress?: (objects: number, bytes: number) => void;
  /** Told of earlier imports that never finished (they changed nothing). */
  onUnfinished?: (runs: ImportRun[]) => void;
  /** Told when the reading ends and each step of the store's end begins. */
  onPhase?: (phase: string) => void;
}

/** What an import did. */
export interface ImportSummary {
  /** Objects written (tombstones included). */
  objects: number;
  /** Lines that replaced an earlier line for the same object (only with `replace`). */
  replaced: number;
}

/** Reads, checks and hands every line to the loader; refusals name their line. */
async function load(
  input: Readable,
  options: ImportOptions,
  batcher: RowBatcher,
  check: () => Promise<void>,
): Promise<void> {
  const limits = options.limits ?? DEFAULT_LIMITS;
  const checks = { ...limits, ...(options.attachmentFolder ? { attachmentFolder: options.attachmentFolder } : {}) };
  let header = false;
  for await (const lines of numberedLines(input, limits.maxLineBytes))
    for (const { number, text, bytes } of lines) {
      if (!text.trim()) continue;
      let full: boolean;
      try {
        const value = parseLine(text, number, limits);
        if (!header) {
          checkHeader(value, FORMAT, VERSION);
          header = true;
          continue;
        }
        full = batcher.push(checkLine(value, number, checks), number);
      } catch (error) {
        // A line before this one may be refused by the store: that refusal comes first.
        if (error instanceof ImportError) {
          await batcher.flush();
          await check();
        }
        throw error;
      }
      if (full) {
        throwIfAborted(options.signal);
        await batcher.flush();
        options.onProgress?.(batcher.objects, bytes);
      }
    }
  if (!header) throw new ImportError(`not a ${FORMAT} stream: it is empty`);
  await batcher.flush(true);
  options.onProgress?.(batcher.objects, Number.NaN);
}

/** Loads the stream into `storage`, all or nothing (see above). */
export async function importStore(storage: Storage, input: Readable, options: ImportOptions): Promise<ImportSummary> {
  if (!storage.bulkImport) throw new ImportError(`the ${storage.backend} store cannot import`);
  let objects = 0;
  try {
    const { replaced } = await storage.bulkImport(
      {
        replace: options.replace,
        batchSize: Math.max(1, options.batchSize),
        ...(options.sortMemoryMb ? { sortMemoryMb: options.sortMemoryMb } : {}),
        run: { startedAt: Date.now(), pid: process.pid, host: hostname(), input: options.inputName ?? 'a stream' },
        ...(options.onUnfinished ? { onUnfinished: options.onUnfinished } : {}),
        ...(options.onPhase ? { onPhase: options.onPhase } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      },
      async (loader) => {
        const batcher = new RowBatcher(loader, Math.max(1, Math.min(SLICE, options.batchSize)));
        await load(input, options, batcher, () => loader.check());
        objects = batcher.objects;
      },
    );
    return { objects: objects - replaced, replaced };
  } catch (error) {
    if (error instanceof ImportConflict) throw new ImportError(describeConflict(error.conflict), { cause: error });
    if (error instanceof ImportError || error instanceof ImportInterrupted) throw error;
    if (error instanceof BackendError)
      throw new ImportError(`the store failed (${error.message}); nothing was imported`, { cause: error });
    throw error;
  }
}
