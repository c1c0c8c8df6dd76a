/**
 * A collection's sync engine: runs one sync at a time holding the cross-tab sync lock (its steps:
 * run.ts), refuses to start during a server-requested `Backoff`, and remembers a deletion of the
 * server's collection the change monitor announced until a sync acts on it. Per-record failures
 * never throw; they are reported in the SyncResult.
 */
import { BackoffError, NetworkError, QuireError, SyncAbortedError } from '../errors.js';
import { asStoreFailure } from '../store/store-errors.js';
import { readSyncState } from '../store/meta.js';
import type { SubsetFilters } from './subset.js';
import type { SyncEngineOptions, SyncOptions, SyncResult } from './types.js';

export type {
  ChangeNotice,
  ConflictReport,
  SyncEngineOptions,
  SyncErrorReport,
  SyncOptions,
  SyncProgress,
  SyncResult,
} from './types.js';

export class SyncEngine {
  readonly #options: SyncEngineOptions;
  /** The newest deletion of the server's collection the change monitor announced, not yet acted on. */
  #deletedAt: number | null = null;
  /** The subset synced: the `filters` option, or the last `sync({ filters })`. */
  #filters: SubsetFilters | null;

  constructor(options: SyncEngineOptions) {
    this.#options = options;
    this.#filters = options.filters ?? null;
  }

  /** The collection timestamp (ETag) of the last completed pull, or null before the first. */
  async pulledTimestamp(): Promise<number | null> {
    return (await readSyncState(this.#options.local.db)).etag;
  }

  /** The change monitor announced the collection's deletion at `at`: the next sync acts on it. */
  noteDeletion(at: number): void {
    this.#deletedAt = Math.max(at, this.#deletedAt ?? at);
  }

  /** Runs `fn` holding the sync lock: no sync of this replica runs meanwhile, in any tab. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.#options.lock.run(this.#options.lockName, fn);
  }

  async sync(options: SyncOptions = {}): Promise<SyncResult> {
    const { http } = this.#options;
    const wait = http.backoff.remaining();
    if (wait > 0 && !options.ignoreBackoff) throw new BackoffError(wait);
    try {
      return await this.#options.lock.run(this.#options.lockName, () => this.#run(options), options.signal);
    } catch (error) {
      if (options.signal?.aborted && !(error instanceof QuireError)) throw new SyncAbortedError();
      // A page, an acknowledgement or a checkpoint that could not be written was rolled back
      // whole: the replica, its outbox and its checkpoint are as before it (storage full: QUIRE_ERR_STORE_QUOTA).
      throw asStoreFailure(error, `syncing ${this.#options.bucket}/${this.#options.collection}`);
    }
  }

  async #run(options: SyncOptions): Promise<SyncResult> {
    if (options.filters !== undefined) this.#filters = options.filters;
    const { SyncRun, subsetQuery } = await loadRun();
    const query = subsetQuery(this.#filters);
    // Without knowing the server (GET / failed), the fallback: correct everywhere, costlier.
    const asked = query !== null && this.#options.partialReplicas;
    const unmatched = asked ? await asked().catch(() => false) : false;
    const run = new SyncRun(this.#options, options, query ? { query, unmatched } : null);
    const deletedAt = this.#deletedAt;
    if (deletedAt !== null) {
      await run.actOnDeletion(deletedAt);
      if (this.#deletedAt === deletedAt) this.#deletedAt = null;
    }
    return run.execute();
  }
}

let running: Promise<typeof import('./run.js')> | null = null;

/**
 * The steps of a sync (run.ts and what it imports: pull, import, push, conflicts, the readable
 * check) are loaded by the first sync: an app reads and writes its replica offline without them,
 * and a sync needs the network anyway. A load that fails (offline, chunk not cached) fails that
 * sync as a NetworkError; the next sync tries again.
 */
function loadRun(): Promise<typeof import('./run.js')> {
  running ??= import('./run.js').catch((error: unknown) => {
    running = null;
    throw new NetworkError('Could not load the sync code', { cause: error });
  });
  return running;
}
