/**
 * The change monitor's list (`GET`, `HEAD`): the entries a query selects, read at the cost of
 * what it asks (reads.ts), paged and projected as a records list is.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { setTimestampHeaders } from '../engine/object-responses.js';
import { effectiveLimit, encodeToken } from '../engine/pagination.js';
import { checkListPreconditions, parsePreconditions } from '../engine/preconditions.js';
import { compileProjection, type ListQuery } from '../engine/querystring.js';
import { setNextPage } from '../http/next-page.js';
import { cacheLifetime, setCacheHeaders } from '../http/cache-headers.js';
import type { Services } from '../request-context.js';
import { type ChangeEntry, selectEntries } from './entries.js';
import type { ChangeFeed } from './feed.js';
import { type MonitorReads, rangeOf } from './reads.js';
import { openStream } from './stream.js';

/** What the monitor's endpoints share. */
export interface Monitor {
  services: Services;
  reads: MonitorReads;
  feed: ChangeFeed;
}

/**
 * The entries the query selects, sorted (its page and, when there is one, the next page's
 * first), and the list's ETag. Sorted by `last_modified` (the default), only the first page's
 * worth is read, in timestamp order; otherwise every entry the caller may see (pushed down:
 * `_since`, `_before`, `bucket`; the filters always apply after).
 */
export async function selectChanges(
  { services, reads }: Monitor,
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
  return services.storage.read(async (session) => {
    // The ETag first (a short read), which a conditional poll often stops at.
    const timestamp = await reads.newest(session, principals);
    if (ifNoneMatch && checkListPreconditions(parsePreconditions(request.headers), timestamp, 'GET') === 'not-modified')
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

/** `GET`: a page of entries, or the event stream when asked. */
export async function listChanges(monitor: Monitor, request: FastifyRequest, reply: FastifyReply) {
  const { services, reads, feed } = monitor;
  const { settings } = services;
  if (request.wantsEventStream) return openStream(feed, services, reads, request, reply);
  const query = request.input.listing;
  const preconditions = parsePreconditions(request.headers);
  const limit = effectiveLimit(services.settings, query.requestedLimit);
  const { selected, timestamp } = await selectChanges(
    monitor,
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
      ...(query.expected === null ? {} : { busting: { expected: query.expected, timestamp } }),
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
    setNextPage(reply, request, services.settings, { params: query.params, limit, token: token.encoded });
  }
  if (query.fields) {
    const project = compileProjection(query.fields);
    return { data: items.map((item) => project(item as unknown as Record<string, unknown>)) };
  }
  // The entries' text from the factory's cache (a deleted collection's, rare, as it is).
  const texts = items.map((item) => ('deleted' in item ? JSON.stringify(item) : reads.factory.json(item)));
  return reply.type('application/json; charset=utf-8').send(`{"data":[${texts.join(',')}]}`);
}

/** `HEAD`: the count of every entry the query selects. */
export async function countChanges(monitor: Monitor, request: FastifyRequest, reply: FastifyReply) {
  const query = request.input.listing;
  const { selected, timestamp } = await selectChanges(
    monitor,
    request,
    { ...query, sorting: [] },
    Number.POSITIVE_INFINITY,
    false,
  );
  setTimestampHeaders(reply, timestamp);
  reply.header('Total-Objects', String(selected?.length ?? 0));
  reply.header('Total-Records', String(selected?.length ?? 0));
  return reply.send();
}
