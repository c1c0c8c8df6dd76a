/**
 * The live side of the change monitor: which collections' records changed, told to the open
 * event streams of every process, and what changes the rights of an open stream.
 *
 * - In this process, the event bus gives every committed change (after commit); the feed gathers
 *   them for `changes_stream_coalesce_ms` — a burst of 1,000 writes to a collection is one
 *   entry, carrying its last timestamp — then offers each stream the newest entry of each changed
 *   collection. Each stream checks its principals and filters, and writes at its client's pace
 *   (stream.ts).
 * - Across processes (PostgreSQL), the same flush is one NOTIFY on channel `quire_changes`:
 *   `{"o": origin, "e": [[bucket, collection, timestamp]…], "d": [[bucket, collection,
 *   timestamp, readers]…], "g": principals whose groups changed (or 1: everyone's), "a": deleted
 *   user ids, "b": deleted buckets}`; when that would not fit PostgreSQL's 8,000-byte payload,
 *   `{"o", "r": oldest timestamp, "g": 1, "a"…}`: "re-read what changed since". Every process
 *   LISTENs and applies it to its own streams. On a hot standby, where NOTIFY does not come,
 *   the feed follows the replicated log of changed scopes instead (feed-log.ts).
 * - Nothing is lost with a notification: when the channel comes back after a drop (or on `r`)
 *   the feed reads what changed since (timestamps index: the cost of what changed), and a client
 *   that reconnects gives its last event id (`Last-Event-ID`), which reads like `_since`.
 * - Entries offered are never older than one offered before for that collection (`#latest`, a
 *   bounded map): a late notification of an old change is dropped once for every stream.
 *
 * Rights, within a notification's delivery (well under a second):
 * - permissions are checked when an entry is offered, from the ACLs as they are then (the read
 *   cache, invalidated at commit in every process): a revoked reader stops getting entries;
 * - a group's members changed: the streams of those members (or of everyone, when the group
 *   lists `system.Authenticated` / `system.Everyone`) read their groups again, and a stream that
 *   gained one reads what changed in the last minute (its catch-up): an entry offered before this
 *   process heard of the grant — another process announced its write sooner than the grant,
 *   which waits for its coalescing, or a re-read after a reconnection came first — was refused
 *   with the old groups, and the feed offers each entry once;
 * - the channel back after a drop: every stream reads its groups again before what changed meanwhile;
 * - a bucket deleted: its groups leave every stream's principals, so that a bucket re-created
 *   with that name gives nothing to the members of the old one's groups;
 * - an account deleted: its streams end.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { AUTHENTICATED, EVERYONE } from '../auth/policy.js';
import type { ChangesSettings } from './settings.js';
import type { EventBus } from '../events/bus.js';
import type { ResourceEvent } from '../events/types.js';
import type { Permissions, ScopeLog, Storage } from '../storage/types.js';
import { accountUserId } from '../accounts/ids.js';
import { collectionUri, type ChangeEntry } from './entries.js';
import { type Deletion, deletionAcl, recordDeletions } from './deletions.js';
import { endDeletedAccounts, readScopes } from './feed-log.js';
import {
  addGroupChange,
  type Batch,
  type Change,
  emptyBatch,
  isEmpty,
  type Message,
  newestPerCollection,
} from './feed-batch.js';
import type { MonitorReads } from './reads.js';
import { type StreamHolder, type StreamRefusal, StreamSlots } from './stream-caps.js';

export const CHANGES_CHANNEL = 'quire_changes';
const MAX_PAYLOAD = 7_000;
/** Principals listed in a notification before it says "every stream" instead. */
const MAX_PRINCIPALS = 100;
/** Collections whose newest offered timestamp is remembered (the oldest forgotten first). */
const LATEST_SIZE = 50_000;
/** How far back a re-read goes before the moment it is for: clocks of processes and database may differ. */
const CLOCK_MARGIN_MS = 60_000;

/** What the feed needs of an open stream (stream.ts). */
export interface FeedStream {
  /** Whom its caps count it against (stream-caps.ts). */
  readonly holder: StreamHolder;
  readonly userId: string | null;
  principals: readonly string[];
  /** Offers an entry; the stream decides (permissions, filters, what it already sent). */
  offer(entry: ChangeEntry, bucketAcl: Permissions | undefined, collectionAcl: Permissions | undefined): void;
  /** Reads again, from the store, what changed after `since` that it may see now. */
  catchUp(since: number): void;
  heartbeat(): void;
  close(): void;
}

