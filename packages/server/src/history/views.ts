/**
 * `GET|HEAD|DELETE /buckets/<bid>/history` (protocol-reference §13.3; DELETE since 1.13).
 * Listing parameters as on any plural endpoint, limited to the entry fields. Bucket readers and
 * writers see every entry; others only the entries recorded as readable by one of their
 * principals. DELETE is for bucket writers.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Identity } from '../auth/policy.js';
import { ERRNO, invalidParameter, objectNotFound } from '../errors.js';
import { setCacheHeaders } from '../http/cache-headers.js';
import { splitUrl } from '../http/url.js';
import { validateId } from '../resource/body.js';
import { denied, readPage, sendCount } from '../resource/handlers.js';
import { setTimestampHeaders } from '../resource/object-responses.js';
import { checkListPreconditions, parsePreconditions } from '../resource/preconditions.js';
import { parseListQuery, projectFields, type ListQuery } from '../resource/querystring.js';
import { registerMethods } from '../resource/routes.js';
import type { Filter, Scope, StorageSession, StoredObject, Tombstone } from '../storage/types.js';
import { batchSession } from '../request-context.js';
import { HISTORY_RESOURCE, READ_PRINCIPALS_FIELD, type HistoryDrainer } from './drainer.js';

/** Fields entries may be filtered and sorted on (`target` and any path below it). */
const ENTRY_FIELDS = new Set([
  'id', 'last_modified', 'deleted', 'user_id', 'uri', 'action', 'date', 'resource_name',
  'bucket_id', 'collection_id', 'group_id', 'record_id', 'target',
]);
const ID_FIELDS = new Set(['bucket_id', 'collection_id', 'group_id', 'record_id']);

function knownField(field: string): boolean {
  const [head] = field.split('.');
  return head !== undefined && ENTRY_FIELDS.has(head) && (head === 'target' || !field.includes('.'));
}

/** Ids are strings: `record_id=1` means "1" (as Kinto coerces numeric id filters). */
function stringIds(value: unknown): unknown {
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return value.map((item) => (typeof item === 'number' ? String(item) : item));
  return value;
}

function checkQuery(query: ListQuery): Filter[] {
  for (const filter of query.filters) {
    if (!knownField(filter.field)) throw invalidParameter('querystring', filter.field, `Unknown filter field '${filter.field}'`);
  }
  for (const sort of query.sorting) {
    if (!knownField(sort.field)) throw invalidParameter('querystring', '_sort', `Unknown sort field '${sort.field}'`);
  }
  return query.filters.map((filter) => (ID_FIELDS.has(filter.field) ? { ...filter, value: stringIds(filter.value) } : filter));
}

function withoutPrincipals(entry: StoredObject | Tombstone): Record<string, unknown> {
  const { [READ_PRINCIPALS_FIELD]: _hidden, ...shown } = entry as Record<string, unknown>;
  return shown;
}

