/**
 * Orchestrates one sync of one collection: forget the old server copy if the change monitor
 * announced its deletion → pull (forgetting what an emptied server lost; a 404 or 403 on the
 * collection ends the sync, reported) → resolve conflicts → push (again when the local side won a
 * conflict) → pull our own writes and concurrent ones → drop records no longer readable. Holds the
 * cross-tab sync lock for the whole run. Per-record failures never throw; they are reported in the
 * SyncResult.
 */
import { BackoffError, QuireError, ServerError, SyncAbortedError } from '../errors.js';
import type { LocalCollection } from '../store/local-collection.js';
import { asStoreFailure } from '../store/store-errors.js';
import { readReadableCheck, readSyncState, resetSyncMeta, writeReadableCheck } from '../store/meta.js';
import type { LocalRecord, RemoteRecord } from '../store/types.js';
import type { HttpTransport } from '../transport/http.js';
import type { SyncLock } from '../tabs/locks.js';
import { applyResolution, chooseResolution, type Conflict, type ConflictStrategy } from './conflicts.js';
import { pull } from './pull.js';
import { push } from './push.js';
import { dropUnreadable, serverIds, serverIdsIfChanged } from './readable.js';
import type { TransformChain } from '../transform/transformers.js';

export interface SyncProgress {
  phase: 'pull' | 'push';
  done: number;
  /** From `Total-Objects` when the server sends it, else what is known so far. */
  total: number;
}

export interface SyncOptions {
  strategy?: ConflictStrategy;
  /** Only bring server changes down; local changes stay pending. */
  pullOnly?: boolean;
  /** Sync even if the server asked to back off (use sparingly). */
  ignoreBackoff?: boolean;
  signal?: AbortSignal;
  onProgress?: (progress: SyncProgress) => void;
}

export interface ConflictReport extends Conflict {
  /** How it was settled: `manual` ones wait in `collection.conflicts()`. */
  resolution: 'remote' | 'local' | 'merged' | 'manual';
}

export interface SyncErrorReport {
  id?: string;
  status?: number;
  code?: string;
  message: string;
  body?: unknown;
}

export interface SyncResult {
  /** No error and no conflict left for the app. */
  ok: boolean;
  /** Server changes applied locally (creations, updates, deletions). */
  pulled: number;
  /** Local changes the server accepted. */
  pushed: number;
  conflicts: ConflictReport[];
  errors: SyncErrorReport[];
  /** Server changes with no local effect (already known, unknown tombstones, waiting conflicts). */
  skipped: number;
  /**
   * Records dropped because the server no longer has them (`serverFlushed`) or no longer lets us
   * read them.
   */
  removed: number;
  /**
   * The server's copy of the collection was found emptied since the last sync — deleted and
   * re-created, or the whole server flushed (the protocol's signal: a `_since` poll returned no
   * change while the collection's timestamp moved past the replica's; kinto.js reports it as
   * "Server has been flushed"). Synced records the server no longer has were dropped (counted in
   * `removed`); local changes were kept: pending updates now re-create their records (pushed in
   * this sync, counted in `pushed`), or under the `manual` strategy became conflicts against
   * the server's deletion (`conflicts`, `remote: null`). False when nothing held was missing.
   */
  serverFlushed: boolean;
  /**
   * The server's collection is deleted (the pull met a 404, which is in `errors`), or the change
   * monitor announced its deletion since the replica last pulled (its bucket's too: the pull then
   * meets a 403, or, re-created meanwhile, succeeds). As for `serverFlushed`, synced records the
   * server does not have were dropped (`removed`) and local changes kept; the sync state was reset,
   * so once the collection exists again the next sync pulls it whole and pushes them.
   */
  serverDeleted: boolean;
  /** The server answered 304: nothing changed remotely. */
  notModified: boolean;
  /**
   * Offline attachments (collections opened with `attachments`): queued files the server now has
   * (`uploaded`), removed, dropped (the server's version won their record's conflict, or the
   * server refused them for good: in `errors`), and files the `eager` policy downloaded.
   */
  attachments?: { uploaded: number; removed: number; dropped: number; downloaded: number };
}

