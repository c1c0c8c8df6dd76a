/**
 * The change monitor (capability `changes`), compatible with the original server's
 * `kinto-changes` plugin: `GET /v1/buckets/monitor/collections/changes/records` lists one entry
 * per collection (entries.ts), polled like any records list (`_since`, `_before`, filters,
 * `_sort`, `_limit` / `Next-Page`, `ETag` = the newest entry's timestamp, `If-None-Match` → 304).
 *
 * Entries are read by reads.ts at the cost of what is asked (a page, what changed since); a
 * deleted collection's entry (`deleted: true`) is listed with `_since`, as tombstones are
 * (deletions.ts).
 *
 * The same URL with `Accept: text/event-stream` is a server-sent event stream (stream.ts,
 * feed.ts): each entry as an event `id: <last_modified>` / `data: <entry JSON>`, first those
 * newer than `Last-Event-ID` (or `_since`; neither: every entry), then each change as it commits.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cacheLifetime, setCacheHeaders } from '../http/cache-headers.js';
import { splitUrl } from '../http/url.js';
import { baseUrl } from '../http/base-url.js';
import { effectiveLimit } from '../engine/pagination.js';
import { setTimestampHeaders } from '../engine/object-responses.js';
import { encodeToken, nextPageUrl } from '../engine/pagination.js';
import { parsePreconditions, checkListPreconditions } from '../engine/preconditions.js';
import { compileProjection, type ListQuery } from '../engine/querystring.js';
import { registerMethods } from '../engine/routes.js';
import { parseResources, selectEntries, type ChangeEntry } from './entries.js';
import { deletionCaptureExtensions, storeRecordsTimestamps } from './deletions.js';
import { ChangeFeed } from './feed.js';
import { MonitorReads, rangeOf } from './reads.js';
import { openStream } from './stream.js';

export const MONITOR_PATH = '/buckets/monitor/collections/changes/records';

declare module 'fastify' {
  interface FastifyInstance {
    /** The change monitor's live feed (when `changes_enabled`). */
    changesFeed?: ChangeFeed;
  }
  interface FastifyRequest {
    /** The client asked for `text/event-stream` (the Accept header is set aside for content negotiation). */
    wantsEventStream?: boolean;
  }
}