export class ChangeFeed {
  readonly #settings: ChangesSettings;
  readonly #storage: Storage;
  readonly reads: MonitorReads;
  readonly #log: () => FastifyBaseLogger | undefined;
  readonly #origin = randomUUID();
  readonly #streams = new Set<FeedStream>();
  readonly #slots: StreamSlots<FeedStream>;
  /** The newest timestamp offered per collection URI (and whether it was a deletion). */
  readonly #latest = new Map<string, number>();
  #pending: Batch = emptyBatch();
  #flushTimer: NodeJS.Timeout | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  /** Offers run one after the other, so that a stream sees each collection's entries in order. */
  #queue: Promise<void> = Promise.resolve();
  /** Deletion entries stored by a request, until it commits. */
  readonly #deletions = new WeakMap<ResourceEvent, Deletion[]>();
  #channelDownSince: number | null = null;
  /** Since when streams have been open without a pause (a re-read needs go no further back). */
  #busySince = 0;
  #closed = false;

  constructor(
    settings: ChangesSettings,
    storage: Storage,
    reads: MonitorReads,
    log: () => FastifyBaseLogger | undefined,
  ) {
    this.#settings = settings;
    this.#storage = storage;
    this.reads = reads;
    this.#log = log;
    this.#slots = new StreamSlots(settings);
  }

  get log(): FastifyBaseLogger | undefined {
    return this.#log();
  }

  get streamCount(): number {
    return this.#streams.size;
  }