export function registerHistoryRoutes(app: FastifyInstance, drainer: HistoryDrainer): void {
  const services = app.services;
  const { storage, settings, events } = services;

  /** 'all' for bucket readers/writers (writers only for DELETE), else the caller's own share. */
  async function access(session: StorageSession, identity: Identity, bucketUri: string, write: boolean): Promise<'all' | 'shared'> {
    const acl = (await session.permissions.get([bucketUri])).get(bucketUri) ?? {};
    const holds = (principals: readonly string[] | undefined) => principals?.some((principal) => identity.principals.includes(principal)) ?? false;
    if (holds(acl.write) || holds(settings.bucket_write_principals)) return 'all';
    if (!write && (holds(acl.read) || holds(settings.bucket_read_principals))) return 'all';
    return 'shared';
  }

  async function handle(request: FastifyRequest, reply: FastifyReply, method: 'GET' | 'HEAD' | 'DELETE') {
    const identity = request.identity;
    const bucketId = (request.params as Record<string, string>).bucket_id ?? '';
    const bucketUri = `/buckets/${bucketId}`;
    const query = parseListQuery(splitUrl(request.raw.url).query);
    const userFilters = checkQuery(query);
    const preconditions = parsePreconditions(request.headers);
    const scope: Scope = { resourceName: HISTORY_RESOURCE, parentId: bucketUri };

    // Read your writes: what committed before this request is moved into the history first.
    // Not inside a batch, whose open transaction the drain would have to wait for; a batch
    // reads the history as the drains after the previous requests left it.
    if (!batchSession(request)) await drainer.drainPending(bucketUri);

    return events.withSession(request, storage, method === 'DELETE' ? 'write' : 'read', async (session) => {
      const visibility = await access(session, identity, bucketUri, method === 'DELETE');
      const filters = [...userFilters];
      if (visibility === 'shared') {
        if (method === 'DELETE') throw denied(services, identity);
        const shared: Filter = { field: READ_PRINCIPALS_FIELD, operator: 'contains_any', value: identity.principals };
        // As on any plural endpoint, no access at all is refused (401/403), not an empty list.
        if ((await session.objects.count(scope, [shared])) === 0) throw denied(services, identity);
        filters.push(shared);
      }
      validateId(bucketId);
      if (!(await session.objects.get({ resourceName: 'bucket', parentId: '' }, bucketId))) {
        throw objectNotFound('bucket', bucketId, ERRNO.MISSING_RESOURCE);
      }
      const timestamp = await session.objects.timestamp(scope);
      const outcome = checkListPreconditions(preconditions, timestamp, method);
      setTimestampHeaders(reply, timestamp);
      if (method !== 'DELETE') setCacheHeaders(reply, 0); // entries are never cacheable (§12.5)
      if (outcome === 'not-modified') return reply.code(304).send();

      if (method === 'HEAD') return sendCount(reply, session, scope, filters);
      // Paged even when the client asks for everything: one listing stays one bounded piece of work.
      const items = await readPage(services, request, reply, session, scope, query, filters, method, settings.history_paginate_by);

      let shown: Array<Record<string, unknown>>;
      if (method === 'DELETE') {
        if (items.length === 0) return { data: [] };
        // By timestamp too: the history table's key (ids are not indexed there).
        const tombstones = await session.objects.deleteAll(scope, {
          filters: [
            { field: 'last_modified', operator: 'in', value: items.map((item) => item.last_modified) },
            { field: 'id', operator: 'in', value: items.map((item) => item.id) },
          ],
          sorting: query.sorting,
        });
        const byId = new Map(items.map((item) => [item.id, withoutPrincipals(item) as StoredObject]));
        const newest = tombstones.reduce((max, tombstone) => Math.max(max, tombstone.last_modified), timestamp);
        events.emit(session, request, {
          resourceName: HISTORY_RESOURCE,
          parentId: bucketUri,
          action: 'delete',
          timestamp: newest,
          impactedObjects: tombstones.map((tombstone) => ({ new: tombstone, old: byId.get(tombstone.id) ?? tombstone })),
        });
        setTimestampHeaders(reply, newest);
        shown = tombstones as unknown as Array<Record<string, unknown>>;
      } else {
        shown = items.map(withoutPrincipals);
        if (events.wants('read', HISTORY_RESOURCE)) {
          events.emit(session, request, { resourceName: HISTORY_RESOURCE, parentId: bucketUri, action: 'read', timestamp, impactedObjects: shown.map((entry) => ({ new: entry as StoredObject })) });
        }
      }
      return { data: query.fields ? shown.map((item) => projectFields(item, query.fields as string[])) : shown };
    });
  }

  registerMethods(app, '/v1/buckets/:bucket_id/history', {
    GET: (request: FastifyRequest, reply: FastifyReply) => handle(request, reply, request.method === 'HEAD' ? 'HEAD' : 'GET'),
    HEAD: (request: FastifyRequest, reply: FastifyReply) => handle(request, reply, 'HEAD'),
    DELETE: (request: FastifyRequest, reply: FastifyReply) => handle(request, reply, 'DELETE'),
  } as never);
}
