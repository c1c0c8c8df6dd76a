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
 * go with the collection, so they are read in the deleting transaction just before they go
 * (`deletionCaptureExtensions`), and kept with the entry (`readers`).
 *
 * Stored as objects of resource `monitor-deletion` in one scope (parent `''`): each deletion
 * takes the scope's next timestamp, so they are unique, ordered, and read by `_since` through the
 * scope index. Their id is the entry id; a collection created again drops its deletion entry
 * (its live entry replaces it, once its records' timestamp passes it).
 */
import type { ResourceEvent } from '../events/types.js';
import type { ResourceExtension } from '../engine/extensions.js';
import type { Permissions, Scope, StorageSession, StoredObject } from '../storage/types.js';
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
    if (Array.isArray(object?.members))
      members.set(
        uri,
        object.members.filter((member): member is string => typeof member === 'string'),
      );
  }
  return members;
}

/** The collections the deleting transaction takes, and who could read them: kept per session until it commits. */
const captured = new WeakMap<StorageSession, Array<{ bucket: string; collection: string; readers: string[] }>>();

/**
 * Hooks on collections and buckets (engine/extensions.ts): in the deleting transaction, after
 * the object's own deletion and before its remains (ACLs, collections, groups) go, the
 * collections it takes and who could read them, from the transaction itself — the same on every
 * store, one connection or many.
 */
export function deletionCaptureExtensions(resources: MonitoredResources | null): ResourceExtension[] {
  const capture = async (session: StorageSession, bucket: string, collections: string[]) => {
    const monitored = collections.filter((collection) => isMonitored(resources, bucket, collection));
    if (monitored.length === 0) return;
    const bucketUri = `/buckets/${bucket}`;
    const acls = await session.permissions.get([
      bucketUri,
      ...monitored.map((collection) => collectionUri(bucket, collection)),
    ]);
    const found = monitored.map((collection) => ({
      bucket,
      collection,
      readers: readersOf(acls.get(bucketUri), acls.get(collectionUri(bucket, collection))),
    }));
    // A group may go with its bucket: its members as they are now stand for it.
    const members = await groupMembers(
      session,
      new Set(found.flatMap(({ readers }) => readers.filter((reader) => GROUP_URI.test(reader)))),
    );
    for (const item of found) {
      const expanded = new Set(item.readers);
      for (const reader of item.readers) for (const member of members.get(reader) ?? []) expanded.add(member);
      item.readers = [...expanded].sort();
    }
    captured.set(session, [...(captured.get(session) ?? []), ...found]);
  };
  return [
    {
      resource: 'collection',
      beforeRemainsDeleted: ({ session, ref }) => capture(session, ref.parentUri.slice('/buckets/'.length), [ref.id]),
    },
    {
      resource: 'bucket',
      async beforeRemainsDeleted({ session, ref }) {
        const rows = await session.objects.collectionTimestamps({ within: { buckets: [ref.id], collections: [] } });
        await capture(
          session,
          ref.id,
          rows.map((row) => row.collection),
        );
      },
    },
  ];
}

/**
 * In the creating transaction: a new collection's records timestamp, stored from the start (also
 * while the monitor is off), so that the monitor's reads by timestamp find it. Returns the
 * collections created.
 */
export async function storeRecordsTimestamps(
  session: StorageSession,
  events: ResourceEvent[],
): Promise<Array<[string, string]>> {
  const created: Array<[string, string]> = [];
  for (const { payload, impactedObjects } of events) {
    if (payload.resource_name !== 'collection' || payload.action !== 'create' || typeof payload.bucket_id !== 'string')
      continue;
    for (const { new: object } of impactedObjects) {
      created.push([payload.bucket_id, String(object.id)]);
      await session.objects.timestamp({
        resourceName: 'record',
        parentId: collectionUri(payload.bucket_id, String(object.id)),
      });
    }
  }
  return created;
}

/**
 * In the deleting transaction: stores a deletion entry per collection the request deleted, and
 * drops those of collections it created. Returns the entries stored.
 */
export async function recordDeletions(
  session: StorageSession,
  events: ResourceEvent[],
  factory: EntryFactory,
): Promise<Deletion[]> {
  for (const [bucket, collection] of await storeRecordsTimestamps(session, events)) {
    const id = factory.entry(bucket, collection, 0).id;
    if (await session.objects.get(DELETIONS_SCOPE, id)) await session.objects.delete(DELETIONS_SCOPE, id);
  }
  const seen = new Set<string>();
  const deleted = (captured.get(session) ?? []).filter(
    ({ bucket, collection }) =>
      !seen.has(collectionUri(bucket, collection)) && seen.add(collectionUri(bucket, collection)),
  );
  captured.delete(session);
  if (deleted.length === 0) return [];
  const stored = await session.objects.insertMany(
    DELETIONS_SCOPE,
    deleted.map(({ bucket, collection, readers }) => ({
      id: factory.entry(bucket, collection, 0).id,
      data: { bucket, collection, readers },
    })),
  );
  return stored.map((object) => toDeletion(factory, object));
}

export function toDeletion(factory: EntryFactory, object: StoredObject): Deletion {
  const entry = factory.entry(String(object.bucket), String(object.collection), object.last_modified);
  return {
    entry: { ...entry, deleted: true },
    readers: Array.isArray(object.readers) ? (object.readers as string[]) : [],
  };
}
