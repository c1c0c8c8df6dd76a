/**
 * Collection<T>: the app's view of one synchronised collection. Local reads and writes work
 * offline; `sync()` runs the engine; events report changes from this tab, from sync and from
 * other tabs; `status` is the sync status every tab shares. Auto-sync runs in one tab per
 * collection (the leader); the others follow through the shared IndexedDB and the channel.
 */
import { AttachmentError, StoreError } from '../errors.js';
import type { FileInput } from '../remote/files.js';
import type {
  AttachmentsExtension,
  AttachOptions,
  GetLocalAttachmentOptions,
  LocalAttachment,
} from './attachments-host.js';
import { loadWhenOnline } from '../online.js';
import { type DumpSource, readDumpBatches } from '../dump/dump.js';
import { loadDump } from '../store/dump-load.js';
import type { ListQuery, LocalCollection, Settlement } from '../store/local-collection.js';
import { asLocal } from '../store/record-fields.js';
import { asStoreFailure } from '../store/store-errors.js';
import type { ConflictEntry, LocalRecord } from '../store/types.js';
import type { ConflictStrategy } from '../sync/conflicts.js';
import type { SyncOptions, SyncProgress, SyncResult } from '../sync/engine.js';
import type { AutoSync } from '../sync/auto-sync.js';
import type { LiveMode } from '../sync/live.js';
import type { AutoSyncOptions } from '../sync/scheduler.js';
import { type ChangeEvent, type CollectionEvents, storageEstimate } from './events.js';
import { LiveQuery, type ObservableLike } from './live-query.js';
import { mergeSyncOptions } from './merge-sync-options.js';
import type { CollectionParts } from './collection-parts.js';
import { describeFailure, type SharedSyncStatus, type SyncStatus, SyncStatusStore } from './sync-status.js';

export type { ListQuery };
export type { CollectionParts };
export type { ChangeEvent, CollectionEvents, RemoteChangeEvent } from './events.js';

/** How the app settles a manual conflict. */
export type ManualResolution = Settlement;

type Listener<E> = (event: E) => void;
const noop = () => {};

export class Collection<T extends object = Record<string, unknown>> {
  readonly bucket: string;
  readonly name: string;
  readonly #parts: Promise<CollectionParts>;
  readonly #onClose: () => void;
  readonly #listeners = new Map<keyof CollectionEvents, Set<Listener<never>>>();
  #inflight: Promise<SyncResult> | null = null;
  #queued: Promise<SyncResult> | null = null;
  /** The options of every call the queued sync stands for. */
  readonly #queuedOptions: Array<SyncOptions & { strategy?: ConflictStrategy }> = [];
  #autoSync: AutoSync | null = null;
  /** Live queries by what they read: one object per query, hence stable for UI bindings. */
  readonly #liveQueries = new Map<string, object>();
  #autoSyncGeneration = 0;
  readonly #status: SyncStatusStore;

  /** `onClose`: lets the client hand out a fresh object for this collection once this one is closed. */
  constructor(bucket: string, name: string, parts: Promise<CollectionParts>, onClose: () => void = () => {}) {
    this.bucket = bucket;
    this.name = name;
    this.#parts = parts;
    this.#onClose = onClose;
    this.#status = new SyncStatusStore(
      (status) =>
        void parts.then(
          (p) => p.channel.shareStatus(status),
          () => {},
        ),
    );
    void parts.then(
      (p) => {
        if (this.#status.snapshot.lastSyncAt === null && p.lastSyncAt !== null)
          this.#status.receive({ ...this.#status.snapshot, lastSyncAt: p.lastSyncAt });
      },
      () => {},
    );
    // What the app wrote, here or in another tab, is pushed soon by the tab that auto-syncs.
    this.on('change', (event) => {
      if (event.source === 'local' || (event.source === 'tab' && event.tab === 'local'))
        this.#autoSync?.notifyLocalWrite();
    });
  }

  /** The sync status, the same in every tab: running, progress, last result or failure, who auto-syncs. */
  get status(): SyncStatus {
    return this.#status.snapshot;
  }

  /** Calls `listener` whenever `status` changes (a sync in this tab or another, auto-sync leadership). */
  onStatus(listener: (status: SyncStatus) => void): () => void {
    return this.#status.subscribe(listener);
  }

  /** @internal The status another tab shared. */
  receiveStatus(status: SharedSyncStatus): void {
    this.#status.receive(status);
  }

