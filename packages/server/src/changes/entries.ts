/**
 * The entries of the change monitor (`/buckets/monitor/collections/changes/records`), as the
 * original server's `kinto-changes` plugin shapes them: one per collection,
 * `{id, last_modified, bucket, collection, host}`, where `last_modified` is the timestamp of the
 * collection's records (its ETag) and `id` the UUID written from the MD5 of `host + collection URI`,
 * so that an entry keeps its id for the life of the collection, on every server sharing `http_host`.
 *
 * Who sees what: with `changes_resources` empty, the collections whose records the caller may
 * read (read or write on the bucket or the collection, or by the `*_principals` settings); with
 * it set, exactly the named buckets' collections and the named collections, to everyone, as the
 * original plugin does.
 */
import { createHash } from 'node:crypto';
import type { PermissionSettings } from '../permission/settings.js';
import type { ListQuery } from '../engine/querystring.js';
import { compileFilters, selectObjects } from '../storage/filters/evaluate.js';
import { compareStrings } from '../storage/filters/json-order.js';
import type { Filter, Permissions, Sort } from '../storage/types.js';

export interface ChangeEntry {
  id: string;
  last_modified: number;
  bucket: string;
  collection: string;
  host: string;
}

/** The fields an entry has (filtering on another one is accepted and matches nothing, as Kinto does). */
export const ENTRY_FIELDS = ['id', 'last_modified', 'bucket', 'collection', 'host'];

export function collectionUri(bucket: string, collection: string): string {
  return `/buckets/${bucket}/collections/${collection}`;
}

/** `kinto-changes`: `str(UUID(md5(http_host + collection_uri).hexdigest()))`. */
export function entryId(host: string, bucket: string, collection: string): string {
  const hex = createHash('md5')
    .update(host + collectionUri(bucket, collection), 'utf8')
    .digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The `changes_resources` setting parsed: bucket ids whose every collection is listed, and single collections. */
export interface MonitoredResources {
  buckets: Set<string>;
  collections: Set<string>;
}

export function parseResources(uris: string[]): MonitoredResources | null {
  if (uris.length === 0) return null;
  const resources: MonitoredResources = { buckets: new Set(), collections: new Set() };
  for (const raw of uris) {
    const uri = raw.replace(/^\/v1(?=\/)/, '');
    const collection = /^\/buckets\/([^/]+)\/collections\/([^/]+)$/.exec(uri);
    const bucket = /^\/buckets\/([^/]+)$/.exec(uri);
    if (collection) resources.collections.add(collectionUri(collection[1]!, collection[2]!));
    else if (bucket) resources.buckets.add(bucket[1]!);
    else throw new Error(`changes_resources: ${raw} is neither a bucket nor a collection URI`);
  }
  return resources;
}

export function isMonitored(resources: MonitoredResources | null, bucket: string, collection: string): boolean {
  return (
    resources === null || resources.buckets.has(bucket) || resources.collections.has(collectionUri(bucket, collection))
  );
}

/** Whether `principals` may read the records of the collection, from the bucket's and the collection's ACLs. */
export function mayRead(
  settings: PermissionSettings,
  principals: string[],
  bucketAcl: Permissions | undefined,
  collectionAcl: Permissions | undefined,
): boolean {
  const holds = (list: readonly string[] | undefined) =>
    list?.some((principal) => principals.includes(principal)) ?? false;
  return (
    holds(settings.bucket_read_principals) ||
    holds(settings.bucket_write_principals) ||
    holds(settings.collection_read_principals) ||
    holds(settings.collection_write_principals) ||
    holds(bucketAcl?.read) ||
    holds(bucketAcl?.write) ||
    holds(collectionAcl?.read) ||
    holds(collectionAcl?.write)
  );
}

// ---------------------------------------------------------------------------------------------
// Filters, sorting and pages over entries in memory (built per request, never stored), by the
// storage's reference filter engine: the same meaning as a records listing's SQL.

/** Whether an entry matches every filter, the filters made ready once (a stream tries each change on them). */
export function entryMatcher(filters: readonly Filter[]): (entry: ChangeEntry) => boolean {
  return filters.length === 0 ? () => true : compileFilters(filters);
}

const ENTRY_ORDER_TIE_BREAK: Sort = { field: 'id', direction: 1 };

/**
 * The entries the query selects, sorted; a page token continues after its last entry (keyset on
 * the sort fields, then `id`, unique: two collections may share a timestamp).
 */
export function selectEntries(
  entries: ChangeEntry[],
  query: Pick<ListQuery, 'filters' | 'sorting' | 'token'>,
): ChangeEntry[] {
  const after = query.token?.lastObject;
  const [sort] = query.sorting;
  if (query.filters.length === 0 && !after && query.sorting.length === 1 && sort?.field === 'last_modified') {
    const ordered = inTimestampOrder(entries, sort.direction);
    if (ordered) return ordered;
  }
  return selectObjects(entries, {
    filters: query.filters,
    sorting: [...query.sorting, ENTRY_ORDER_TIE_BREAK],
    ...(after ? { after } : {}),
  });
}

/**
 * The entries as the store read them (by timestamp in `direction`), ties put in `id` order: what
 * sorting them would give, in one pass (10,000 sorted cost 10 ms of a 10k-collection listing).
 * Null when they are not in that order.
 */
function inTimestampOrder(entries: ChangeEntry[], direction: 1 | -1): ChangeEntry[] | null {
  const ordered = [...entries];
  let start = 0;
  for (let i = 1; i <= ordered.length; i++) {
    if (i < ordered.length) {
      const step = (ordered[i]!.last_modified - ordered[i - 1]!.last_modified) * direction;
      if (step < 0) return null;
      if (step === 0) continue;
    }
    if (i - start > 1) {
      const ties = ordered.slice(start, i).sort((a, b) => compareStrings(a.id, b.id));
      ordered.splice(start, ties.length, ...ties);
    }
    start = i;
  }
  return ordered;
}
