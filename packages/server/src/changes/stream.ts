/**
 * One server-sent event stream of the change monitor. The wire format (text/event-stream):
 *
 *   retry: 1000                      once: how long a browser's EventSource waits to reconnect
 *   id: 1732550000123                each entry: its last_modified…
 *   data: {"id":"…","last_modified":1732550000123,"bucket":"b","collection":"c","host":""}
 *                                    …and the entry itself, then a blank line
 *   : heartbeat                      every `changes_stream_heartbeat_seconds`
 *
 * At the start, the entries newer than `Last-Event-ID` (or `_since`), oldest first — without
 * either, every entry the caller may see — then every change as it commits. Filters of the query
 * string (`bucket=…`, `in_collection=…`) apply to every event.
 *
 * Nobody can cut another's stream (issue 29): the status line and headers leave before anything
 * is read; the first entries are read a chunk at a time (`SNAPSHOT_CHUNK`) and written only as
 * fast as the client reads them (`write()`'s answer, then 'drain'); changes offered meanwhile wait
 * as one entry per collection (the newest). Past `changes_stream_max_buffer_bytes` of those, the
 * stream forgets them and reads again, once it can write, what changed since the oldest one it
 * forgot: its memory stays bounded, and it is never dropped for being behind. An entry is then
 * never older than one the stream sent for that collection; after such a catch-up one may come
 * again (a client pulls `_since` and finds nothing).
 */
import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ERRNO, invalidParameter } from '../errors.js';
import { sessionClaim } from '../http/session-budget.js';
import type { Services } from '../request-context.js';
import type { Filter, Permissions } from '../storage/types.js';
import { collectionUri, entryMatcher, type ChangeEntry } from './entries.js';
import type { ChangeFeed, FeedStream } from './feed.js';
import { rangeOf, type EntryPage, type EntryRange, type MonitorReads } from './reads.js';
import { type StreamHolder, type StreamRefusal, streamHolder } from './stream-caps.js';

/**
 * Entries read from the store at a time for a new stream's first events: small enough that a
 * chunk's statements (synchronous on the embedded store) never hold the event loop for long.
 */
const SNAPSHOT_CHUNK = 200;
/** How long the first events' timestamps are remembered, against a late notification of the same change. */
const SNAPSHOT_MEMORY_MS = 10_000;

/** An entry's event text, computed once however many streams send it. */
const texts = new WeakMap<ChangeEntry, string>();

function eventText(entry: ChangeEntry): string {
  let text = texts.get(entry);
  if (text === undefined) {
    text = `id: ${entry.last_modified}\ndata: ${JSON.stringify(entry)}\n\n`;
    texts.set(entry, text);
  }
  return text;
}

/** Where a stream reads its first entries (and what it missed after falling behind), a page at a time. */
export type SnapshotReader = (range: EntryRange & { limit: number }) => Promise<EntryPage>;

interface Snapshot {
  /** Entries read, not yet written. */
  queue: ChangeEntry[];
  /** What to read next (`after`: the last row read). */
  range: EntryRange;
  done: boolean;
}

export class EventStream implements FeedStream {
  readonly holder: StreamHolder;
  readonly userId: string | null;
  readonly #feed: ChangeFeed;
  readonly #out: PassThrough;
  readonly #matches: (entry: ChangeEntry) => boolean;
  readonly #read: SnapshotReader;
  readonly #maxPendingBytes: number;
  #principals: string[];
  /** Changes waiting to be written, newest per collection URI, and their size in bytes. */
  #pending = new Map<string, ChangeEntry>();
  #pendingBytes = 0;
  /** Timestamps sent by the snapshot, per collection, for a while (against late notifications). */
  #recent: Map<string, number> | null = null;
  #recentTimer: NodeJS.Timeout | null = null;
  /** The snapshot being written: its entries not yet written, and where the next read starts. */
  #snapshot: Snapshot | null = null;
  /** Fell behind: read again what changed after this timestamp once the snapshot is written. */
  #catchUpSince: number | null = null;
  #reading = false;
  #blocked = false;
  #closed = false;

