/**
 * createClient(): wires the layers — one HTTP transport, the direct remote API, and per
 * collection a local replica (its own IndexedDB database), a sync engine, the cross-tab lock and
 * change channel.
 */
import { Collection, type CollectionParts } from './api/collection.js';
import { createCollectionChannel } from './api/collection-channel.js';
import type { AttachmentsSetup } from './api/attachments-host.js';
import type { AttachmentEvent, ChangeEvent } from './api/events.js';
import type { SharedSyncStatus } from './api/sync-status.js';
import { type Dump, type ExportOptions, exportDump } from './dump/dump.js';
import { browserOnlineSource, type OnlineSource } from './online.js';
import { Remote } from './remote/remote.js';
import { type DexieEnvironment, openCollectionDb } from './store/db.js';
import { LocalCollection } from './store/local-collection.js';
import { readSyncState } from './store/meta.js';
import type { ConflictStrategy } from './sync/conflicts.js';
import { SyncEngine } from './sync/engine.js';
import type { LiveOptions } from './sync/live.js';
import type { SubsetFilters } from './sync/subset.js';
import { LiveChanges } from './sync/live-changes.js';
import { createLeaseLock, createWebLock, type LockManagerLike, webLockManager } from './tabs/locks.js';
import type { RemoteTransformer } from './transform/transformers.js';
import type { Auth } from './transport/auth.js';
import { type FetchLike, HttpTransport } from './transport/http.js';

export interface ClientOptions {
  /** Server root with its version prefix, e.g. `https://quire.example/v1`. */
  remote: string;
  auth?: Auth;
  /** Prefix of the IndexedDB database names (default `quire`); one database per collection. */
  dbPrefix?: string;
  /** Injected environment (Node tests: `fake-indexeddb`). Default: the global ones. */
  indexedDB?: IDBFactory;
  IDBKeyRange?: typeof IDBKeyRange;
  fetch?: FetchLike;
  timeoutMs?: number;
  retries?: number;
  maxRetryAfterMs?: number;
  headers?: Record<string, string>;
  /** Cross-tab lock: the Web Locks API when present, else an IndexedDB lease. `null` forces the lease. */
  lockManager?: LockManagerLike | null;
  /** Id generator for records and internal tokens (default `crypto.randomUUID`). */
  newId?: () => string;
  /** Live changes (the change monitor, pushed or polled) used by auto-sync. */
  live?: LiveOptions;
  /**
   * Whether the device is online (default: `navigator.onLine` and its events; always online in
   * Node). Nothing is retried or tried in the background while offline.
   */
  online?: OnlineSource;
}

export interface CollectionOptions {
  /** Dexie index declarations for local queries, e.g. `['done', 'due', '[done+due]']`. */
  indexes?: string[];
  /** Default conflict strategy (default `manual`). */
  strategy?: ConflictStrategy;
  /** Records per page while pulling (default 2000; the server may cap it). */
  pageSize?: number;
  /**
   * Detect records that lost read permission (default true): one `HEAD` after a sync that changed
   * something, and every `intervalMs` (default 10 min) when polls find nothing new; false: never.
   */
  checkReadable?: boolean | { intervalMs?: number };
  /**
   * Remote transformers: what records become on the server and back (encode in order, decode in
   * reverse), e.g. `[encryptionTransformer({ passphrase })]` for an end-to-end encrypted collection.
   */
  transformers?: RemoteTransformer[];
  /**
   * Files on records, offline: `attachments({ policy })` from `@quire/client/attachments` (kept out
   * of the core bundle). Enables `collection.attach`, `detach` and `getAttachment`.
   */
  attachments?: AttachmentsSetup;
  /**
   * A partial replica: keep only the records matching these filters (the protocol's list filters,
   * `{ done: false, min_priority: 3 }`); `sync({ filters })` changes them. See "Partial replicas".
   */
  filters?: SubsetFilters;
}

export class Bucket {
  readonly #client: QuireClient;
  readonly name: string;

  constructor(client: QuireClient, name: string) {
    this.#client = client;
    this.name = name;
  }

  collection<T extends object = Record<string, unknown>>(name: string, options: CollectionOptions = {}): Collection<T> {
    return this.#client.collection<T>(this.name, name, options);
  }
}

export class QuireClient {
  readonly remote: Remote;
  /** One change-monitor connection for every auto-synced collection (`status`, `onStatus`, `onEntry`). */
  readonly live: LiveChanges;
  readonly http: HttpTransport;
  readonly online: OnlineSource;
  readonly #options: ClientOptions;
  readonly #collections = new Map<string, Collection<never>>();
  readonly #tabId: string;
  readonly #newId: () => string;

  constructor(options: ClientOptions) {
    this.#options = options;
    this.#newId = options.newId ?? (() => globalThis.crypto.randomUUID());
    this.#tabId = this.#newId();
    this.online = options.online ?? browserOnlineSource();
    this.http = new HttpTransport({
      online: this.online,
      remote: options.remote,
      ...(options.auth ? { auth: options.auth } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.retries !== undefined ? { retries: options.retries } : {}),
      ...(options.maxRetryAfterMs !== undefined ? { maxRetryAfterMs: options.maxRetryAfterMs } : {}),
      ...(options.headers ? { headers: options.headers } : {}),
    });
    this.remote = new Remote(this.http);
    const manager = options.lockManager === undefined ? webLockManager() : options.lockManager;
    this.live = new LiveChanges({
      http: this.http,
      remote: this.remote,
      key: liveKey(this.http.remote, options.auth),
      locks: manager,
      online: this.online,
      tabId: this.#tabId,
      options: options.live,
    });
  }

