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
 * either, every entry the caller may see — then every change as it commits. A stream never sends
 * an entry older than or equal to one it already sent for that collection. Filters of the query
 * string (`bucket=…`, `in_collection=…`) apply to every event.
 *
 * A reader that does not keep up (more than `changes_stream_max_buffer_bytes` waiting to be
 * written) is disconnected, never buffered without bound: it reconnects with its last event id.
 */
import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { EVERYONE } from '../auth/policy.js';
import { ApiError, ERRNO, invalidParameter } from '../errors.js';
import { splitUrl } from '../http/url.js';
import { parseListQuery } from '../resource/querystring.js';
import type { Services } from '../request-context.js';
import type { Filter, Permissions } from '../storage/types.js';
import { collectionUri, matchesFilter, type ChangeEntry } from './entries.js';
import type { ChangeFeed, FeedStream } from './feed.js';

/** An entry's collection URI and event text, computed once however many streams send it. */
const prepared = new WeakMap<ChangeEntry, { uri: string; text: string }>();

function prepare(entry: ChangeEntry): { uri: string; text: string } {
  let value = prepared.get(entry);
  if (!value) {
    value = { uri: collectionUri(entry.bucket, entry.collection), text: `id: ${entry.last_modified}\ndata: ${JSON.stringify(entry)}\n\n` };
    prepared.set(entry, value);
  }
  return value;
}

export class EventStream implements FeedStream {
  readonly userKey: string;
  readonly #feed: ChangeFeed;
  readonly #services: Services;
  readonly #out: PassThrough;
  readonly #socket: NodeJS.WritableStream & { writableLength: number; headersSent?: boolean; destroy(): void };
  readonly #filters: Filter[];
  readonly #basePrincipals: string[];
  #principals: string[];
  /** The last timestamp sent per collection URI. */
  readonly #sent = new Map<string, number>();
  #closed = false;

  constructor(feed: ChangeFeed, services: Services, request: FastifyRequest, reply: FastifyReply, out: PassThrough, filters: Filter[]) {
    this.#feed = feed;
    this.#services = services;
    this.#out = out;
    this.#socket = reply.raw as never;
    this.#filters = filters;
    const { userId, principals } = request.identity;
    this.userKey = userId ?? `address:${request.ip}`;
    this.#principals = principals;
    // Group URIs are read again when groups change; the rest stays what authentication gave.
    this.#basePrincipals = principals.filter((principal) => !principal.startsWith('/buckets/'));
  }

  get principals(): string[] {
    return this.#principals;
  }

  offer(entry: ChangeEntry, bucketAcl: Permissions | undefined, collectionAcl: Permissions | undefined): void {
    if (this.#closed) return;
    const prepared = prepare(entry);
    if ((this.#sent.get(prepared.uri) ?? -1) >= entry.last_modified) return;
    if (this.#filters.length > 0 && !this.#filters.every((filter) => matchesFilter(entry, filter))) return;
    if (!this.#feed.visible(this.#principals, bucketAcl, collectionAcl)) return;
    this.#sent.set(prepared.uri, entry.last_modified);
    this.#write(prepared.text);
  }

  heartbeat(): void {
    this.#write(': heartbeat\n\n');
  }

  async refreshPrincipals(): Promise<void> {
    const userId = this.#basePrincipals.find((principal) => principal !== EVERYONE && !principal.startsWith('system.'));
    if (!userId) return;
    const groups = await this.#services.storage.read((session) => session.permissions.groupsOf(this.#basePrincipals.filter((principal) => principal !== EVERYONE)));
    this.#principals = [...this.#basePrincipals, ...groups];
  }

  #write(text: string): void {
    if (this.#closed) return;
    const waiting = this.#out.writableLength + this.#out.readableLength + this.#socket.writableLength;
    if (waiting > this.#services.settings.changes_stream_max_buffer_bytes) {
      // A slow reader: drop it rather than hold an ever-growing buffer; it resumes from its last id.
      this.close();
      this.#socket.destroy();
      return;
    }
    // Once the response has started, straight to the socket (the PassThrough only carried what
    // was written before Fastify sent the headers).
    if (this.#socket.headersSent && this.#out.readableLength === 0 && this.#out.writableLength === 0) this.#socket.write(text);
    else this.#out.write(text);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#feed.remove(this);
    this.#out.end();
  }
}

function lastEventId(request: FastifyRequest): number | null {
  const header = request.headers['last-event-id'];
  const raw = Array.isArray(header) ? header[0] : header;
  if (raw === undefined || raw === '') return null;
  if (!/^\d+$/.test(raw.trim())) throw invalidParameter('header', 'Last-Event-ID', `${JSON.stringify(raw)} is not a timestamp`);
  return Number(raw.trim());
}

export async function openStream(
  feed: ChangeFeed,
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  visibleEntries: (request: FastifyRequest) => Promise<ChangeEntry[]>,
): Promise<FastifyReply> {
  const { settings } = services;
  const query = parseListQuery(splitUrl(request.raw.url).query);
  const since = lastEventId(request);
  const userKey = request.identity.userId ?? `address:${request.ip}`;
  const admitted = feed.admits(userKey);
  if (admitted !== 'ok') throw streamRefused(admitted, settings.retry_after_seconds);

  const out = new PassThrough();
  const stream = new EventStream(feed, services, request, reply, out, query.filters);
  // Registered before the first read: a change committed meanwhile is offered too (once).
  feed.add(stream);
  // The response's close: the client went away (or the stream was ended).
  reply.raw.once('close', () => stream.close());
  out.write('retry: 1000\n\n');

  reply.header('Content-Type', 'text/event-stream; charset=utf-8');
  reply.header('Cache-Control', 'no-cache, no-store');
  // nginx and others: do not buffer the stream.
  reply.header('X-Accel-Buffering', 'no');
  void reply.send(out);

  try {
    const entries = (await visibleEntries(request))
      .filter((entry) => since === null || entry.last_modified > since)
      .sort((a, b) => a.last_modified - b.last_modified);
    // Already checked against the ACLs by visibleEntries: offer them as visible to this stream.
    for (const entry of entries) stream.offer(entry, { read: stream.principals }, undefined);
  } catch (error) {
    request.log.warn({ err: error }, 'changes: could not read the entries of a new stream');
    stream.close();
  }
  return reply;
}

function streamRefused(kind: 'process' | 'user', retryAfter: number): ApiError {
  const headers = { 'Retry-After': String(retryAfter) };
  return kind === 'process'
    ? new ApiError(503, ERRNO.BACKEND, { message: 'Too many change streams are open on this server.', headers })
    : new ApiError(429, ERRNO.CLIENT_REACHED_CAPACITY, { message: 'Too many change streams are open for this user.', headers });
}
