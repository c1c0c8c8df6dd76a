/**
 * `GET|HEAD|DELETE /buckets/<bid>/history` (protocol-reference §13.3; DELETE since 1.13), a
 * read-only resource of the generic engine: entries are written by the history listener only.
 * Listing parameters as on any plural endpoint, limited to the entry fields. Bucket readers and
 * writers see every entry; others only the entries recorded as readable by one of their
 * principals. DELETE is for bucket writers.
 */
import type { PermissionSettings } from '../permission/settings.js';
import type { HistorySettings } from './settings.js';
import { invalidParameter } from '../errors.js';
import { validateId } from '../engine/body.js';
import type { AccessPolicy, ResourceDefinition } from '../engine/definition.js';
import type { ListQuery } from '../engine/querystring.js';
import type { Filter } from '../storage/types.js';
import { bucketResource } from '../resources/buckets.js';
import { HISTORY_RESOURCE, READ_PRINCIPALS_FIELD, type HistoryDrainer } from './drainer.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = PermissionSettings & HistorySettings;

/** Fields entries may be filtered and sorted on (`target` and any path below it). */
const ENTRY_FIELDS = new Set([
  'id',
  'last_modified',
  'deleted',
  'user_id',
  'uri',
  'action',
  'date',
  'resource_name',
  'bucket_id',
  'collection_id',
  'group_id',
  'record_id',
  'target',
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
    if (!knownField(filter.field))
      throw invalidParameter('querystring', filter.field, `Unknown filter field '${filter.field}'`);
  }
  for (const sort of query.sorting) {
    if (!knownField(sort.field)) throw invalidParameter('querystring', '_sort', `Unknown sort field '${sort.field}'`);
  }
  return query.filters.map((filter) =>
    ID_FIELDS.has(filter.field) ? { ...filter, value: stringIds(filter.value) } : filter,
  );
}

/** Entries as answered: without the principals recorded to decide who may read them. */
function withoutPrincipals(entry: Record<string, unknown>): Record<string, unknown> {
  const { [READ_PRINCIPALS_FIELD]: _hidden, ...shown } = entry;
  return shown;
}

/** All entries for bucket readers and writers (writers only for DELETE), else the caller's own share. */
function historyAccess(settings: ModuleSettings): AccessPolicy {
  const never = async () => false;
  return {
    can: never,
    canCreate: never,
    async list({ session, identity }, def, parent, permission) {
      const bucket = parent!;
      const acl = (await session.permissions.get([bucket.uri])).get(bucket.uri) ?? {};
      const holds = (principals: readonly string[] | undefined) =>
        principals?.some((principal) => identity.principals.includes(principal)) ?? false;
      let shared: Filter[] = [];
      if (
        !holds(acl.write) &&
        !holds(settings.bucket_write_principals) &&
        !(permission === 'read' && (holds(acl.read) || holds(settings.bucket_read_principals)))
      ) {
        if (permission === 'write') return { kind: 'none' };
        shared = [{ field: READ_PRINCIPALS_FIELD, operator: 'contains_any', value: identity.principals }];
        // As on any plural endpoint, no access at all is refused (401/403), not an empty list.
        if ((await session.objects.count({ resourceName: def.name, parentId: bucket.uri }, shared)) === 0)
          return { kind: 'none' };
      }
      validateId(bucket.id); // after the refusal: a caller who may not read learns nothing
      return shared.length ? { kind: 'filtered', filters: shared } : { kind: 'all' };
    },
  };
}

export function createHistoryResource(settings: ModuleSettings, drainer: HistoryDrainer): ResourceDefinition {
  return {
    name: HISTORY_RESOURCE,
    plural: 'history',
    parent: bucketResource,
    permissions: [],
    endpoints: { plural: ['GET', 'HEAD', 'DELETE'], object: [] },
    cascades: false,
    cacheable: false, // entries are never cacheable (§12.5)
    keyedByTimestamp: true,
    // Paged even when the client asks for everything: one listing stays one bounded piece of work.
    pageSize: () => settings.history_paginate_by,
    access: historyAccess(settings),
    async prepareList({ request, work }, query) {
      const filters = checkQuery(query);
      // Read your writes: what committed before this request is moved into the history first.
      // Not inside a batch, whose open transaction the drain would have to wait for; a batch
      // reads the history as the drains after the previous requests left it.
      if (!work.isOpen) await drainer.drainPending(`/buckets/${request.params.bucket_id ?? ''}`);
      return filters;
    },
    present: withoutPrincipals,
  };
}