export interface ChangeNotice {
  type: 'create' | 'update' | 'delete';
  id: string;
}

export interface SyncEngineOptions {
  http: HttpTransport;
  local: LocalCollection;
  bucket: string;
  collection: string;
  pageSize: number;
  strategy: ConflictStrategy;
  lock: SyncLock;
  lockName: string;
  batchSize: () => Promise<number | null>;
  /**
   * Check for records that lost read permission: after a sync that changed something, and at
   * least every `intervalMs` otherwise (null: never).
   */
  checkReadable: { intervalMs: number } | null;
  onChanges: (changes: ChangeNotice[]) => void;
  /** The collection's remote transformers (none: records travel as they are). */
  transform?: TransformChain;
}

/** The collection is deleted (404) or not readable (403, also once its bucket is deleted). */
const isGone = (error: unknown): error is ServerError =>
  error instanceof ServerError && (error.status === 403 || error.status === 404);

const RESOLUTION_NAMES = { remote: 'remote', local: 'local', merged: 'merged', defer: 'manual' } as const;
const MAX_PUSH_ROUNDS = 3;

export class SyncEngine {
  readonly #options: SyncEngineOptions;
  /** The newest deletion of the server's collection the change monitor announced, not yet acted on. */
  #deletedAt: number | null = null;