  constructor(
    feed: ChangeFeed,
    services: Pick<Services, 'settings'>,
    identity: { userId: string | null; principals: string[] },
    holder: StreamHolder,
    out: PassThrough,
    filters: Filter[],
    read: SnapshotReader,
  ) {
    this.#feed = feed;
    this.#out = out;
    this.#matches = entryMatcher(filters);
    this.#read = read;
    this.#maxPendingBytes = services.settings.changes_stream_max_buffer_bytes;
    this.holder = holder;
    this.userId = identity.userId;
    this.#principals = identity.principals;
    out.on('drain', () => {
      this.#blocked = false;
      this.#pump();
    });
  }

  get principals(): readonly string[] {
    return this.#principals;
  }

  set principals(principals: readonly string[]) {
    this.#principals = [...principals];
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Starts with the entries of `range` (oldest first), then what the feed offers. */
  start(range: EntryRange): void {
    this.#snapshot = { queue: [], range: { ...range, order: 'asc' }, done: false };
    this.#pump();
  }

  offer(entry: ChangeEntry, bucketAcl: Permissions | undefined, collectionAcl: Permissions | undefined): void {
    if (this.#closed) return;
    if (!this.#matches(entry)) return;
    if (!this.#feed.reads.visible(this.#principals, bucketAcl, collectionAcl)) return;
    this.#enqueue(entry);
  }

  catchUp(since: number): void {
    if (this.#closed) return;
    this.#catchUpSince = Math.min(this.#catchUpSince ?? Number.POSITIVE_INFINITY, since);
    this.#pump();
  }

  heartbeat(): void {
    // A stream that cannot write now has no use for a keep-alive.
    if (!this.#blocked && !this.#closed) this.#write(': heartbeat\n\n');
  }

  #enqueue(entry: ChangeEntry): void {
    const uri = collectionUri(entry.bucket, entry.collection);
    if ((this.#recent?.get(uri) ?? -1) >= entry.last_modified) return;
    const waiting = this.#pending.get(uri);
    if (waiting && waiting.last_modified >= entry.last_modified) return;
    if (!waiting && this.#pending.size === 0 && !this.#blocked && this.#snapshot === null && !this.#reading) {
      this.#write(eventText(entry));
      return;
    }
    if (waiting) this.#pendingBytes -= eventText(waiting).length;
    this.#pending.set(uri, entry);
    this.#pendingBytes += eventText(entry).length;
    if (this.#pendingBytes > this.#maxPendingBytes) this.#fallBehind();
    else this.#pump();
  }

  /** Too much waiting: forget it, and read again what changed after the oldest of it. */
  #fallBehind(): void {
    let oldest = Number.POSITIVE_INFINITY;
    for (const entry of this.#pending.values()) oldest = Math.min(oldest, entry.last_modified);
    this.#catchUpSince = Math.min(this.#catchUpSince ?? Number.POSITIVE_INFINITY, oldest - 1);
    this.#pending = new Map();
    this.#pendingBytes = 0;
    this.#pump();
  }

  /** Writes what it can: the snapshot's entries, then the changes waiting; reads the next chunk when it needs one. */
  #pump(): void {
    while (!this.#blocked && !this.#closed) {
      const snapshot = this.#snapshot;
      if (snapshot) {
        const entry = snapshot.queue.shift();
        if (entry) {
          this.#writeSnapshotEntry(entry);
          continue;
        }
        if (!snapshot.done) {
          this.#readChunk(snapshot);
          return;
        }
        this.#snapshot = null;
        this.#forgetRecentLater();
      }
      if (this.#catchUpSince !== null) {
        // Behind: what changed meanwhile, from the store, as a snapshot of its own.
        this.#snapshot = { queue: [], range: { since: this.#catchUpSince, order: 'asc' }, done: false };
        this.#catchUpSince = null;
        continue;
      }
      const next = this.#pending.entries().next();
      if (next.done) return;
      const [uri, entry] = next.value;
      this.#pending.delete(uri);
      this.#pendingBytes -= eventText(entry).length;
      this.#write(eventText(entry));
    }
  }

  #writeSnapshotEntry(entry: ChangeEntry): void {
    if (!this.#matches(entry)) return;
    const uri = collectionUri(entry.bucket, entry.collection);
    const waiting = this.#pending.get(uri);
    if (waiting) {
      // A change offered meanwhile: the newer of the two, once.
      if (waiting.last_modified >= entry.last_modified) return;
      this.#pending.delete(uri);
      this.#pendingBytes -= eventText(waiting).length;
    }
    if ((this.#recent?.get(uri) ?? -1) >= entry.last_modified) return;
    this.#recent ??= new Map();
    this.#recent.set(uri, entry.last_modified);
    this.#write(eventText(entry));
  }

  #readChunk(snapshot: Snapshot): void {
    if (this.#reading) return;
    this.#reading = true;
    // The next chunk after a turn of the event loop: other requests go in between.
    new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#read({ ...snapshot.range, limit: SNAPSHOT_CHUNK }))
      .then(
        ({ entries, next }) => {
          this.#reading = false;
          if (this.#closed) return;
          snapshot.queue.push(...entries);
          if (next) snapshot.range = { ...snapshot.range, ...next };
          else snapshot.done = true;
          this.#pump();
        },
        (error: unknown) => {
          this.#reading = false;
          this.#feed.log?.warn({ err: error }, 'changes: could not read the entries of a stream');
          this.close();
        },
      );
  }

  #forgetRecentLater(): void {
    if (this.#recentTimer || !this.#recent) return;
    this.#recentTimer = setTimeout(() => {
      this.#recent = null;
      this.#recentTimer = null;
    }, SNAPSHOT_MEMORY_MS);
    this.#recentTimer.unref();
  }

  #write(text: string): void {
    if (this.#closed) return;
    if (!this.#out.write(text)) this.#blocked = true;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#recentTimer) clearTimeout(this.#recentTimer);
    this.#pending = new Map();
    this.#snapshot = null;
    this.#feed.remove(this);
    this.#out.end();
  }
}

function lastEventId(request: FastifyRequest): number | null {
  const header = request.headers['last-event-id'];
  const raw = Array.isArray(header) ? header[0] : header;
  if (raw === undefined || raw === '') return null;
  const trimmed = raw.trim();
  if (!/^\d{1,16}$/.test(trimmed) || !Number.isSafeInteger(Number(trimmed)))
    throw invalidParameter('header', 'Last-Event-ID', 'is not a timestamp');
  return Number(trimmed);
}

export async function openStream(
  feed: ChangeFeed,
  services: Services,
  reads: MonitorReads,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { settings, storage } = services;
  const query = request.input.listing;
  const since = lastEventId(request);
  const holder = streamHolder(request.identity, request.ip);
  const refused = feed.admit(holder);
  if (refused) throw streamRefused(refused, settings.retry_after_seconds);

  const out = new PassThrough();
  const identity = request.identity;
  // Its pages share the pool as its caller's requests do (storage_pool_max_share).
  const budget = sessionClaim(identity.userId, request.ip);
  const stream: EventStream = new EventStream(feed, services, identity, holder, out, query.filters, (range) =>
    storage.read((session) => reads.page(session, stream.principals, range), budget),
  );
  // Registered before the first read: a change committed meanwhile is offered too (once).
  feed.add(stream);
  // The response's close: the client went away (or the stream was ended).
  reply.raw.once('close', () => stream.close());
  out.write('retry: 1000\n\n');

  reply.header('Content-Type', 'text/event-stream; charset=utf-8');
  reply.header('Cache-Control', 'no-cache, no-store');
  // nginx and others: do not buffer the stream.
  reply.header('X-Accel-Buffering', 'no');
  // Fastify writes the status line and headers with the first chunk (`retry:`), before any entry:
  // the entries are written only as the client reads, so none can hold them back.
  void reply.send(out);

  // After `Last-Event-ID` (else `_since`), within the `bucket` filter.
  const { since: sinceFilter, buckets } = rangeOf(query.filters);
  const first = since ?? sinceFilter;
  stream.start({ ...(first !== undefined ? { since: first } : {}), ...(buckets ? { buckets } : {}) });
  return reply;
}

function streamRefused(kind: StreamRefusal, retryAfter: number): ApiError {
  const headers = { 'Retry-After': String(retryAfter) };
  if (kind === 'process')
    return new ApiError(503, ERRNO.BACKEND, { message: 'Too many change streams are open on this server.', headers });
  return new ApiError(429, ERRNO.CLIENT_REACHED_CAPACITY, {
    message:
      kind === 'user'
        ? 'Too many change streams are open for this user.'
        : 'Too many change streams are open from this address.',
    headers,
  });
}
