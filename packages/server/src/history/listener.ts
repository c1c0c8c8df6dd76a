/**
 * The history plugin's writer (protocol-reference §13.3), an event subscriber in two halves:
 *
 * - in the transaction, it appends the request's entries to the outbox, one row per bucket,
 *   with a snapshot of the permissions of the objects concerned (one statement, which
 *   touches no shared row: writes to different collections of a bucket never wait on each
 *   other because of history);
 * - after commit, it asks the drainer (drainer.ts) to move them into the bucket's history,
 *   where they get their timestamps. Readers drain first, so a committed change is always
 *   in the history its author reads next.
 */
import type { Settings } from '../config.js';
import type { EventSubscriber, ResourceEvent } from '../events/types.js';
import type { StorageSession } from '../storage/types.js';
import { HISTORY_TOPIC, type HistoryDrainer, type PendingEntry } from './drainer.js';

const PLURALS: Record<string, string> = { bucket: 'buckets', collection: 'collections', group: 'groups', record: 'records' };

export const HISTORY_RESOURCES: ReadonlySet<string> = new Set(Object.keys(PLURALS));

/** `2026-11-21T21:54:56.205000+00:00`: ISO-8601 UTC with microseconds, as Kinto writes `date`. */
function isoDate(now: Date): string {
  return now.toISOString().replace(/Z$/, '000+00:00');
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

export function createHistoryListener(settings: Settings, drainer: HistoryDrainer): EventSubscriber {
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

  /** The entry as the change left it; its permissions are added when it is moved (drainer.ts). */
  function pendingEntryOf(target: Target, date: string): PendingEntry {
    const { payload } = target.event;
    const resourceName = payload.resource_name;
    return {
      uri: target.uri,
      readerUris: [target.bucketUri, ...(target.collectionUri !== null ? [target.collectionUri] : []), target.uri],
      entry: {
        action: payload.action,
        resource_name: resourceName,
        uri: target.uri,
        user_id: payload.user_id,
        date,
        target: { data: target.data },
        ...(target.collectionUri !== null ? { collection_id: target.collectionUri.split('/')[4] } : {}),
        [`${resourceName}_id`]: target.id,
      },
    };
  }

  return {
    name: 'history',
    actions: new Set(['create', 'update', 'delete']),
    resources: HISTORY_RESOURCES,
    // All the events of a request (a whole batch) at once: one outbox statement.
    async inTransaction(events: ResourceEvent[], session: StorageSession) {
      const targets = events.flatMap(targetsOf);
      if (targets.length === 0) return;
      const date = isoDate(new Date());
      const byBucket = new Map<string, PendingEntry[]>();
      for (const target of targets) {
        let entries = byBucket.get(target.bucketUri);
        if (!entries) byBucket.set(target.bucketUri, (entries = []));
        entries.push(pendingEntryOf(target, date));
      }
      await session.enqueue(
        HISTORY_TOPIC,
        [...byBucket].map(([bucketUri, entries]) => ({
          key: bucketUri,
          payload: entries,
          permissionsOf: [...new Set(entries.flatMap((entry) => entry.readerUris))],
        })),
      );
    },
    afterCommit(events: ResourceEvent[]) {
      const buckets = new Set(events.flatMap(targetsOf).map((target) => target.bucketUri));
      for (const bucketUri of buckets) drainer.schedule(bucketUri);
    },
    close: () => drainer.close(),
  };
}
