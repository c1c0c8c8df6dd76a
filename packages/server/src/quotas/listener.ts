/**
 * The quotas plugin's counter (protocol-reference §13.6), an in-transaction event subscriber, as
 * Kinto's `kinto.plugins.quotas` listener is: each change of a bucket, group, collection or
 * record updates its bucket's counters (and its collection's), and a change that takes them
 * past a limit fails with 507, rolling back the request — or the whole batch, whose events
 * arrive together before its commit.
 *
 * Counters are objects of the store (resource `quota` under the bucket: `bucket_info` and
 * `collection_<cid>`), read with `forUpdate` in the write's transaction: writers of one bucket
 * wait on its counter row (or on its `quota` scope while there is none) until the first commits,
 * then read what it left — exact under concurrent writers, on every process. Locks are always
 * taken bucket by bucket in id order, `bucket_info` before the collections in id order, and
 * only after the request's own writes, so two writers never wait on each other in a cycle.
 * Deleting a bucket drops its counters with it (deleteTree); deleting a collection subtracts
 * its counters from the bucket's and deletes them.
 */
import { ApiError, ERRNO } from '../errors.js';
import type { EventSubscriber, ImpactedObject, ResourceEvent } from '../events/types.js';
import type { ObjectStore, Scope, StorageSession } from '../storage/types.js';
import type { QuotaLimits } from './settings.js';
import { attachmentSize, objectSize } from './size.js';

export const QUOTA_RESOURCE = 'quota';
const BUCKET_INFO_ID = 'bucket_info';
const QUOTA_RESOURCES: ReadonlySet<string> = new Set(['bucket', 'group', 'collection', 'record']);

interface BucketInfo {
  collection_count: number;
  record_count: number;
  storage_size: number;
}

interface CollectionInfo {
  record_count: number;
  storage_size: number;
}

function collectionInfoId(cid: string): string {
  return `collection_${cid}`;
}

function insufficientStorage(message: string): ApiError {
  return new ApiError(507, ERRNO.FORBIDDEN, { message });
}

/** Bucket and collection ids of an event, from its storage parent (or the object for buckets). */
function idsOf(event: ResourceEvent, impacted: ImpactedObject): { bid: string; cid: string | null } {
  const name = event.payload.resource_name;
  const parts = event.parentId.split('/'); // '', 'buckets', bid, 'collections', cid
  if (name === 'bucket') return { bid: String(impacted.new.id), cid: null };
  if (name === 'collection') return { bid: parts[2]!, cid: String(impacted.new.id) };
  if (name === 'record') return { bid: parts[2]!, cid: parts[4]! };
  return { bid: parts[2]!, cid: null };
}

/** The collection an event's limits are checked against (that of its first object). */
function cidOf(event: ResourceEvent): string | null {
  const impacted = event.impactedObjects[0];
  return impacted ? idsOf(event, impacted).cid : null;
}

interface Change {
  event: ResourceEvent;
  impacted: ImpactedObject;
  cid: string | null;
}

/** A bucket's counters as the request changes them. */
interface Counters {
  bucket: BucketInfo;
  collections: Map<string, { info: CollectionInfo; existed: boolean; deleted: boolean }>;
  /** The request deleted the bucket (and did not re-create it): its counters went with it. */
  bucketDeleted: boolean;
}

type SizeOf = (object: unknown) => number;

/** `countAttachments`: a record's size includes its file's. */
export function createQuotaListener(
  limits: QuotaLimits,
  options: { countAttachments?: boolean } = {},
): EventSubscriber {
  const sizeOf: SizeOf = options.countAttachments
    ? (object: unknown) => objectSize(object) + attachmentSize(object)
    : objectSize;
  return {
    name: 'quotas',
    actions: new Set(['create', 'update', 'delete'] as const),
    resources: QUOTA_RESOURCES,
    async inTransaction(events: ResourceEvent[], session: StorageSession): Promise<void> {
      const byBucket = new Map<string, Change[]>();
      for (const event of events) {
        for (const impacted of event.impactedObjects) {
          const { bid, cid } = idsOf(event, impacted);
          let changes = byBucket.get(bid);
          if (!changes) {
            changes = [];
            byBucket.set(bid, changes);
          }
          changes.push({ event, impacted, cid });
        }
      }
      // Bucket by bucket in id order: the lock order every writer follows.
      for (const bid of [...byBucket.keys()].sort()) {
        await applyToBucket(session.objects, bid, byBucket.get(bid)!, limits, sizeOf);
      }
    },
  };
}

async function applyToBucket(
  objects: ObjectStore,
  bid: string,
  changes: Change[],
  limits: QuotaLimits,
  sizeOf: SizeOf,
): Promise<void> {
  const scope: Scope = { resourceName: QUOTA_RESOURCE, parentId: `/buckets/${bid}` };
  const counters = await readCounters(objects, scope, changes);
  let current: ResourceEvent | null = null;
  for (const change of changes) {
    // Limits are checked once per event (all its objects applied), as Kinto does.
    if (current !== null && current !== change.event) checkLimits(limits, bid, counters, cidOf(current));
    current = change.event;
    applyChange(counters, change, limits, bid, sizeOf);
  }
  if (current !== null) checkLimits(limits, bid, counters, cidOf(current));
  if (counters.bucketDeleted) return;

  await objects.update(scope, BUCKET_INFO_ID, { ...counters.bucket });
  for (const [cid, entry] of counters.collections) {
    if (!entry.deleted) await objects.update(scope, collectionInfoId(cid), { ...entry.info });
    else if (entry.existed) {
      await objects.delete(scope, collectionInfoId(cid));
      // No tombstones pile up for counters nobody polls.
      await objects.purgeDeleted(scope);
    }
  }
}

