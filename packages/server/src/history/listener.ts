/**
 * The history plugin's writer (protocol-reference §13.3), an event subscriber in two halves:
 *
 * - in the transaction, it builds the request's entries, with the permissions of their
 *   objects as the transaction leaves them (from the ACLs it already read to authorise the
 *   request and wrote: no query), and appends them to the outbox, one row per bucket (one
 *   plain INSERT sent with COMMIT, which touches no shared row: writes to different
 *   collections of a bucket never wait on each other because of history);
 * - after commit, it asks the drainer (drainer.ts) to move them into the bucket's history,
 *   where they get their timestamps. Readers drain first, so a committed change is always
 *   in the history its author reads next.
 */
import type { HistorySettings } from './settings.js';
import type { EventSubscriber, ResourceEvent } from '../events/types.js';
import type { Permissions, StorageSession } from '../storage/types.js';
import { HISTORY_TOPIC, READ_PRINCIPALS_FIELD, type HistoryDrainer } from './drainer.js';

const PLURALS: Record<string, string> = {
  bucket: 'buckets',
  collection: 'collections',
  group: 'groups',
  record: 'records',
};

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

/** Who and what gets no entry (`history_exclude_user_ids`, `history_exclude_resources`). */
interface Exclusions {
  resources: ReadonlySet<string>;
  users: ReadonlySet<string>;
}

export function createHistoryListener(settings: HistorySettings, drainer: HistoryDrainer): EventSubscriber {
  const excluded: Exclusions = {
    resources: new Set(settings.history_exclude_resources),
    users: new Set(settings.history_exclude_user_ids),
  };
  /**
   * The buckets a request's entries went to, for its after-commit phase (keyed by the request's
   * first event: both phases get the same events).
   */
  const enqueuedBuckets = new WeakMap<ResourceEvent, string[]>();

  return {
    name: 'history',
    actions: new Set(['create', 'update', 'delete']),
    resources: HISTORY_RESOURCES,
    // All the events of a request (a whole batch) at once: one outbox statement.
    async inTransaction(events: ResourceEvent[], session: StorageSession) {
      const targets = requestTargets(events, excluded);
      if (targets.length === 0) return;
      const date = isoDate(new Date());
      // As this transaction leaves them; they were read to authorise it or written by it.
      const acls = await session.permissions.get([...new Set(targets.flatMap(readerUrisOf))]);
      const byBucket = new Map<string, Array<Record<string, unknown>>>();
      for (const target of targets) {
        let entries = byBucket.get(target.bucketUri);
        if (!entries) {
          entries = [];
          byBucket.set(target.bucketUri, entries);
        }
        entries.push(entryOf(target, date, acls));
      }
      await session.outbox.enqueue(
        HISTORY_TOPIC,
        [...byBucket].map(([bucketUri, entries]) => ({ key: bucketUri, payload: entries })),
      );
      enqueuedBuckets.set(events[0]!, [...byBucket.keys()]);
    },
    afterCommit(events: ResourceEvent[]) {
      for (const bucketUri of enqueuedBuckets.get(events[0]!) ?? []) drainer.schedule(bucketUri);
    },
    close: () => drainer.close(),
  };
}

/** The objects of a request's events that get an entry, in order. */
function requestTargets(events: ResourceEvent[], excluded: Exclusions): Target[] {
  let targets: Target[] = [];
  for (const event of events) {
    if (event.payload.resource_name === 'bucket' && event.payload.action === 'delete') {
      // A bucket deleted later in the request (a batch) takes the entries before it along
      // with its history; enqueued at commit, after the deletion cleared the outbox, they
      // would reach the bucket once re-created. Events are grouped as in Kinto (bus.ts): an
      // object grouped with an event that came before the deletion goes with it, even if a
      // sub-request re-created the bucket first.
      const gone = new Set(event.impactedObjects.map((impacted) => `/buckets/${String(impacted.new.id)}`));
      targets = targets.filter((target) => !gone.has(target.bucketUri));
    } else {
      targets.push(...targetsOf(event, excluded));
    }
  }
  return targets;
}

/** The objects of an event that get an entry. */
function targetsOf(event: ResourceEvent, excluded: Exclusions): Target[] {
  const { payload, parentId } = event;
  const resourceName = payload.resource_name;
  const plural = PLURALS[resourceName];
  if (!plural) return [];
  if (payload.user_id !== null && excluded.users.has(payload.user_id)) return [];

  // parentId: '' (buckets), '/buckets/b' (collections, groups), '/buckets/b/collections/c' (records).
  const parentBucket = parentId.split('/')[2];
  const collectionUri = resourceName === 'record' ? parentId : null;
  if (collectionUri !== null && excluded.resources.has(collectionUri)) return [];
  const targets: Target[] = [];
  for (const impacted of event.impactedObjects) {
    const id = String(impacted.new.id);
    const uri = `${parentId}/${plural}/${id}`;
    // Computed per object: a grouped event's payload is the first request's.
    const bucketUri = `/buckets/${resourceName === 'bucket' ? id : parentBucket}`;
    if (excluded.resources.has(bucketUri) || excluded.resources.has(uri)) continue;
    targets.push({
      event,
      uri,
      id,
      data: impacted.new as unknown as Record<string, unknown>,
      bucketUri,
      collectionUri,
    });
  }
  return targets;
}

/** Objects whose readers and writers may read the entry (§13.3): bucket, collection, itself. */
function readerUrisOf(target: Target): string[] {
  return [target.bucketUri, ...(target.collectionUri !== null ? [target.collectionUri] : []), target.uri];
}

function entryOf(target: Target, date: string, acls: Map<string, Permissions>): Record<string, unknown> {
  const { payload } = target.event;
  const resourceName = payload.resource_name;
  const readers = new Set<string>();
  for (const uri of readerUrisOf(target)) {
    const acl = acls.get(uri) ?? {};
    for (const principal of [...(acl.read ?? []), ...(acl.write ?? [])]) readers.add(principal);
  }
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
