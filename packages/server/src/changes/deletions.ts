/**
 * Deleted collections on the change monitor (issue 29): an entry the clients understand, in the
 * spirit of Kinto's tombstones — the collection's entry with `deleted: true` and a
 * `last_modified` above every timestamp the collection served:
 *
 *   {"id": "<the collection's entry id>", "last_modified": 1732550000999, "bucket": "b",
 *    "collection": "c", "host": "", "deleted": true}
 *
 * Listed, as tombstones are, only to a poll with `_since` (or `_before`) and to streams; a client
 * syncing the monitor as a Kinto collection (kinto.js, Quire's client) then drops its copy of the
 * entry, and one that follows the collection learns it is gone. A client that knows nothing of
 * the field reads an entry newer than its copy, pulls the collection, and is told it is gone
 * (403/404) — what it would have met at its next sync anyway.
 *
 * Who sees it: whoever could read the collection when it was deleted (read or write on it or its
 * bucket — a group's members as they were then —, or by the `*_principals` settings). Those ACLs
 * are gone with the collection, so they are read, before the deletion commits, from the store as
 * others see it (another session: the deleting transaction's own view has them deleted already),
 * and kept with the entry (`readers`).
 *
 * Stored as objects of resource `monitor-deletion` in one scope (parent `''`): each deletion
 * takes the scope's next timestamp, so they are unique, ordered, and read by `_since` through the
 * scope index. Their id is the entry id; a collection created again drops its deletion entry
 * (its live entry replaces it, once its records' timestamp passes it).
 */
import type { ResourceEvent } from '../events/types.js';
import type { Permissions, Scope, Storage, StorageSession, StoredObject } from '../storage/types.js';
import { collectionUri, type ChangeEntry, isMonitored, type MonitoredResources } from './entries.js';
import type { EntryFactory } from './entry-factory.js';

export const DELETIONS_SCOPE: Scope = { resourceName: 'monitor-deletion', parentId: '' };

/** A deletion entry and who may see it. */
export interface Deletion {
  entry: ChangeEntry & { deleted: true };
  readers: string[];
}

/** ACLs as a stream's `offer` takes them: the readers stand for the bucket's. */
export function deletionAcl(readers: readonly string[]): Permissions {
  return { read: [...readers] };
}

function readersOf(...acls: Array<Permissions | undefined>): string[] {
  const readers = new Set<string>();
  for (const acl of acls) for (const principal of [...(acl?.read ?? []), ...(acl?.write ?? [])]) readers.add(principal);
  return [...readers].sort();
}

const GROUP_URI = /^\/buckets\/([^/]+)\/groups\/([^/]+)$/;

async function groupMembers(session: StorageSession, groups: Set<string>): Promise<Map<string, string[]>> {
  const members = new Map<string, string[]>();
  for (const uri of groups) {
    const [, bucket, group] = GROUP_URI.exec(uri)!;
    const object = await session.objects.get({ resourceName: 'group', parentId: `/buckets/${bucket}` }, group!);
    if (Array.isArray(object?.members)) members.set(uri, object.members.filter((member): member is string => typeof member === 'string'));
  }
  return members;
}

/**
 * The collections a request deleted (directly, or with their bucket), as the store showed them
 * before: read beside the transaction where the store can (`concurrentReads`); on a store of one
 * connection (PGlite, in-memory SQLite), from the transaction itself, where a deleted bucket's
 * ACLs and collections are gone already (its collections' deletions are then not announced).
 */
