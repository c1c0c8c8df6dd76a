/**
 * One session's data: the Quire client, the user's list registry, one collection per list, and
 * their automatic sync. It follows the registry: every list in it gets its collection tracked by
 * the status bar and (for accounts) auto-synced; a list leaving the registry stops syncing.
 * After each registry sync it looks for lists shared with the user, and drops lists whose share
 * was revoked (see shared-lists.ts).
 */
import { type Collection, createClient, type QuireClient, type SyncResult } from '@quire/client';
import { attachments } from '@quire/client/attachments';
import type { AppConfig } from './config.js';
import { describeError } from './errors.js';
import { newId } from './ids.js';
import { type Item, type ListEntry, type ListRecord, REGISTRY_COLLECTION } from './model.js';
import { authorizationOf, logIn, type Session } from './session.js';
import { checkShares } from './shared-lists.js';
import { SyncStatus } from './sync-status.js';

/**
 * Lists sync when the server announces a change of theirs (the change stream: another user's
 * edit shows up within a fraction of a second) and 300 ms after a local write; the interval is
 * only a safety net. The registry also polls every 3 s: that is when lists newly shared with the
 * user are looked for (they are not in the user's own bucket, so no entry announces them).
 */
const AUTO_SYNC = { intervalMs: 30_000, debounceMs: 300 } as const;
const REGISTRY_AUTO_SYNC = { intervalMs: 3_000, debounceMs: 300 } as const;
/** Small pages make a long first sync report its progress often. */
const ITEM_PAGE_SIZE = 500;
const FILES = attachments({ policy: 'lazy' });

export interface Notice {
  id: string;
  message: string;
}

interface TrackedList {
  entry: ListRecord;
  items: Collection<Item>;
  stop: () => void;
}

function isListEntry(record: ListRecord): boolean {
  return typeof record.bucket === 'string' && typeof record.collection === 'string' && typeof record.title === 'string';
}

export class Workspace {
  readonly session: Session;
  readonly client: QuireClient;
  readonly registry: Collection<ListEntry>;
  readonly status: SyncStatus;
  readonly #lists = new Map<string, TrackedList>();
  readonly #noticeListeners = new Set<(notice: Notice) => void>();
  #stopRegistry: () => void = () => {};
  #checking: Promise<void> | null = null;
  readonly #remote: string;
  /** Whether lists sync: an account whose password this tab knows (session.ts). */
  #syncing = false;
  readonly #lockListeners = new Set<() => void>();

  constructor(config: AppConfig, session: Session) {
    this.session = session;
    this.#remote = config.remote;
    const account = session.kind === 'account' ? session : null;
    // One set of IndexedDB databases per user and server (the bucket id differs between servers).
    const dbPrefix = account ? `quire-demo:${account.username}:${account.bucket}` : 'quire-demo:local';
    this.client = createClient({
      remote: config.remote,
      // Read at each request from session.ts's memory: no password in this object either.
      ...(account ? { auth: { type: 'header' as const, value: () => authorizationOf(account.username) ?? '' } } : {}),
      dbPrefix,
      newId,
    });
    // Registry conflicts (the same shared list added by two devices at once) are not worth asking about.
    this.registry = this.client
      .bucket('default')
      .collection<ListEntry>(REGISTRY_COLLECTION, { strategy: 'server-wins' });
    this.status = new SyncStatus(account ? 'account' : 'local', dbPrefix);
  }

  get isLocal(): boolean {
    return this.session.kind === 'local';
  }

  /** The user's personal bucket id (what `default` stands for on the server). */
  get myBucket(): string | null {
    return this.session.kind === 'account' ? this.session.bucket : null;
  }

  get username(): string | null {
    return this.session.kind === 'account' ? this.session.username : null;
  }

  /**
   * The collection holding a list's items (manual conflict resolution: the user chooses), with
   * files on tasks: downloaded when a task is shown, kept (up to 64 MB) for offline use.
   */
  items(entry: Pick<ListEntry, 'bucket' | 'collection'>): Collection<Item> {
    return this.client
      .bucket(entry.bucket)
      .collection<Item>(entry.collection, { strategy: 'manual', pageSize: ITEM_PAGE_SIZE, attachments: FILES });
  }