  /** Subscribes to the bus and, where processes share the store, to the channel. */
  start(events: EventBus): void {
    // In the transaction, for collections and buckets only (other writes stay stamped at commit):
    // a new collection's records timestamp, deleted collections' entries.
    events.subscribe({
      name: 'changes-collections',
      actions: new Set(['create', 'delete']),
      resources: new Set(['collection', 'bucket']),
      inTransaction: async (batch, session) => {
        const deletions = await recordDeletions(session, batch, this.reads.factory);
        if (deletions.length > 0) this.#deletions.set(batch[0]!, deletions);
      },
    });
    events.subscribe({
      name: 'changes',
      actions: new Set(['create', 'update', 'delete']),
      resources: new Set(['record', 'group', 'collection', 'bucket', 'account']),
      afterCommit: (committed) => this.#committed(committed),
    });
    if (this.#storage.scopeLog) this.#follow(this.#storage.scopeLog);
    else
      this.#storage.channels?.listen(CHANGES_CHANNEL, {
        message: (payload) => this.#received(payload),
        connected: () => {
          const since = this.#channelDownSince;
          this.#channelDownSince = null;
          // What the other processes said while we could not hear: rights first (a group change
          // may be among it), then what changed (clocks: a minute's margin).
          if (since !== null) {
            this.#enqueue(async () => {
              await this.#refreshGroups('all');
              await this.#resync(since - CLOCK_MARGIN_MS);
            });
          }
        },
        disconnected: () => {
          this.#channelDownSince ??= Date.now();
        },
      });
  }

  /** On a hot standby: what the replicated log says changed, read as a notification (feed-log.ts). */
  #follow(log: ScopeLog): void {
    let readAt = Date.now();
    log.watch({
      changed: (scopes) => {
        readAt = Date.now();
        const { collections, containers, groups, accounts } = readScopes(scopes);
        this.#enqueue(async () => {
          if (accounts) await endDeletedAccounts(this.#storage, this.#streams);
          if (groups) await this.#refreshGroups('all');
          if (containers) await this.#resync(Date.now() - CLOCK_MARGIN_MS);
          else if (collections.length > 0) {
            const latest = await this.#storage.read((session) => this.reads.latest(session, collections));
            await this.#offerEntries(latest.filter((entry) => this.#isNewer(entry)));
          }
        });
      },
      wanted: () => this.#streams.size > 0,
      restarted: () => {
        const since = Math.max(readAt, this.#busySince) - CLOCK_MARGIN_MS;
        readAt = Date.now();
        this.#enqueue(async () => {
          await this.#refreshGroups('all');
          await this.#resync(since);
        });
      },
    });
  }

  /**
   * Makes room for one more stream of `holder` (`changes_stream_max_*`): closes the heaviest
   * holder's oldest stream when that is this one's fair share (stream-caps.ts); null when it may open.
   */
  admit(holder: StreamHolder): StreamRefusal | null {
    const admission = this.#slots.admit(holder);
    if ('refused' in admission) return admission.refused;
    admission.victim?.close();
    return null;
  }

  add(stream: FeedStream): void {
    if (this.#streams.size === 0) this.#busySince = Date.now();
    this.#streams.add(stream);
    this.#slots.add(stream);
    if (!this.#heartbeat) {
      this.#heartbeat = setInterval(() => {
        for (const open of this.#streams) open.heartbeat();
      }, this.#settings.changes_stream_heartbeat_seconds * 1000);
      this.#heartbeat.unref();
    }
  }

  remove(stream: FeedStream): void {
    if (!this.#streams.delete(stream)) return;
    this.#slots.remove(stream);
    if (this.#streams.size === 0 && this.#heartbeat) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = null;
    }
  }

  #committed(events: ResourceEvent[]): void {
    const batch = this.#pending;
    const deletions = events.length > 0 ? this.#deletions.get(events[0]!) : undefined;
    for (const { entry, readers } of deletions ?? [])
      batch.deletions.push([entry.bucket, entry.collection, entry.last_modified, readers]);
    for (const { payload, impactedObjects } of events) {
      const { resource_name: resource, action } = payload;
      if (resource === 'group') {
        addGroupChange(batch, impactedObjects);
      } else if (resource === 'account') {
        if (action === 'delete')
          for (const { new: object } of impactedObjects) batch.accounts.push(accountUserId(String(object.id)));
      } else if (resource === 'bucket') {
        if (action === 'delete') for (const { new: object } of impactedObjects) batch.buckets.push(String(object.id));
      } else if (resource === 'record') {
        const bucket = payload.bucket_id;
        const collection = payload.collection_id;
        if (typeof bucket !== 'string' || typeof collection !== 'string') continue;
        // The bus keeps the first payload of a batch's grouped changes: the newest object tells the
        // collection's timestamp.
        let timestamp = Number.isFinite(payload.timestamp) ? payload.timestamp : 0;
        for (const impacted of impactedObjects) timestamp = Math.max(timestamp, impacted.new.last_modified);
        if (timestamp > 0) batch.changes.push([bucket, collection, timestamp]);
      }
    }
    if (this.#flushTimer === null && !isEmpty(batch)) {
      // Many streams: gather longer (1 ms per 20 streams), so that a busy collection read by
      // thousands costs a bounded number of fan-outs per second rather than one per write.
      this.#flushTimer = setTimeout(
        () => this.#flush(),
        this.#settings.changes_stream_coalesce_ms + Math.floor(this.#streams.size / 20),
      );
    }
  }

  #flush(): void {
    this.#flushTimer = null;
    const batch = this.#pending;
    this.#pending = emptyBatch();
    batch.changes = newestPerCollection(batch.changes);
    if (this.#storage.channels) {
      this.#storage.channels.notify(CHANGES_CHANNEL, this.#encode(batch)).catch((error: unknown) => {
        // The other processes' streams catch up when their channel reconnects, or their clients do.
        this.#log()?.warn({ err: error }, 'changes: NOTIFY failed');
      });
    }
    this.#enqueue(() => this.#apply(batch, null));
  }

  #encode(batch: Batch): string {
    const rights: Message = {
      ...(batch.groups
        ? { g: batch.groups === 'all' || batch.groups.size > MAX_PRINCIPALS ? 1 : [...batch.groups] }
        : {}),
      ...(batch.accounts.length ? { a: batch.accounts } : {}),
      ...(batch.buckets.length ? { b: batch.buckets } : {}),
    };
    const full = JSON.stringify({
      o: this.#origin,
      e: batch.changes,
      ...(batch.deletions.length ? { d: batch.deletions } : {}),
      ...rights,
    });
    if (Buffer.byteLength(full) <= MAX_PAYLOAD) return full;
    let oldest = Number.POSITIVE_INFINITY;
    for (const [, , timestamp] of [...batch.changes, ...batch.deletions]) oldest = Math.min(oldest, timestamp);
    const short = JSON.stringify({
      o: this.#origin,
      r: Number.isFinite(oldest) ? oldest - 1 : 0,
      ...rights,
      ...(rights.g ? { g: 1 } : {}),
    });
    // Too many accounts or buckets to name: every stream re-reads its groups (deleted accounts'
    // streams stay until their next check).
    return Buffer.byteLength(short) <= MAX_PAYLOAD
      ? short
      : JSON.stringify({ o: this.#origin, r: Number.isFinite(oldest) ? oldest - 1 : 0, g: 1 });
  }

  #received(text: string): void {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (message.o === this.#origin) return; // ours, applied at the flush already
    const batch: Batch = {
      changes: Array.isArray(message.e) ? message.e : [],
      deletions: Array.isArray(message.d) ? message.d : [],
      groups: message.g === 1 ? 'all' : Array.isArray(message.g) ? new Set(message.g) : null,
      accounts: Array.isArray(message.a) ? message.a : [],
      buckets: Array.isArray(message.b) ? message.b : [],
    };
    this.#enqueue(() => this.#apply(batch, typeof message.r === 'number' ? message.r : null));
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

  /**
   * Deleted accounts' streams end; deletions are offered; then rights change (buckets' groups,
   * groups); then the entries.
   */
  async #apply(batch: Batch, resyncSince: number | null): Promise<void> {
    if (batch.accounts.length > 0) {
      const gone = new Set(batch.accounts);
      for (const stream of [...this.#streams]) if (stream.userId !== null && gone.has(stream.userId)) stream.close();
    }
    // Deletions first: those who could read the collection until now, a deleted bucket's groups included.
    for (const [bucket, collection, timestamp, readers] of batch.deletions) {
      const entry = { ...this.reads.entry(bucket, collection, timestamp), deleted: true as const };
      if (this.#isNewer(entry))
        for (const stream of this.#streams) stream.offer(entry, deletionAcl(readers), undefined);
    }
    if (batch.buckets.length > 0) {
      const prefixes = batch.buckets.map((bucket) => `/buckets/${bucket}/groups/`);
      for (const stream of this.#streams) {
        if (stream.principals.some((principal) => prefixes.some((prefix) => principal.startsWith(prefix)))) {
          stream.principals = stream.principals.filter(
            (principal) => !prefixes.some((prefix) => principal.startsWith(prefix)),
          );
        }
      }
    }
    if (batch.groups) await this.#refreshGroups(batch.groups);
    if (resyncSince !== null) await this.#resync(resyncSince);
    else await this.#offer(batch.changes);
  }

  /** The streams holding one of `principals` (all: every stream) read their groups again, one query per user. */
  async #refreshGroups(principals: Set<string> | 'all'): Promise<void> {
    const byUser = new Map<string, FeedStream[]>();
    for (const stream of this.#streams) {
      if (stream.userId === null) continue; // anonymous: in no group
      if (
        principals !== 'all' &&
        !principals.has(stream.userId) &&
        !principals.has(AUTHENTICATED) &&
        !principals.has(EVERYONE)
      )
        continue;
      const streams = byUser.get(stream.userId) ?? [];
      streams.push(stream);
      byUser.set(stream.userId, streams);
    }
    const since = Date.now() - CLOCK_MARGIN_MS;
    for (const [userId, streams] of byUser) {
      const groups = await this.#storage.read((session) => session.permissions.groupsOf([userId, AUTHENTICATED]));
      for (const stream of streams) {
        const gained = groups.some((group) => !stream.principals.includes(group));
        stream.principals = [userId, EVERYONE, AUTHENTICATED, ...groups];
        // Entries refused with the old groups may have been offered already: read them again.
        if (gained) stream.catchUp(since);
      }
    }
  }

  #isNewer(entry: ChangeEntry): boolean {
    const uri = collectionUri(entry.bucket, entry.collection);
    const latest = this.#latest.get(uri);
    if (latest !== undefined && latest >= entry.last_modified) return false;
    this.#latest.delete(uri);
    this.#latest.set(uri, entry.last_modified);
    if (this.#latest.size > LATEST_SIZE) this.#latest.delete(this.#latest.keys().next().value as string);
    return true;
  }

  /** Offers each stream the entries of `changes`, with the ACLs they have now. */
  async #offer(changes: Change[]): Promise<void> {
    const entries = changes
      .map(([bucket, collection, timestamp]) => this.reads.entry(bucket, collection, timestamp))
      .filter((entry) => this.reads.monitors(entry) && this.#isNewer(entry));
    if (entries.length === 0 || this.#streams.size === 0) return;
    await this.#offerEntries(entries);
  }

  async #offerEntries(entries: ChangeEntry[]): Promise<void> {
    const uris = new Set<string>();
    for (const { bucket, collection } of entries) uris.add(`/buckets/${bucket}`).add(collectionUri(bucket, collection));
    const acls =
      this.reads.resources === null
        ? await this.#storage.read((session) => session.permissions.get([...uris]))
        : new Map<string, Permissions>();
    for (const entry of entries) {
      const bucketAcl = acls.get(`/buckets/${entry.bucket}`);
      const collectionAcl = acls.get(collectionUri(entry.bucket, entry.collection));
      for (const stream of this.#streams) stream.offer(entry, bucketAcl, collectionAcl);
    }
  }

  /** Reads what changed after `since` (live collections and deletions) and offers each stream what is new to it. */
  async #resync(since: number): Promise<void> {
    const { live, deletions } = await this.#storage.read((session) => this.reads.changedSince(session, since));
    for (const { entry, readers } of deletions) {
      if (this.#isNewer(entry))
        for (const stream of this.#streams) stream.offer(entry, deletionAcl(readers), undefined);
    }
    await this.#offerEntries(live.filter((entry) => this.#isNewer(entry)));
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