async function deletedCollections(storage: Storage, session: StorageSession, events: ResourceEvent[], resources: MonitoredResources | null): Promise<Array<{ bucket: string; collection: string; readers: string[] }>> {
  const collections: Array<[string, string]> = [];
  const buckets: string[] = [];
  for (const { payload, impactedObjects } of events) {
    if (payload.action !== 'delete') continue;
    for (const { new: object } of impactedObjects) {
      if (payload.resource_name === 'bucket') buckets.push(String(object.id));
      else if (payload.resource_name === 'collection' && typeof payload.bucket_id === 'string') collections.push([payload.bucket_id, String(object.id)]);
    }
  }
  if (collections.length === 0 && buckets.length === 0) return [];
  // Another session: the deleting transaction has the ACLs (and a bucket's collections) deleted already.
  const before = <T>(fn: (session: StorageSession) => Promise<T>) => (storage.concurrentReads ? storage.read(fn) : fn(session));
  return before(async (session) => {
    const found = [...collections];
    if (buckets.length > 0) {
      const rows = await session.objects.collectionTimestamps({ within: { buckets, collections: [] } });
      for (const row of rows) found.push([row.bucket, row.collection]);
    }
    const uris = new Set<string>();
    for (const [bucket, collection] of found) uris.add(`/buckets/${bucket}`).add(collectionUri(bucket, collection));
    const acls = await session.permissions.get([...uris]);
    const seen = new Set<string>();
    const result: Array<{ bucket: string; collection: string; readers: string[] }> = [];
    for (const [bucket, collection] of found) {
      const uri = collectionUri(bucket, collection);
      if (seen.has(uri) || !isMonitored(resources, bucket, collection)) continue;
      seen.add(uri);
      result.push({ bucket, collection, readers: readersOf(acls.get(`/buckets/${bucket}`), acls.get(uri)) });
    }
    // A group may go with its bucket: its members as they are now stand for it.
    const members = await groupMembers(session, new Set(result.flatMap(({ readers }) => readers.filter((reader) => GROUP_URI.test(reader)))));
    for (const item of result) {
      const expanded = new Set(item.readers);
      for (const reader of item.readers) for (const member of members.get(reader) ?? []) expanded.add(member);
      item.readers = [...expanded].sort();
    }
    return result;
  });
}

/**
 * In the creating transaction: a new collection's records timestamp, stored from the start (also
 * while the monitor is off), so that the monitor's reads by timestamp find it. Returns the
 * collections created.
 */
export async function storeRecordsTimestamps(session: StorageSession, events: ResourceEvent[]): Promise<Array<[string, string]>> {
  const created: Array<[string, string]> = [];
  for (const { payload, impactedObjects } of events) {
    if (payload.resource_name !== 'collection' || payload.action !== 'create' || typeof payload.bucket_id !== 'string') continue;
    for (const { new: object } of impactedObjects) {
      created.push([payload.bucket_id, String(object.id)]);
      await session.objects.timestamp({ resourceName: 'record', parentId: collectionUri(payload.bucket_id, String(object.id)) });
    }
  }
  return created;
}

/**
 * In the deleting transaction: stores a deletion entry per collection the request deleted, and
 * drops those of collections it created. Returns the entries stored.
 */
export async function recordDeletions(
  storage: Storage,
  session: StorageSession,
  events: ResourceEvent[],
  factory: EntryFactory,
  resources: MonitoredResources | null,
): Promise<Deletion[]> {
  for (const [bucket, collection] of await storeRecordsTimestamps(session, events)) {
    const id = factory.entry(bucket, collection, 0).id;
    if (await session.objects.get(DELETIONS_SCOPE, id)) await session.objects.delete(DELETIONS_SCOPE, id);
  }
  const deleted = await deletedCollections(storage, session, events, resources);
  if (deleted.length === 0) return [];
  const stored = await session.objects.insertMany(
    DELETIONS_SCOPE,
    deleted.map(({ bucket, collection, readers }) => ({ id: factory.entry(bucket, collection, 0).id, data: { bucket, collection, readers } })),
  );
  return stored.map((object) => toDeletion(factory, object));
}

export function toDeletion(factory: EntryFactory, object: StoredObject): Deletion {
  const entry = factory.entry(String(object.bucket), String(object.collection), object.last_modified);
  return { entry: { ...entry, deleted: true }, readers: Array.isArray(object.readers) ? (object.readers as string[]) : [] };
}
