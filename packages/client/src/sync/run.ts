/**
 * One sync of one collection, step by step (engine.ts holds the lock and runs it): act on an
 * announced deletion → pull (forgetting what an emptied server lost; a 404 or 403 on the
 * collection ends the sync, reported) → settle conflicts → push (again when the local side won a
 * conflict) → pull our own writes and concurrent ones → drop records no longer readable.
 */
import { ServerError } from '../errors.js';
import {
  readReadableCheck,
  readSubset,
  readSyncState,
  resetSyncMeta,
  restartPull,
  writeReadableCheck,
  writeSubset,
} from '../store/meta.js';
import type { LocalRecord, RemoteRecord } from '../store/types.js';
import { applyResolution, chooseResolution, type Conflict, type ConflictStrategy } from './conflicts.js';
import type { SyncEngineOptions, SyncOptions, SyncResult } from './types.js';
import { pull } from './pull.js';
import { push } from './push.js';
import { dropUnreadable, serverIds, serverIdsIfChanged } from './readable.js';
import { subsetKey } from './subset.js';

export { subsetQuery } from './subset.js';

/** The collection is deleted (404) or not readable (403, also once its bucket is deleted). */
const isGone = (error: unknown): error is ServerError =>
  error instanceof ServerError && (error.status === 403 || error.status === 404);

const RESOLUTION_NAMES = { remote: 'remote', local: 'local', merged: 'merged', defer: 'manual' } as const;
const MAX_PUSH_ROUNDS = 3;