  constructor(options: SyncEngineOptions) {
    this.#options = options;
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
    const { http, local, bucket, collection } = this.#options;
    const strategy = options.strategy ?? this.#options.strategy;
    const signal = options.signal ? { signal: options.signal } : {};
    const transform = this.#options.transform;
    const transformers =
      transform && !transform.empty ? { decode: (records: RemoteRecord[]) => transform.decodeAll(records) } : {};
    const pushTransformers =
      transform && !transform.empty
        ? {
            encode: (record: LocalRecord) => transform.encode(record),
            decode: (record: RemoteRecord) => transform.decode(record),
          }
        : {};
    const result: SyncResult = {
      ok: true,
      pulled: 0,
      pushed: 0,
      conflicts: [],
      errors: [],
      skipped: 0,
      removed: 0,
      notModified: false,
      serverFlushed: false,
      serverDeleted: false,
    };
    let requeued = false;

    const settle = async (conflicts: Conflict[]) => {
      for (const conflict of conflicts) {
        const resolution = await chooseResolution(strategy, conflict);
        if (await applyResolution(local, conflict, resolution)) requeued = true;
        result.conflicts.push({ ...conflict, resolution: RESOLUTION_NAMES[resolution.kind] });
        this.#options.onChanges([{ type: 'update', id: conflict.id }]);
      }
    };

    /** Keeps only what `onServer` holds, and local changes; true when it dropped or re-based something. */
    const forget = async (onServer: Set<string>) => {
      const emptied = await local.forgetEmptied((id) => onServer.has(id), strategy === 'manual');
      result.removed += emptied.dropped.length;
      if (emptied.dropped.length) this.#options.onChanges(emptied.dropped.map((id) => ({ type: 'delete', id })));
      await settle(emptied.conflicts);
      return emptied.dropped.length + emptied.recreated.length + emptied.settled.length + emptied.conflicts.length > 0;
    };
    /** The server's collection was deleted: forget its copy, and pull from nothing next. */
    const deleted = async (onServer: Set<string>) => {
      await forget(onServer);
      await resetSyncMeta(local.db);
      result.serverDeleted = true;
    };
    /** A 404 (deleted) or 403 (unreadable, or its bucket deleted) ends the sync: reported, nothing thrown. */
    const gone = async (error: unknown) => {
      if (!isGone(error)) throw error;
      if (error.status === 404) await deleted(new Set());
      else {
        // We may no longer read this collection at all: nothing synced stays visible.
        const unreadable = await local.removeUnreadable(() => false);
        await resetSyncMeta(local.db);
        result.removed += unreadable.length;
        if (unreadable.length) this.#options.onChanges(unreadable.map((id) => ({ type: 'delete', id })));
      }
      result.errors.push({ status: error.status, code: error.code, message: error.message, body: error.body });
      result.ok = false;
      return result;
    };

    const pullOnce = async () => {
      const outcome = await pull({
        http,
        local,
        bucket,
        collection,
        pageSize: this.#options.pageSize,
        ...signal,
        ...transformers,
        onPage: async (page, progress) => {
          result.pulled += page.applied.length;
          result.skipped += page.skipped;
          if (page.applied.length) this.#options.onChanges(page.applied);
          await settle(page.conflicts);
          options.onProgress?.({ phase: 'pull', ...progress });
        },
        onEmptied: async () => {
          // What the server still shows (it may hold records written since it was emptied).
          const onServer = await serverIdsIfChanged({ http, local, bucket, collection, ...signal });
          if (onServer) result.serverFlushed ||= await forget(onServer);
        },
      });
      return outcome;
    };

    const deletedAt = this.#deletedAt;
    if (deletedAt !== null) {
      // Unless already pulled from the collection re-created since: what the server still shows
      // (a re-created collection's records; none while it is gone) is all that may stay synced.
      const { etag } = await readSyncState(local.db);
      if (etag === null || deletedAt > etag)
        await deleted(
          await serverIds({ http, local, bucket, collection, ...signal }).catch((error) =>
            isGone(error) ? new Set<string>() : Promise.reject(error),
          ),
        );
      if (this.#deletedAt === deletedAt) this.#deletedAt = null;
    }

    try {
      result.notModified = (await pullOnce()).notModified;
    } catch (error) {
      return gone(error);
    }

    if (!options.pullOnly && (await local.pendingCount()) > 0) {
      const batchSize = await this.#options.batchSize();
      for (let round = 0; round < MAX_PUSH_ROUNDS; round++) {
        requeued = false;
        await push({
          http,
          local,
          bucket,
          collection,
          batchSize,
          ...signal,
          ...pushTransformers,
          onChunk: async (chunk, progress) => {
            result.pushed += chunk.published.length;
            // Published records now carry the server's timestamp.
            if (chunk.published.length)
              this.#options.onChanges(
                chunk.published.map(({ type, id }) => ({ type: type === 'delete' ? 'delete' : 'update', id })),
              );
            for (const error of chunk.errors) {
              const body = error.body as { message?: string } | null;
              result.errors.push({
                id: error.id,
                status: error.status,
                message: body?.message ?? `HTTP ${error.status}`,
                body: error.body,
              });
            }
            await settle(chunk.conflicts);
            options.onProgress?.({ phase: 'push', ...progress });
          },
        });
        if (!requeued) break;
      }
      // Our writes moved the collection timestamp: fetch them (and anything concurrent) now.
      if (result.pushed > 0) {
        const before = result.pulled;
        try {
          await pullOnce();
        } catch (error) {
          return gone(error);
        }
        result.notModified = result.notModified && result.pulled === before;
      }
    }

    if (await this.#readableCheckDue(result)) {
      const gone = await dropUnreadable({ http, local, bucket, collection, ...signal });
      await writeReadableCheck(local.db, Date.now());
      result.removed += gone.length;
      if (gone.length) this.#options.onChanges(gone.map((id) => ({ type: 'delete', id })));
    }
    result.ok = result.errors.length === 0 && result.conflicts.every((conflict) => conflict.resolution !== 'manual');
    return result;
  }

  /**
   * A revoked read permission shows only in `Total-Objects` (the records stop coming, no
   * tombstone). Revoking a record's permission changes the record, hence the collection's ETag:
   * checked after any sync that was not a 304 or that pushed. A change of group membership or of
   * an inherited permission leaves the ETag alone: checked every `intervalMs` too. A no-change
   * poll is thus ONE request, and the check itself counts nothing locally (readServerCount).
   */
  async #readableCheckDue(result: SyncResult): Promise<boolean> {
    const policy = this.#options.checkReadable;
    if (!policy) return false;
    if (!result.notModified || result.pushed > 0) return true;
    const last = await readReadableCheck(this.#options.local.db);
    return last === null || Date.now() - last >= policy.intervalMs;
  }
}