export function registerChanges(app: FastifyInstance): void {
  const { services } = app;
  const { settings, storage } = services;
  if (!settings.changes_enabled) {
    // Off for now, maybe on later: collections created meanwhile must still be found by timestamp.
    services.events.subscribe({
      name: 'changes-collections',
      actions: new Set(['create']),
      resources: new Set(['collection']),
      inTransaction: async (events, session) => void (await storeRecordsTimestamps(session, events)),
    });
    return;
  }
  const resources = parseResources(settings.changes_resources);
  const reads = new MonitorReads(settings, resources, settings.http_host ?? '');
  const feed = new ChangeFeed(settings, storage, reads, () => app.log);
  feed.start(services.events);
  services.resourceExtensions.push(...deletionCaptureExtensions(resources));
  app.decorate('changesFeed', feed);
  app.addHook('onClose', async () => feed.close());
  // Close the streams before the server waits for its connections to end.
  app.addHook('preClose', async () => feed.close());

  services.capabilities.changes = {
    description:
      'Track modifications of records and show the collection timestamps in one list: poll it, or follow it ' +
      'as server-sent events.',
    url: 'https://kinto.readthedocs.io/en/latest/api/1.x/synchronisation.html#polling-for-remote-changes',
    collections: settings.changes_resources,
    stream: {
      url: MONITOR_PATH,
      accept: 'text/event-stream',
      heartbeat_seconds: settings.changes_stream_heartbeat_seconds,
    },
  };

  /**
   * The entries the query selects, sorted (its page and, when there is one, the next page's
   * first), and the list's ETag. Sorted by `last_modified` (the default), only the first page's
   * worth is read, in timestamp order; otherwise every entry the caller may see (pushed down:
   * `_since`, `_before`, `bucket`; the filters always apply after).
   */
  async function select(
    request: FastifyRequest,
    query: ListQuery,
    limit: number,
    ifNoneMatch: boolean,
  ): Promise<{ selected: ChangeEntry[] | null; timestamp: number }> {
    const { principals } = request.identity;
    const range = rangeOf(query.filters);
    const [first] = query.sorting;
    const byTimestamp = query.sorting.length === 1 && first?.field === 'last_modified';
    if (byTimestamp) range.order = first.direction === -1 ? 'desc' : 'asc';
    const after = query.token?.lastObject?.last_modified;
    if (byTimestamp && Number.isSafeInteger(after)) {
      if (range.order === 'desc') range.atMost = Math.min(range.atMost ?? Number.MAX_SAFE_INTEGER, after as number);
      else range.since = Math.max(range.since ?? -1, (after as number) - 1);
    }
    return storage.read(async (session) => {
      // The ETag first (a short read), which a conditional poll often stops at.
      const timestamp = await reads.newest(session, principals);
      if (
        ifNoneMatch &&
        checkListPreconditions(parsePreconditions(request.headers), timestamp, 'GET') === 'not-modified'
      )
        return { selected: null, timestamp };
      const options = { deletions: query.includeDeleted };
      if (!byTimestamp)
        return { selected: selectEntries(await reads.entries(session, principals, range, options), query), timestamp };
      // The first `limit + 1` the filters keep: read twice as many each time they keep too few.
      for (let want = limit + 1; ; want *= 2) {
        const entries = await reads.entries(session, principals, range, { ...options, want });
        const selected = selectEntries(entries, query);
        if (selected.length > limit || entries.filter((entry) => !('deleted' in entry)).length < want)
          return { selected, timestamp };
      }
    });
  }

  async function list(request: FastifyRequest, reply: FastifyReply) {
    if (request.wantsEventStream) return openStream(feed, services, reads, request, reply);
    const query = request.input.listing;
    const preconditions = parsePreconditions(request.headers);
    const limit = effectiveLimit(services.settings, query.requestedLimit);
    const { selected, timestamp } = await select(
      request,
      query,
      limit,
      preconditions.ifNoneMatch?.kind === 'timestamp',
    );
    const outcome = checkListPreconditions(preconditions, timestamp, 'GET');
    setTimestampHeaders(reply, timestamp);
    setCacheHeaders(
      reply,
      cacheLifetime(settings, request.identity, {
        resourceName: 'record',
        parentUri: '/buckets/monitor/collections/changes',
        parent: null,
      }),
    );
    if (outcome === 'not-modified' || selected === null) return reply.code(304).send();

    const items = selected.slice(0, limit);
    if (selected.length > limit) {
      const offset = (query.token?.offset ?? 0) + items.length;
      const token = encodeToken(
        items[items.length - 1] as unknown as Record<string, unknown>,
        [...query.sorting, { field: 'id', direction: 1 }],
        offset,
      );
      reply.header(
        'Next-Page',
        nextPageUrl(
          baseUrl(services.settings, request),
          splitUrl(request.raw.url).path,
          query.params,
          limit,
          token.encoded,
        ),
      );
    }
    const project = query.fields ? compileProjection(query.fields) : null;
    return {
      data: project ? items.map((item) => project(item as unknown as Record<string, unknown>)) : items,
    };
  }

  // Registered before the records resource: Fastify prefers this static path to the parametric one.
  app.register(async (scoped) => {
    scoped.addHook('onRequest', async (request) => {
      const accept = request.headers.accept;
      if (accept && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept)) {
        request.wantsEventStream = true;
        delete request.headers.accept;
      }
    });
    registerMethods(scoped, `/v1${MONITOR_PATH}`, {
      GET: list,
      HEAD: async (request: FastifyRequest, reply: FastifyReply) => {
        const query = request.input.listing;
        // A count: every entry the query selects.
        const { selected, timestamp } = await select(
          request,
          { ...query, sorting: [] },
          Number.POSITIVE_INFINITY,
          false,
        );
        setTimestampHeaders(reply, timestamp);
        reply.header('Total-Objects', String(selected?.length ?? 0));
        reply.header('Total-Records', String(selected?.length ?? 0));
        return reply.send();
      },
    });
  });
}
