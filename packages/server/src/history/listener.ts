/**
 * The history plugin's writer (protocol-reference §13.3): an in-transaction subscriber that
 * stores one entry per impacted bucket/collection/group/record, in the bucket's `history`
 * scope. It runs before commit, so an entry exists exactly when its change does.
 *
 * Cost per request (a whole batch is one): one ACL read and one insert statement per bucket
 * for all its entries, whose timestamps follow the bucket's history sequence like any object's.
 */
import { randomUUID } from 'node:crypto';
import type { Settings } from '../config.js';
import type { EventSubscriber, ResourceEvent } from '../events/types.js';
import type { Permissions, StorageSession } from '../storage/types.js';

export const HISTORY_RESOURCE = 'history';

/**
 * Principals who may read an entry, kept in the entry itself (one insert, no ACE rows). The
 * leading underscore keeps it out of reach of filters (reserved `_` parameters are ignored);
 * the view strips it from every answer.
 */
export const READ_PRINCIPALS_FIELD = '_read_principals';

const PLURALS: Record<string, string> = { bucket: 'buckets', collection: 'collections', group: 'groups', record: 'records' };

export const HISTORY_RESOURCES: ReadonlySet<string> = new Set(Object.keys(PLURALS));

/** `2026-11-21T21:54:56.205000+00:00`: ISO-8601 UTC with microseconds, as Kinto writes `date`. */
function isoDate(now: Date): string {
  return now.toISOString().replace(/Z$/, '000+00:00');
}

function readersOf(acl: Permissions | undefined): string[] {
  return [...(acl?.read ?? []), ...(acl?.write ?? [])];
}

interface Target {
  event: ResourceEvent;
  uri: string;
  id: string;
  data: Record<string, unknown>;
  bucketUri: string;
  /** The record's collection URI (record entries only). */
  collectionUri: string | null;
}

export function createHistoryListener(settings: Settings): EventSubscriber {
  const excludedResources = new Set(settings.history_exclude_resources);
  const excludedUsers = new Set(settings.history_exclude_user_ids);

  /** The objects of an event that get an entry. */
  function targetsOf(event: ResourceEvent): Target[] {
    const { payload, parentId } = event;
    const resourceName = payload.resource_name;
    const plural = PLURALS[resourceName];
    if (!plural) return [];
    if (payload.user_id !== null && excludedUsers.has(payload.user_id)) return [];
    // A deleted bucket takes its history with it (cascade): nothing left to record into.
    if (resourceName === 'bucket' && payload.action === 'delete') return [];

    // parentId: '' (buckets), '/buckets/b' (collections, groups), '/buckets/b/collections/c' (records).
    const parentBucket = parentId.split('/')[2];
    const collectionUri = resourceName === 'record' ? parentId : null;
    if (collectionUri !== null && excludedResources.has(collectionUri)) return [];
    const targets: Target[] = [];
    for (const impacted of event.impactedObjects) {
      const id = String(impacted.new.id);
      const uri = `${parentId}/${plural}/${id}`;
      // Computed per object: a grouped event's payload is the first request's.
      const bucketUri = `/buckets/${resourceName === 'bucket' ? id : parentBucket}`;
      if (excludedResources.has(bucketUri) || excludedResources.has(uri)) continue;
      targets.push({ event, uri, id, data: impacted.new as unknown as Record<string, unknown>, bucketUri, collectionUri });
    }
    return targets;
  }

  function entryOf(target: Target, acls: Map<string, Permissions>, date: string): Record<string, unknown> {
    const { payload } = target.event;
    const resourceName = payload.resource_name;
    // Visible to whoever could read the bucket, the collection or the object at that time.
    const readers = new Set([
      ...readersOf(acls.get(target.bucketUri)),
      ...(target.collectionUri !== null ? readersOf(acls.get(target.collectionUri)) : []),
      ...readersOf(acls.get(target.uri)),
    ]);
    return {
      action: payload.action,
      resource_name: resourceName,
      uri: target.uri,
      user_id: payload.user_id,
      date,
      target: { data: target.data, permissions: acls.get(target.uri) ?? {} },
      ...(target.collectionUri !== null ? { collection_id: target.collectionUri.split('/')[4] } : {}),
      [`${resourceName}_id`]: target.id,
      [READ_PRINCIPALS_FIELD]: [...readers].sort(),
    };
  }

  return {
    name: 'history',
    actions: new Set(['create', 'update', 'delete']),
    resources: HISTORY_RESOURCES,
    // All the events of a request (a whole batch) at once: one ACL read, one insert per bucket.
    async inTransaction(events: ResourceEvent[], session: StorageSession) {
      const targets = events.flatMap(targetsOf);
      if (targets.length === 0) return;
      const uris = new Set<string>();
      for (const target of targets) {
        uris.add(target.uri).add(target.bucketUri);
        if (target.collectionUri !== null) uris.add(target.collectionUri);
      }
      const acls = await session.getPermissions([...uris]);
      const date = isoDate(new Date());
      const byBucket = new Map<string, Array<{ id: string; data: Record<string, unknown> }>>();
      for (const target of targets) {
        const entries = byBucket.get(target.bucketUri) ?? [];
        entries.push({ id: randomUUID(), data: entryOf(target, acls, date) });
        byBucket.set(target.bucketUri, entries);
      }
      for (const [bucketUri, entries] of byBucket) {
        await session.insertMany({ resourceName: HISTORY_RESOURCE, parentId: bucketUri }, entries);
      }
    },
  };
}