  start(): void {
    this.status.track(this.registry, () => 'your lists');
    const subscription = this.registry.watch().subscribe({
      next: (entries) => this.#followRegistry(entries.filter(isListEntry)),
      error: (error: unknown) =>
        this.notify(`Your lists cannot be read from this browser's storage: ${describeError(error)}`),
    });
    const stopChecks = this.registry.on('sync', () => void this.checkShares());
    this.#stopRegistry = () => {
      subscription.unsubscribe();
      stopChecks();
    };
    const account = this.session.kind === 'account' ? this.session : null;
    if (account && authorizationOf(account.username) !== null) this.#startSyncing();
  }

  /** True for an account whose password must be typed again (after a reload) before lists sync. */
  get locked(): boolean {
    return !this.isLocal && !this.#syncing;
  }

  onLockChange(listener: () => void): () => void {
    this.#lockListeners.add(listener);
    return () => this.#lockListeners.delete(listener);
  }

  /** Checks the password with the server (session.ts keeps it in memory), then starts syncing. */
  async unlock(password: string): Promise<void> {
    if (this.session.kind !== 'account') return;
    await logIn(this.#remote, this.session.username, password);
    this.#startSyncing();
  }

  #startSyncing(): void {
    if (this.#syncing) return;
    this.#syncing = true;
    void this.registry.startAutoSync(REGISTRY_AUTO_SYNC);
    this.status.followLive(this.client.live);
    for (const list of this.#lists.values()) void list.items.startAutoSync(AUTO_SYNC);
    for (const listener of this.#lockListeners) listener();
  }

  /** Syncs everything now (the "Sync now" button). Failures show through the status bar. */
  async syncNow(): Promise<void> {
    if (!this.#syncing) return;
    await Promise.allSettled([this.registry.sync(), ...[...this.#lists.values()].map((list) => list.items.sync())]);
    await this.checkShares();
  }

  /** Looks for lists shared with the user and for revoked shares (one at a time). */
  checkShares(): Promise<void> {
    if (!this.#syncing || !navigator.onLine) return Promise.resolve();
    // A failed check (a local write refused…) is simply made again after the next registry sync.
    this.#checking ??= checkShares(this)
      .catch((error: unknown) => console.warn('Checking shared lists failed:', error))
      .finally(() => (this.#checking = null));
    return this.#checking;
  }

  /** Stops syncing a list, forgets its local copy and removes it from the registry. */
  async dropList(entry: ListRecord, notice?: string): Promise<void> {
    const items = this.items(entry);
    items.stopAutoSync();
    await items.clear();
    if (await this.registry.get(entry.id)) await this.registry.delete(entry.id);
    if (notice) this.notify(notice);
  }

  notify(message: string): void {
    const notice = { id: newId(), message };
    for (const listener of this.#noticeListeners) listener(notice);
  }

  onNotice(listener: (notice: Notice) => void): () => void {
    this.#noticeListeners.add(listener);
    return () => this.#noticeListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#stopRegistry();
    for (const list of this.#lists.values()) list.stop();
    this.#lists.clear();
    this.status.close();
    this.#noticeListeners.clear();
    this.#lockListeners.clear();
    await this.client.close();
  }

  #followRegistry(entries: ListRecord[]): void {
    const present = new Set(entries.map((entry) => entry.id));
    for (const entry of entries) {
      const known = this.#lists.get(entry.id);
      if (known) {
        known.entry = entry;
        continue;
      }
      const items = this.items(entry);
      const tracked: TrackedList = { entry, items, stop: () => {} };
      this.status.track(items, () => `“${tracked.entry.title}”`);
      const stopListening = items.on('sync', (result) => this.#afterListSync(tracked, result));
      if (this.#syncing) void items.startAutoSync(AUTO_SYNC);
      tracked.stop = () => {
        stopListening();
        items.stopAutoSync();
        this.status.untrack(items);
      };
      this.#lists.set(entry.id, tracked);
    }
    for (const [id, list] of this.#lists) {
      if (present.has(id)) continue;
      list.stop();
      this.#lists.delete(id);
    }
  }

  /** A shared list refused with 403 may have been revoked: check now rather than at the next registry sync. */
  #afterListSync(list: TrackedList, result: SyncResult): void {
    if (list.entry.role !== 'owner' && result.errors.some((error) => error.status === 403)) void this.checkShares();
  }
}