export class SyncRun {
  readonly #engine: SyncEngineOptions;
  readonly #options: SyncOptions;
  readonly #strategy: ConflictStrategy;
  readonly #signal: { signal?: AbortSignal };
  readonly result: SyncResult = {
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
  /** A conflict settled for the local side left a change to push again. */
  #requeued = false;
  /** A partial replica's subset (query parameters) and whether the server lists what left it. */
  readonly #subset: { query: Record<string, string>; unmatched: boolean } | null;
  /** The subset differs from the one the replica was last reconciled with. */
  #subsetChanged = false;

  constructor(
    engine: SyncEngineOptions,
    options: SyncOptions,
    subset: { query: Record<string, string>; unmatched: boolean } | null = null,
  ) {
    this.#engine = engine;
    this.#options = options;
    this.#subset = subset;
    this.#strategy = options.strategy ?? engine.strategy;
    this.#signal = options.signal ? { signal: options.signal } : {};
  }

  /** Where the collection is, for readable.ts. */
  get #where() {
    const { http, local, bucket, collection } = this.#engine;
    return {
      http,
      local,
      bucket,
      collection,
      ...this.#signal,
      ...(this.#subset ? { subset: this.#subset.query } : {}),
    };
  }

  async execute(): Promise<SyncResult> {
    const { result } = this;
    const key = subsetKey(this.#subset?.query ?? null);
    if ((await readSubset(this.#engine.local.db)) !== key) {
      // A new subset: listed whole (what is held already is not written again), then reconciled.
      this.#subsetChanged = true;
      await restartPull(this.#engine.local.db);
    }
    try {
      result.notModified = (await this.#pull()).notModified;
    } catch (error) {
      return this.#gone(error);
    }
    if (!this.#options.pullOnly && (await this.#engine.local.pendingCount()) > 0) {
      await this.#push();
      // Our writes moved the collection timestamp: fetch them (and anything concurrent) now.
      if (result.pushed > 0) {
        const before = result.pulled;
        try {
          await this.#pull();
        } catch (error) {
          return this.#gone(error);
        }
        result.notModified = result.notModified && result.pulled === before;
      }
    }
    if (await this.#readableCheckDue()) {
      const unreadable = await dropUnreadable(this.#where);
      await writeReadableCheck(this.#engine.local.db, Date.now());
      this.#dropped(unreadable);
      if (this.#subset) result.leftSubset = (result.leftSubset ?? 0) + unreadable.length;
    }
    if (this.#subsetChanged) await writeSubset(this.#engine.local.db, key);
    result.ok = result.errors.length === 0 && result.conflicts.every((conflict) => conflict.resolution !== 'manual');
    return result;
  }

  /**
   * The change monitor announced the collection's deletion at `deletedAt`: unless already pulled
   * from the collection re-created since, what the server still shows (a re-created collection's
   * records; none while it is gone) is all that may stay synced.
   */
  async actOnDeletion(deletedAt: number): Promise<void> {
    const { etag } = await readSyncState(this.#engine.local.db);
    if (etag !== null && deletedAt <= etag) return;
    const onServer = await serverIds(this.#where).catch((error) =>
      isGone(error) ? new Set<string>() : Promise.reject(error),
    );
    await this.#deleted(onServer);
  }

  #pull() {
    const { http, local, bucket, collection, pageSize, transform } = this.#engine;
    const { result } = this;
    const decode =
      transform && !transform.empty ? { decode: (records: RemoteRecord[]) => transform.decodeAll(records) } : {};
    return pull({
      http,
      local,
      bucket,
      collection,
      pageSize,
      ...this.#signal,
      ...decode,
      ...(this.#subset ? { subset: this.#subset } : {}),
      onPage: async (page, progress) => {
        result.pulled += page.applied.length - page.left;
        if (page.left) {
          result.removed += page.left;
          result.leftSubset = (result.leftSubset ?? 0) + page.left;
        }
        result.skipped += page.skipped;
        if (page.applied.length) this.#engine.onChanges(page.applied);
        await this.#settle(page.conflicts);
        this.#options.onProgress?.({ phase: 'pull', ...progress });
      },
      onEmptied: async () => {
        // What the server still shows (it may hold records written since it was emptied).
        const onServer = await serverIdsIfChanged(this.#where);
        if (onServer) result.serverFlushed ||= await this.#forget(onServer);
      },
    });
  }

  async #push(): Promise<void> {
    const { http, local, bucket, collection, transform } = this.#engine;
    const { result } = this;
    const transformers =
      transform && !transform.empty
        ? {
            encode: (record: LocalRecord) => transform.encode(record),
            decode: (record: RemoteRecord) => transform.decode(record),
          }
        : {};
    const batchSize = await this.#engine.batchSize();
    for (let round = 0; round < MAX_PUSH_ROUNDS; round++) {
      this.#requeued = false;
      await push({
        http,
        local,
        bucket,
        collection,
        batchSize,
        ...this.#signal,
        ...transformers,
        onChunk: async (chunk, progress) => {
          result.pushed += chunk.published.length;
          // Published records now carry the server's timestamp.
          if (chunk.published.length)
            this.#engine.onChanges(
              chunk.published.map(({ type, id }) => ({ type: type === 'delete' ? 'delete' : 'update', id })),
            );
          for (const error of chunk.errors) {
            const body = error.body as { message?: string } | null;
            const message = body?.message ?? `HTTP ${error.status}`;
            result.errors.push({ id: error.id, status: error.status, message, body: error.body });
          }
          await this.#settle(chunk.conflicts);
          this.#options.onProgress?.({ phase: 'push', ...progress });
        },
      });
      if (!this.#requeued) break;
    }
  }

  async #settle(conflicts: Conflict[]): Promise<void> {
    for (const conflict of conflicts) {
      const resolution = await chooseResolution(this.#strategy, conflict);
      if (await applyResolution(this.#engine.local, conflict, resolution)) this.#requeued = true;
      this.result.conflicts.push({ ...conflict, resolution: RESOLUTION_NAMES[resolution.kind] });
      this.#engine.onChanges([{ type: 'update', id: conflict.id }]);
    }
  }

  #dropped(ids: string[]): void {
    this.result.removed += ids.length;
    if (ids.length) this.#engine.onChanges(ids.map((id) => ({ type: 'delete', id })));
  }

  /** Keeps only what `onServer` holds, and local changes; true when it dropped or re-based something. */
  async #forget(onServer: Set<string>): Promise<boolean> {
    const local = this.#engine.local;
    const emptied = await local.forgetEmptied((id) => onServer.has(id), this.#strategy === 'manual');
    this.#dropped(emptied.dropped);
    await this.#settle(emptied.conflicts);
    return emptied.dropped.length + emptied.recreated.length + emptied.settled.length + emptied.conflicts.length > 0;
  }

  /** The server's collection was deleted: forget its copy, and pull from nothing next. */
  async #deleted(onServer: Set<string>): Promise<void> {
    await this.#forget(onServer);
    await resetSyncMeta(this.#engine.local.db);
    this.result.serverDeleted = true;
  }

  /** A 404 (deleted) or 403 (unreadable, or its bucket deleted) ends the sync: reported, nothing thrown. */
  async #gone(error: unknown): Promise<SyncResult> {
    if (!isGone(error)) throw error;
    const { local } = this.#engine;
    if (error.status === 404) await this.#deleted(new Set());
    else {
      // We may no longer read this collection at all: nothing synced stays visible.
      const unreadable = await local.removeUnreadable(() => false);
      await resetSyncMeta(local.db);
      this.#dropped(unreadable);
    }
    this.result.errors.push({ status: error.status, code: error.code, message: error.message, body: error.body });
    this.result.ok = false;
    return this.result;
  }

  /**
   * A revoked read permission shows only in `Total-Objects` (the records stop coming, no
   * tombstone). Revoking a record's permission changes the record, hence the collection's ETag:
   * checked after any sync that was not a 304 or that pushed. A change of group membership or of
   * an inherited permission leaves the ETag alone: checked every `intervalMs` too. A no-change
   * poll is thus ONE request, and the check itself counts nothing locally (readServerCount).
   */
  async #readableCheckDue(): Promise<boolean> {
    // A partial replica reconciles its ids after a change of subset, and after every poll that
    // changed something when the server cannot list what left the subset (the fallback).
    // A conflict settled for the server may keep a version outside the subset: checked too.
    const subset = this.#subset;
    if (subset) {
      const { notModified, conflicts } = this.result;
      if (this.#subsetChanged || (!subset.unmatched && !notModified) || conflicts.length > 0) return true;
    }
    const policy = this.#engine.checkReadable;
    if (!policy) return false;
    if (!this.result.notModified || this.result.pushed > 0) return true;
    const last = await readReadableCheck(this.#engine.local.db);
    return last === null || Date.now() - last >= policy.intervalMs;
  }
}
