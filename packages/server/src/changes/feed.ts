/**
 * The live side of the change monitor: which collections' records changed, told to the open
 * event streams of every process.
 *
 * - In this process, the event bus gives every committed record change (after commit); the
 *   feed gathers them for `changes_stream_coalesce_ms` — a burst of 1,000 writes to a collection
 *   is one entry, carrying its last timestamp — then offers each stream the newest entry of
 *   each changed collection it may read.
 * - Across processes (PostgreSQL), the same flush is one NOTIFY on channel `quire_changes`
 *   (`{"o": origin, "e": [[bucket, collection, timestamp]…], "g": 1 when groups changed}`; when
 *   that would not fit PostgreSQL's 8,000-byte payload, `{"o", "r": 1}`: "re-read everything").
 *   Every process LISTENs and offers those entries to its own streams.
 * - Nothing is lost with a notification: each stream remembers the last timestamp it sent per
 *   collection, and when the channel comes back after a drop (or on `r`) the feed re-reads every
 *   collection's timestamp and offers what is newer; a client that reconnects gives its last
 *   event id (`Last-Event-ID`), which reads like `_since`.
 *
 * Permissions are checked when an entry is offered, from the ACLs as they are then (the
 * storage's read cache, invalidated at commit in every process), so a revoked reader stops
 * getting entries at once; a stream's group principals are read again when groups change.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Settings } from '../config.js';
import type { EventBus } from '../events/bus.js';
import type { ResourceEvent } from '../events/types.js';
import type { Permissions, Storage } from '../storage/types.js';
import { collectionUri, makeEntry, mayRead, readCollections, type ChangeEntry, type MonitoredResources } from './entries.js';

export const CHANGES_CHANNEL = 'quire_changes';
const MAX_PAYLOAD = 7_000;

/** What the feed needs of an open stream (stream.ts). */
export interface FeedStream {
  readonly userKey: string;
  /** Offers an entry; the stream decides (permissions, filters, what it already sent). */
  offer(entry: ChangeEntry, bucketAcl: Permissions | undefined, collectionAcl: Permissions | undefined): void;
  heartbeat(): void;
  refreshPrincipals(): Promise<void>;
  close(): void;
}

type Change = [bucket: string, collection: string, timestamp: number];

export class ChangeFeed {
  readonly #settings: Settings;
  readonly #storage: Storage;
  readonly #resources: MonitoredResources | null;
  readonly #host: string;
  readonly #log: () => FastifyBaseLogger | undefined;
  readonly #origin = randomUUID();
  readonly #streams = new Set<FeedStream>();
  readonly #perUser = new Map<string, number>();
  /** Changes of this process waiting for the flush, newest timestamp per collection. */
  #pending = new Map<string, Change>();
  #groupsChanged = false;
  #flushTimer: NodeJS.Timeout | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  /** Offers run one after the other, so that a stream sees each collection's entries in order. */
  #queue: Promise<void> = Promise.resolve();
  #channelDown = false;
  #closed = false;

  constructor(settings: Settings, storage: Storage, resources: MonitoredResources | null, log: () => FastifyBaseLogger | undefined) {
    this.#settings = settings;
    this.#storage = storage;
    this.#resources = resources;
    this.#host = settings.http_host ?? '';
    this.#log = log;
  }

  get host(): string {
    return this.#host;
  }

  get resources(): MonitoredResources | null {
    return this.#resources;
  }

  get streamCount(): number {
    return this.#streams.size;
  }