/** The bucket's counters and those of the collections `changes` touch, read locked in id order. */
async function readCounters(objects: ObjectStore, scope: Scope, changes: Change[]): Promise<Counters> {
  const stored = await objects.get(scope, BUCKET_INFO_ID, { forUpdate: true });
  const bucket: BucketInfo = {
    collection_count: Number(stored?.collection_count ?? 0),
    record_count: Number(stored?.record_count ?? 0),
    storage_size: Number(stored?.storage_size ?? 0),
  };
  const collectionIds = [...new Set(changes.flatMap((change) => (change.cid === null ? [] : [change.cid])))].sort();
  const collections: Counters['collections'] = new Map();
  for (const cid of collectionIds) {
    const row = await objects.get(scope, collectionInfoId(cid), { forUpdate: true });
    collections.set(cid, {
      info: { record_count: Number(row?.record_count ?? 0), storage_size: Number(row?.storage_size ?? 0) },
      existed: row !== null,
      deleted: false,
    });
  }
  return { bucket, collections, bucketDeleted: false };
}

/** One object's change applied to the counters (a 507 when the object alone is too large). */
function applyChange(counters: Counters, change: Change, limits: QuotaLimits, bid: string, sizeOf: SizeOf): void {
  const { event, impacted, cid } = change;
  const { action, resource_name: name } = event.payload;
  if (name === 'bucket' && action === 'delete') {
    // deleteTree took the counters with the bucket.
    counters.bucket = { collection_count: 0, record_count: 0, storage_size: 0 };
    for (const entry of counters.collections.values()) entry.info = { record_count: 0, storage_size: 0 };
    counters.bucketDeleted = true;
    return;
  }
  if (name === 'bucket' && action === 'create') counters.bucketDeleted = false;
  const { bucket } = counters;
  const collection = cid === null ? null : counters.collections.get(cid)!;
  const oldSize = impacted.old ? sizeOf(impacted.old) : 0;
  const newSize = action === 'delete' ? 0 : sizeOf(impacted.new);
  if (action !== 'delete') {
    const perItem = limits.collection(bid, cid, 'max_bytes_per_item') ?? limits.bucket(bid, 'max_bytes_per_item');
    // Kinto's message, unclosed parenthesis included.
    if (perItem !== null && newSize > perItem)
      throw insufficientStorage(`Maximum bytes per object exceeded (${newSize} > ${perItem} Bytes.`);
  }
  bucket.storage_size += newSize - oldSize;
  if (name === 'record' || name === 'collection') collection!.info.storage_size += newSize - oldSize;
  if (name === 'record') {
    const delta = action === 'create' ? 1 : action === 'delete' ? -1 : 0;
    bucket.record_count += delta;
    collection!.info.record_count += delta;
  }
  if (name === 'collection' && action === 'create') {
    bucket.collection_count += 1;
    collection!.deleted = false;
  }
  if (name === 'collection' && action === 'delete') {
    // Its records went with it (deleteTree), unannounced: take them off with its counters.
    bucket.collection_count -= 1;
    bucket.record_count -= collection!.info.record_count;
    bucket.storage_size -= collection!.info.storage_size;
    collection!.info = { record_count: 0, storage_size: 0 };
    collection!.deleted = true;
  }
}

/** A 507 when the bucket's counters, or collection `cid`'s, are past a limit. */
function checkLimits(limits: QuotaLimits, bid: string, counters: Counters, cid: string | null): void {
  const { bucket } = counters;
  const collection = cid === null ? { record_count: 0, storage_size: 0 } : counters.collections.get(cid)!.info;
  const maxBytes = limits.bucket(bid, 'max_bytes');
  if (maxBytes !== null && bucket.storage_size > maxBytes) {
    // Kinto's message, trailing space included.
    throw insufficientStorage(`Bucket maximum total size exceeded (${bucket.storage_size} > ${maxBytes} Bytes). `);
  }
  const maxItems = limits.bucket(bid, 'max_items');
  if (maxItems !== null && bucket.record_count > maxItems) {
    throw insufficientStorage(
      `Bucket maximum number of objects exceeded (${bucket.record_count} > ${maxItems} objects).`,
    );
  }
  const collectionMaxBytes = limits.collection(bid, cid, 'max_bytes');
  if (collectionMaxBytes !== null && collection.storage_size > collectionMaxBytes) {
    throw insufficientStorage(
      `Collection maximum size exceeded (${collection.storage_size} > ${collectionMaxBytes} Bytes).`,
    );
  }
  const collectionMaxItems = limits.collection(bid, cid, 'max_items');
  if (collectionMaxItems !== null && collection.record_count > collectionMaxItems) {
    throw insufficientStorage(
      `Collection maximum number of objects exceeded (${collection.record_count} > ${collectionMaxItems} objects).`,
    );
  }
}
