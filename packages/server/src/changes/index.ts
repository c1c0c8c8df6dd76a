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
import { registerMethods } from '../engine/routes.js';
import { parseResources } from './entries.js';
import { deletionCaptureExtensions, storeRecordsTimestamps } from './deletions.js';
import { ChangeFeed } from './feed.js';
import { MonitorReads } from './reads.js';
import { countChanges, listChanges, type Monitor } from './monitor-list.js';

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

  const monitor: Monitor = { services, reads, feed };
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
      GET: (request: FastifyRequest, reply: FastifyReply) => listChanges(monitor, request, reply),
      HEAD: (request: FastifyRequest, reply: FastifyReply) => countChanges(monitor, request, reply),
    });
  });
}