  /** Subscribes to the bus and, where processes share the store, to the channel. */
  start(events: EventBus): void {
    events.subscribe({
      name: 'changes',
      actions: new Set(['create', 'update', 'delete']),
      resources: new Set(['record', 'group']),
      afterCommit: (committed) => this.#committed(committed),
    });
    this.#storage.channels?.listen(CHANGES_CHANNEL, {
      message: (payload) => this.#received(payload),
      connected: () => {
        if (this.#channelDown) this.#enqueue(() => this.#resync());
        this.#channelDown = false;
      },
      disconnected: () => {
        this.#channelDown = true;
      },
    });
  }

  /** Room for one more stream of this user? (`changes_stream_max_*`) */
  admits(userKey: string): 'ok' | 'process' | 'user' {
    if (this.#streams.size >= this.#settings.changes_stream_max_per_process) return 'process';
    if ((this.#perUser.get(userKey) ?? 0) >= this.#settings.changes_stream_max_per_user) return 'user';
    return 'ok';
  }

  add(stream: FeedStream): void {
    this.#streams.add(stream);
    this.#perUser.set(stream.userKey, (this.#perUser.get(stream.userKey) ?? 0) + 1);
    if (!this.#heartbeat) {
      this.#heartbeat = setInterval(() => {
        for (const open of this.#streams) open.heartbeat();
      }, this.#settings.changes_stream_heartbeat_seconds * 1000);
      this.#heartbeat.unref();
    }
  }

  remove(stream: FeedStream): void {
    if (!this.#streams.delete(stream)) return;
    const count = (this.#perUser.get(stream.userKey) ?? 1) - 1;
    if (count > 0) this.#perUser.set(stream.userKey, count);
    else this.#perUser.delete(stream.userKey);
    if (this.#streams.size === 0 && this.#heartbeat) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = null;
    }
  }

  #committed(events: ResourceEvent[]): void {
    for (const { payload, impactedObjects } of events) {
      if (payload.resource_name === 'group') {
        this.#groupsChanged = true;
        continue;
      }
      const bucket = payload.bucket_id;
      const collection = payload.collection_id;
      if (typeof bucket !== 'string' || typeof collection !== 'string') continue;
      // The bus keeps the first payload of a batch's grouped changes: the newest object tells the collection's timestamp.
      let timestamp = Number.isFinite(payload.timestamp) ? payload.timestamp : 0;
      for (const impacted of impactedObjects) timestamp = Math.max(timestamp, impacted.new.last_modified);
      if (timestamp === 0) continue;
      const uri = collectionUri(bucket, collection);
      const previous = this.#pending.get(uri);
      if (!previous || previous[2] < timestamp) this.#pending.set(uri, [bucket, collection, timestamp]);
    }
    if (this.#flushTimer === null && (this.#pending.size > 0 || this.#groupsChanged)) {
      // Many streams: gather longer (1 ms per 20 streams), so that a busy collection read by
      // thousands costs a bounded number of fan-outs per second rather than one per write.
      this.#flushTimer = setTimeout(() => this.#flush(), this.#settings.changes_stream_coalesce_ms + Math.floor(this.#streams.size / 20));
    }
  }

  #flush(): void {
    this.#flushTimer = null;
    const changes = [...this.#pending.values()];
    const groups = this.#groupsChanged;
    this.#pending = new Map();
    this.#groupsChanged = false;
    if (this.#storage.channels) {
      let payload = JSON.stringify({ o: this.#origin, e: changes, ...(groups ? { g: 1 } : {}) });
      if (Buffer.byteLength(payload) > MAX_PAYLOAD) payload = JSON.stringify({ o: this.#origin, r: 1, ...(groups ? { g: 1 } : {}) });
      this.#storage.channels.notify(CHANGES_CHANNEL, payload).catch((error: unknown) => {
        // The other processes' streams catch up when their channel reconnects, or their clients do.
        this.#log()?.warn({ err: error }, 'changes: NOTIFY failed');
      });
    }
    this.#enqueue(async () => {
      if (groups) await this.#refreshPrincipals();
      await this.#offer(changes);
    });
  }

  #received(text: string): void {
    let message: { o?: string; e?: Change[]; r?: number; g?: number };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (message.o === this.#origin) return; // ours, offered at the flush already
    this.#enqueue(async () => {
      if (message.g) await this.#refreshPrincipals();
      if (message.r) await this.#resync();
      else if (Array.isArray(message.e)) await this.#offer(message.e);
    });
  }

  #enqueue(task: () => Promise<void>): void {
    this.#queue = this.#queue.then(async () => {
      if (this.#closed || this.#streams.size === 0) return;
      try {
        await task();
      } catch (error) {
        this.#log()?.warn({ err: error }, 'changes: could not offer entries to the streams');
      }
    });
  }

  async #refreshPrincipals(): Promise<void> {
    await Promise.all([...this.#streams].map((stream) => stream.refreshPrincipals()));
  }

  /** Offers each stream the entries of `changes`, with the ACLs they have now. */
  async #offer(changes: Change[]): Promise<void> {
    const monitored = changes.filter(([bucket, collection]) => this.#isMonitored(bucket, collection));
    if (monitored.length === 0 || this.#streams.size === 0) return;
    const uris = new Set<string>();
    for (const [bucket, collection] of monitored) uris.add(`/buckets/${bucket}`).add(collectionUri(bucket, collection));
    const acls = this.#resources === null ? await this.#storage.read((session) => session.permissions.get([...uris])) : new Map<string, Permissions>();
    for (const [bucket, collection, timestamp] of monitored) {
      const entry = makeEntry(this.#host, bucket, collection, timestamp);
      const bucketAcl = acls.get(`/buckets/${bucket}`);
      const collectionAcl = acls.get(collectionUri(bucket, collection));
      for (const stream of this.#streams) stream.offer(entry, bucketAcl, collectionAcl);
    }
  }

  /** Re-reads every collection's timestamp and offers each stream what it has not seen. */
  async #resync(): Promise<void> {
    const collections = await this.#storage.read((session) => readCollections(session, this.#host, this.#resources));
    for (const { entry, bucketAcl, collectionAcl } of collections) {
      for (const stream of this.#streams) stream.offer(entry, bucketAcl, collectionAcl);
    }
  }

  #isMonitored(bucket: string, collection: string): boolean {
    const resources = this.#resources;
    return resources === null || resources.buckets.has(bucket) || resources.collections.has(collectionUri(bucket, collection));
  }

  /** Whether these principals may see entries of that collection (no `changes_resources`: their ACLs). */
  visible(principals: string[], bucketAcl: Permissions | undefined, collectionAcl: Permissions | undefined): boolean {
    return this.#resources !== null || mayRead(this.#settings, principals, bucketAcl, collectionAcl);
  }

  /** Ends every open stream, the feed staying up (tests; clients reconnect with their last id). */
  dropStreams(): void {
    for (const stream of [...this.#streams]) stream.close();
  }

  /** Ends every stream (server shutdown: the clients reconnect elsewhere). */
  close(): void {
    this.#closed = true;
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    for (const stream of [...this.#streams]) stream.close();
  }
}