  on<K extends keyof CollectionEvents>(event: K, listener: Listener<CollectionEvents[K]>): () => void {
    let set = this.#listeners.get(event);
    if (!set) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener as Listener<never>);
    return () => set.delete(listener as Listener<never>);
  }

  /** @internal */
  emit<K extends keyof CollectionEvents>(event: K, payload: CollectionEvents[K]): void {
    for (const listener of this.#listeners.get(event) ?? []) (listener as Listener<CollectionEvents[K]>)(payload);
  }

  async #local(): Promise<LocalCollection> {
    return (await this.#parts).local;
  }

  /**
   * Creates a record locally (id: `data.id` or a new UUID) and queues it for the server. Writes
   * made in the same tick share one IndexedDB transaction.
   */
  async create(data: T & { id?: string }): Promise<LocalRecord<T>> {
    return (await (await this.#local()).create(data).catch((error) => this.#failed(error))) as LocalRecord<T>;
  }

  async get(id: string): Promise<LocalRecord<T> | undefined> {
    return (await (await this.#local()).get(id)) as LocalRecord<T> | undefined;
  }

  /** Replaces the record's fields, or merges them with `{ patch: true }`. */
  async update(id: string, data: Partial<T>, options: { patch?: boolean } = {}): Promise<LocalRecord<T>> {
    return (await (
      await this.#local()
    )
      .update(id, data, options)
      .catch((error) => this.#failed(error))) as LocalRecord<T>;
  }

  async delete(id: string): Promise<void> {
    await (await this.#local()).delete(id).catch((error) => this.#failed(error));
  }

  async #files(): Promise<AttachmentsExtension> {
    const { files } = await this.#parts;
    if (!files)
      throw new AttachmentError(
        'QUIRE_ERR_ATTACHMENT_OFF',
        'Open the collection with the `attachments` option (@quire/client/attachments)',
      );
    return files;
  }

  /** Keeps a file with a record (offline: uploaded by the next sync). Needs the `attachments` option. */
  async attach(id: string, file: FileInput, options: AttachOptions = {}): Promise<LocalAttachment> {
    return (await this.#files()).attach(id, file, options).catch((error) => this.#failed(error));
  }

  /** Removes a record's file (offline: at the next sync). */
  async detach(id: string): Promise<void> {
    await (await this.#files()).detach(id);
  }

  /** The record's file: from this device when it has it, else downloaded (and cached, as the policy says). */
  async getAttachment(id: string, options: GetLocalAttachmentOptions = {}): Promise<Blob> {
    return (await this.#files()).get(id, options);
  }

  /** What the replica knows of the record's file, null when it has none. */
  async attachment(id: string): Promise<LocalAttachment | null> {
    return (await this.#files()).info(id);
  }

  /** Rethrows; a full storage is also announced (`quota` event) with what the browser says of its use. */
  #failed(error: unknown): never {
    if (error instanceof StoreError && error.code === 'QUIRE_ERR_STORE_QUOTA')
      void storageEstimate().then(({ usage, quota }) => this.emit('quota', { error, usage, quota }));
    throw error;
  }

  /** Records through an IndexedDB index: `{ index: 'done', equals: 1 }`, `{ index: 'due', between: [a, b] }`… */
  async list(query: ListQuery = {}): Promise<LocalRecord<T>[]> {
    return (await (await this.#local()).list(query)) as LocalRecord<T>[];
  }

  async count(query: ListQuery = {}): Promise<number> {
    return (await this.#local()).count(query);
  }

  /**
   * A live query (see LiveQuery): `list(query)` kept current — re-read when the collection changes,
   * in this tab or another. The same object for the same query. Or any read of the collection:
   * `live((c) => c.count({ index: 'done', equals: 0 }))` (a new object each call).
   */
  live(query?: ListQuery): LiveQuery<LocalRecord<T>[]>;
  live<R>(read: (collection: this) => Promise<R>): LiveQuery<R>;
  live<R>(query: ListQuery | ((collection: this) => Promise<R>) = {}): LiveQuery<R> | LiveQuery<LocalRecord<T>[]> {
    if (typeof query === 'function')
      return new LiveQuery(
        () => query(this),
        (onChange) => this.on('change', onChange),
      );
    return this.#cachedLive(`list:${JSON.stringify(query)}`, () => this.list(query));
  }

  /** One record, kept current (undefined while it does not exist). The same object for the same id. */
  liveRecord(id: string): LiveQuery<LocalRecord<T> | undefined> {
    // Re-read only when a change names it (or names nothing: a clear).
    return this.#cachedLive(
      `record:${id}`,
      () => this.get(id),
      (event) => event.changes.length === 0 || event.changes.some((change) => change.id === id),
    );
  }

  /** The conflicts waiting for the app, kept current. */
  liveConflicts(): LiveQuery<ConflictEntry[]> {
    return this.#cachedLive('conflicts', () => this.conflicts());
  }

  /** The number of local changes not yet accepted by the server, kept current. */
  livePending(): LiveQuery<number> {
    return this.#cachedLive('pending', () => this.pending());
  }

  #cachedLive<R>(
    key: string,
    read: () => Promise<R>,
    relevant: (event: ChangeEvent) => boolean = () => true,
  ): LiveQuery<R> {
    let live = this.#liveQueries.get(key) as LiveQuery<R> | undefined;
    if (!live) {
      live = new LiveQuery(read, (onChange) => this.on('change', (event) => relevant(event) && onChange()));
      this.#liveQueries.set(key, live);
    }
    return live;
  }

  /** `live(query)` as an Observable: emits the result now and whenever it changes (this tab or another). */
  watch(query: ListQuery = {}): ObservableLike<LocalRecord<T>[]> {
    return this.live(query).observable();
  }

  /** Local changes not yet accepted by the server. */
  async pending(): Promise<number> {
    return (await this.#local()).pendingCount();
  }

  /** Conflicts kept by the `manual` strategy, waiting for `resolve()`. */
  async conflicts(): Promise<ConflictEntry[]> {
    return (await this.#local()).conflicts();
  }

  /** Settles a manual conflict; the kept version is pushed at the next sync. */
  async resolve(id: string, resolution: ManualResolution): Promise<void> {
    const parts = await this.#parts;
    const conflict = (await parts.local.conflicts()).find((item) => item.id === id);
    if (!conflict) return;
    await parts.local.settleConflict(conflict, resolution);
    await parts.files?.settled(id, resolution);
    parts.channel.broadcast({ source: 'local', changes: [{ type: 'update', id }] });
  }

  /**
   * Synchronises with the server. Calls made while a sync runs share one follow-up sync, which
   * does what each of them asked (see mergeSyncOptions).
   * Throws only when the sync as a whole fails (network, timeout, backoff, server error);
   * per-record problems are in the result.
   */
  sync(options: SyncOptions & { strategy?: ConflictStrategy } = {}): Promise<SyncResult> {
    if (this.#inflight) {
      const previous = this.#inflight;
      this.#queuedOptions.push(options);
      this.#queued ??= previous
        .catch(() => {})
        .then(() => {
          const callers = this.#queuedOptions.splice(0);
          this.#queued = null;
          if (this.#inflight === previous) this.#inflight = null;
          return this.sync(mergeSyncOptions(callers));
        });
      return this.#queued;
    }
    const run = (async () => {
      const parts = await this.#parts;
      this.#status.update({ syncing: true, progress: null });
      try {
        const engineOptions = {
          ...options,
          onProgress: (progress: SyncProgress) => {
            options.onProgress?.(progress);
            this.#status.update({ progress });
            this.emit('progress', progress);
          },
        };
        let result = await parts.engine.sync(engineOptions);
        if (parts.files) result = await parts.files.afterSync(result, engineOptions);
        this.#status.update({
          syncing: false,
          progress: null,
          lastSyncAt: Date.now(),
          lastResult: result,
          error: null,
        });
        this.emit('sync', result);
        if (result.serverDeleted) this.emit('serverDeleted', result);
        return result;
      } catch (error) {
        this.#status.update({ syncing: false, progress: null, lastSyncAt: Date.now(), error: describeFailure(error) });
        this.emit('error', error);
        this.#failed(error);
      }
    })();
    this.#inflight = run;
    void run
      .catch(() => {})
      .finally(() => {
        if (this.#inflight === run) this.#inflight = null;
      });
    return run;
  }

  /**
   * Starts automatic sync: on reconnect, on an interval, after local writes (in any tab), and —
   * unless `live: false` — as soon as the server announces a change of this collection (live
   * changes). One tab auto-syncs a collection at a time (`status.autoSync` says which): the
   * others follow through the shared replica and take over when it stops or closes.
   * Resolves to how remote changes are learnt: `stream`, `poll` (the monitor) or `none` (the interval).
   */
  startAutoSync(options: AutoSyncOptions = {}): Promise<LiveMode> {
    void this.stopAutoSync();
    const generation = ++this.#autoSyncGeneration;
    return (async () => {
      const parts = await this.#parts;
      if (generation !== this.#autoSyncGeneration) return 'none';
      this.#status.update({ autoSync: 'follower' });
      // Auto-sync's code (scheduling, leadership, live changes) is loaded on first use. Offline,
      // nothing would be tried before the network is back: it starts then (the code may only come then).
      const started = loadWhenOnline(() => import('../sync/auto-sync.js'), parts.online).then(({ AutoSync }) =>
        generation === this.#autoSyncGeneration ? this.#autoSyncWith(AutoSync, parts, options, generation) : 'none',
      );
      if (!parts.online.isOnline()) {
        started.catch(() => {});
        return 'none';
      }
      return started;
    })().catch(() => 'none' as const);
  }

  #autoSyncWith(
    AutoSyncClass: typeof AutoSync,
    parts: CollectionParts,
    options: AutoSyncOptions,
    generation: number,
  ): Promise<LiveMode> {
    const autoSync = new AutoSyncClass(
      {
        bucket: this.bucket,
        collection: this.name,
        engine: parts.engine,
        leaderLock: parts.leaderLock,
        leaderName: `quire-autosync:${parts.dbName}`,
        online: parts.online,
        recovered: parts.recovered,
        ...(parts.live ? { live: parts.live } : {}),
        sync: () => this.sync(),
        settled: () => Promise.resolve(this.#inflight).then(noop, noop),
        leading: (leading) =>
          this.#status.update({
            autoSync: leading ? 'leader' : generation === this.#autoSyncGeneration ? 'follower' : null,
          }),
        remote: (entry) => this.emit('remote', { lastModified: entry.last_modified, receivedAt: Date.now() }),
      },
      options,
    );
    this.#autoSync = autoSync;
    return autoSync.start();
  }

  /**
   * Stops auto-sync in this tab; another tab that auto-syncs this collection takes over.
   * Resolves once the leadership is given up.
   */
  stopAutoSync(): Promise<void> {
    this.#autoSyncGeneration++;
    const autoSync = this.#autoSync;
    this.#autoSync = null;
    if (this.#status.snapshot.autoSync !== null) this.#status.update({ autoSync: null });
    return autoSync ? autoSync.stop() : Promise.resolve();
  }

  /**
   * Loads a dump (see `exportDump` and the `quire-dump` command) for an instant first start: into
   * an empty replica, in chunks, the last one with the sync state it stands for — the next sync
   * asks only for what changed since (a 304 when nothing did). Given a `fetch` response (or its
   * body), the chunks are stored as they download: queries see them at once. Into a replica that holds
   * something, only newer records without a pending change (the sync state stays). Records are
   * decoded by the collection's transformers (an encrypted collection's dump is ciphertext).
   */
  async loadDump(dump: DumpSource): Promise<{ loaded: number; skipped: number }> {
    const parts = await this.#parts;
    const { transform, channel } = parts;
    const read = await readDumpBatches(dump);
    async function* batches() {
      for await (const batch of read.batches) yield (transform ? await transform.decodeAll(batch) : batch).map(asLocal);
    }
    const { loaded, skipped } = await parts.engine
      .exclusive(() =>
        loadDump(parts.local.db, {
          batches: batches(),
          state: () => read.state(),
          downloading: read.downloading,
          // No list of ids (it can be long): anything may have changed (live queries read again).
          onStored: () => channel.broadcast({ source: 'sync', changes: [] }),
        }),
      )
      .catch((error) => this.#failed(asStoreFailure(error, 'loading a dump')));
    return { loaded, skipped };
  }

  /** Drops the local replica (records, pending changes, sync state). */
  async clear(): Promise<void> {
    const parts = await this.#parts;
    await parts.local.clear();
    // No list of ids: anything may have changed (live queries read again).
    parts.channel.broadcast({ source: 'local', changes: [] });
  }

  async close(): Promise<void> {
    await this.stopAutoSync();
    this.#onClose();
    await (await this.#parts).close();
  }
}
