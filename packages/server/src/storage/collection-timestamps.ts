/**
 * What the two SQL backends share for the change monitor's reads (`objects.collectionTimestamps`,
 * `permissions.containersOf`): the shapes of URIs they read, in one place.
 */
import type { CollectionTimestampsQuery } from './types.js';

/**
 * SQL condition (both dialects) true for the URIs of buckets, collections and groups, false for
 * records: the condition of the partial index `access_control_entries_containers`, which a query
 * must repeat word for word for the planner to take it.
 */
export const CONTAINER_DEPTH = "length(object_id) - length(replace(object_id, '/', '')) IN (2, 4)";

const BUCKET_URI = /^\/buckets\/[^/]+$/;
const COLLECTION_URI = /^\/buckets\/([^/]+)\/collections\/([^/]+)$/;

/** A bucket or collection URI (not a group's). */
export function isContainerUri(uri: string): boolean {
  return BUCKET_URI.test(uri) || COLLECTION_URI.test(uri);
}

/** `/buckets/b/collections/c` → `['b', 'c']`; anything else → null. */
export function parseCollectionUri(uri: string): [bucket: string, collection: string] | null {
  const match = COLLECTION_URI.exec(uri);
  return match ? [match[1]!, match[2]!] : null;
}

/**
 * The collections of `within` as the statements take them: bucket URIs, and the single
 * collections outside those buckets as parallel lists of parent URIs and ids.
 */
export function splitWithin(within: NonNullable<CollectionTimestampsQuery['within']>): {
  buckets: string[];
  parents: string[];
  ids: string[];
} {
  const buckets = [...new Set(within.buckets)].map((bucket) => `/buckets/${bucket}`);
  const inBuckets = new Set(buckets);
  const parents: string[] = [];
  const ids: string[] = [];
  const seen = new Set<string>();
  for (const [bucket, collection] of within.collections) {
    const parent = `/buckets/${bucket}`;
    const key = `${parent}/collections/${collection}`;
    if (inBuckets.has(parent) || seen.has(key)) continue;
    seen.add(key);
    parents.push(parent);
    ids.push(collection);
  }
  return { buckets, parents, ids };
}

/** `/buckets/b` → `b`. */
export function bucketIdOf(bucketUri: string): string {
  return bucketUri.slice('/buckets/'.length);
}

/** The URI of a collection's records scope, the second key of the order they are read in. */
export function collectionScopeUri(collection: { bucket: string; collection: string }): string {
  return `/buckets/${collection.bucket}/collections/${collection.collection}`;
}