  bucket(name: string): Bucket {
    return new Bucket(this, name);
  }

  /**
   * The same `Collection` object for the same bucket/collection (options of the first call win),
   * until it is closed: the next call opens a new one.
   */
  collection<T extends object = Record<string, unknown>>(
    bucket: string,
    name: string,
    options: CollectionOptions = {},
  ): Collection<T> {
    const key = `${bucket}/${name}`;
    const existing = this.#collections.get(key);
    if (existing) return existing as unknown as Collection<T>;
    let collection!: Collection<T>;
    const parts = this.#open(bucket, name, options, {
      emit: (event) => collection.emit('change', event),
      status: (status) => collection.receiveStatus(status),
      attachment: (event) => collection.emit('attachment', event),
    });
    collection = new Collection<T>(bucket, name, parts, () => {
      if (this.#collections.get(key) === (collection as unknown as Collection<never>)) this.#collections.delete(key);
    });
    parts.catch(() => {});
    this.#collections.set(key, collection as unknown as Collection<never>);
    return collection;
  }

  async #open(
    bucket: string,
    name: string,
    options: CollectionOptions,
    handlers: {
      emit: (event: ChangeEvent) => void;
      status: (status: SharedSyncStatus) => void;
      attachment: (event: AttachmentEvent) => void;
    },
  ): Promise<CollectionParts> {
    const dbName = `${this.#options.dbPrefix ?? 'quire'}:${bucket}/${name}`;
    const env: DexieEnvironment | undefined =
      this.#options.indexedDB && this.#options.IDBKeyRange
        ? { indexedDB: this.#options.indexedDB, IDBKeyRange: this.#options.IDBKeyRange }
        : undefined;
    const db = await openCollectionDb(dbName, options.indexes ?? [], env);
    const channel = createCollectionChannel(dbName, this.#tabId, { emit: handlers.emit, status: handlers.status });
    const local = new LocalCollection(db, this.#newId, (changes) => channel.broadcast({ source: 'local', changes }));
    const manager = this.#options.lockManager === undefined ? webLockManager() : this.#options.lockManager;
    const lock = manager ? createWebLock(manager) : createLeaseLock({ table: db.$locks, owner: this.#tabId });
    // Without Web Locks, tabs waiting to auto-sync look at the lease every 2 s at most.
    const leaderLock = manager ? lock : createLeaseLock({ table: db.$locks, owner: this.#tabId, maxPollMs: 2_000 });
    // Loaded by the collections that have transformers only (an app with a service worker has it offline).
    const transform = options.transformers?.length
      ? new (await import('./transform/transformers.js')).TransformChain(options.transformers, {
          bucket,
          collection: name,
        })
      : null;
    const engine = new SyncEngine({
      http: this.http,
      local,
      bucket,
      collection: name,
      pageSize: options.pageSize ?? 2000,
      strategy: options.strategy ?? 'manual',
      lock,
      lockName: `quire-sync:${dbName}`,
      batchSize: async () => (await this.remote.serverInfo()).settings.batch_max_requests ?? null,
      checkReadable: readablePolicy(options.checkReadable),
      onChanges: (changes) => channel.broadcast({ source: 'sync', changes }),
      ...(transform ? { transform } : {}),
      ...(options.filters ? { filters: options.filters } : {}),
      partialReplicas: async () => (await this.remote.serverInfo()).capabilities.partial_replicas !== undefined,
    });
    const files = options.attachments?.({
      bucket,
      collection: name,
      dbName,
      env,
      local,
      engine,
      remote: this.remote,
      online: this.online,
      emit: handlers.attachment,
    });
    return {
      local,
      engine,
      ...(files ? { files } : {}),
      channel,
      live: this.live,
      online: this.online,
      recovered: (listener) => this.http.onRecovered(listener),
      leaderLock,
      dbName,
      lastSyncAt: (await readSyncState(db)).lastSyncAt,
      transform,
      close: async () => {
        files?.close();
        channel.close();
        // Leases held (a sync under way, the auto-sync leadership) go before the database does.
        await Promise.all([lock.release?.(), leaderLock.release?.()]);
        db.close();
      },
    };
  }

  /** Every record of a collection as a dump (see `Collection.loadDump`), read consistently from the server. */
  exportDump(bucket: string, collection: string, options?: ExportOptions): Promise<Dump> {
    return exportDump(this.http, bucket, collection, options);
  }

  /** Stops auto-sync, closes every local database and the connection pool. */
  async close(): Promise<void> {
    await Promise.all([...this.#collections.values()].map((collection) => collection.close().catch(() => {})));
    this.#collections.clear();
    this.live.close();
    await this.http.close();
  }
}

const READABLE_CHECK_INTERVAL_MS = 10 * 60_000;

function readablePolicy(option: CollectionOptions['checkReadable']): { intervalMs: number } | null {
  if (option === false) return null;
  return { intervalMs: (typeof option === 'object' ? option.intervalMs : undefined) ?? READABLE_CHECK_INTERVAL_MS };
}

/** Names the connection tabs share: the server and who the user is (never the secret itself). */
function liveKey(remote: string, auth: Auth | undefined): string {
  if (!auth) return remote;
  if (auth.type === 'basic') return `${remote} basic:${auth.username}`;
  const secret = auth.type === 'bearer' ? auth.token : typeof auth.value === 'string' ? auth.value : 'dynamic';
  let hash = 0;
  for (let i = 0; i < secret.length; i++) hash = (Math.imul(hash, 31) + secret.charCodeAt(i)) | 0;
  return `${remote} ${auth.type}:${(hash >>> 0).toString(36)}`;
}

export function createClient(options: ClientOptions): QuireClient {
  return new QuireClient(options);
}
