/**
 * The change monitor (capability `changes`), compatible with the original server's
 * `kinto-changes` plugin: `GET /v1/buckets/monitor/collections/changes/records` lists one entry
 * per collection (entries.ts), polled like any records list (`_since`, `_before`, filters,
 * `_sort`, `_limit` / `Next-Page`, `ETag` = the newest entry's timestamp, `If-None-Match` → 304).
 *
 * The same URL with `Accept: text/event-stream` is a server-sent event stream (stream.ts,
 * feed.ts): each entry as an event `id: <last_modified>` / `data: <entry JSON>`, first those
 * newer than `Last-Event-ID` (or `_since`; neither: every entry), then each change as it commits.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { cacheLifetime, setCacheHeaders } from '../http/cache-headers.js';
import { splitUrl } from '../http/url.js';
import { baseUrl, effectiveLimit } from '../resource/handlers.js';
import { setTimestampHeaders } from '../resource/object-responses.js';
import { encodeToken, nextPageUrl } from '../resource/pagination.js';
import { parsePreconditions, checkListPreconditions } from '../resource/preconditions.js';
import { parseListQuery, projectFields, type ListQuery } from '../resource/querystring.js';
import { registerMethods } from '../resource/routes.js';
import { parseResources, selectEntries, type ChangeEntry } from './entries.js';
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
  if (!settings.changes_enabled) return;
  const resources = parseResources(settings.changes_resources);
  const reads = new MonitorReads(settings, resources, settings.http_host ?? '');
  const feed = new ChangeFeed(settings, storage, reads, () => app.log);
  feed.start(services.events);
  app.decorate('changesFeed', feed);
  app.addHook('onClose', async () => feed.close());
  // Close the streams before the server waits for its connections to end.
  app.addHook('preClose', async () => feed.close());

  services.capabilities.changes = {
    description: 'Track modifications of records and show the collection timestamps in one list: poll it, or follow it as server-sent events.',
    url: 'https://kinto.readthedocs.io/en/latest/api/1.x/synchronisation.html#polling-for-remote-changes',
    collections: settings.changes_resources,
    stream: { url: MONITOR_PATH, accept: 'text/event-stream', heartbeat_seconds: settings.changes_stream_heartbeat_seconds },
  };

  /** The entries the query may select (pushed down: `_since`, `_before`, `bucket`; the filters still apply), and the list's ETag. */
  async function read(request: FastifyRequest, query: ListQuery, ifNoneMatch: boolean): Promise<{ entries: ChangeEntry[] | null; timestamp: number }> {
    const { principals } = request.identity;
    const range = rangeOf(query.filters);
    return storage.read(async (session) => {
      // A conditional poll first learns the ETag (one short read), and often stops there.
      let timestamp = ifNoneMatch ? await reads.newest(session, principals) : null;
      if (timestamp !== null && checkListPreconditions(parsePreconditions(request.headers), timestamp, 'GET') === 'not-modified') return { entries: null, timestamp };
      const entries = await reads.entries(session, principals, range, query.includeDeleted);
      if (timestamp === null) {
        // The newest entry overall: the range's newest when it reaches the top, else a look down from there.
        const complete = range.atMost === undefined && range.buckets === undefined;
        const top = entries.reduce((max, entry) => Math.max(max, entry.last_modified), 0);
        timestamp = complete && entries.length > 0 ? top : complete && range.since === undefined ? 0 : await reads.newest(session, principals, complete ? range.since : undefined);
      }
      return { entries, timestamp };
    });
  }

  async function list(request: FastifyRequest, reply: FastifyReply) {
    if (request.wantsEventStream) return openStream(feed, services, reads, request, reply);
    const query = parseListQuery(splitUrl(request.raw.url).query);
    const preconditions = parsePreconditions(request.headers);
    const { entries, timestamp } = await read(request, query, preconditions.ifNoneMatch?.kind === 'timestamp');
    const outcome = checkListPreconditions(preconditions, timestamp, 'GET');
    setTimestampHeaders(reply, timestamp);
    setCacheHeaders(reply, cacheLifetime(settings, request.identity, { resourceName: 'record', parentUri: '/buckets/monitor/collections/changes', parent: null }));
    if (outcome === 'not-modified' || entries === null) return reply.code(304).send();

    const selected = selectEntries(entries, query);
    const limit = effectiveLimit(services, query.requestedLimit);
    const items = selected.slice(0, limit);
    if (selected.length > limit) {
      const offset = (query.token?.offset ?? 0) + items.length;
      const token = encodeToken(items[items.length - 1] as unknown as Record<string, unknown>, [...query.sorting, { field: 'id', direction: 1 }], offset);
      reply.header('Next-Page', nextPageUrl(baseUrl(services, request), splitUrl(request.raw.url).path, query.params, limit, token.encoded));
    }
    return { data: query.fields ? items.map((item) => projectFields(item as unknown as Record<string, unknown>, query.fields as string[])) : items };
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
        const query = parseListQuery(splitUrl(request.raw.url).query);
        const { entries, timestamp } = await read(request, query, false);
        const selected = selectEntries(entries ?? [], query);
        setTimestampHeaders(reply, timestamp);
        reply.header('Total-Objects', String(selected.length));
        reply.header('Total-Records', String(selected.length));
        return reply.send();
      },
    });
  });
}
