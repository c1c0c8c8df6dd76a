/**
 * Resource events (protocol-reference §10): what a change or a read tells its subscribers.
 * Field names of the payload stay snake_case, as Kinto sends them to its listeners.
 */
import type { StorageSession, StoredObject, Tombstone } from '../storage/types.js';

export type Action = 'create' | 'update' | 'delete' | 'read';

export const ACTIONS: readonly Action[] = ['create', 'update', 'delete', 'read'];

/** `event.payload` (§10.2): JSON-serialisable, what the Redis listener pushes. */
export interface EventPayload {
  action: Action;
  resource_name: string;
  /** The timestamp of the `(parent, resource)` collection after the change. */
  timestamp: number;
  /** Request path without `/v1` (the plural path for a POST on a plural endpoint). */
  uri: string;
  user_id: string | null;
  /** `bucket_id`, `collection_id`, `<resource>_id`...: the URL's ids. */
  [matchValue: string]: unknown;
}

/**
 * One impacted object (§10.3): `{new}` for creations and reads, `{new, old}` for updates,
 * `{new: tombstone, old}` for deletions. Objects never carry permissions.
 */
export interface ImpactedObject {
  new: StoredObject | Tombstone;
  old?: StoredObject | Tombstone;
}

export interface ResourceEvent {
  payload: EventPayload;
  /** Storage parent of the impacted objects (`/buckets/b/collections/c` for records). */
  parentId: string;
  impactedObjects: ImpactedObject[];
}

/** Which events a subscriber receives. `resources: null` = every resource. */
export interface EventFilter {
  actions: ReadonlySet<Action>;
  resources: ReadonlySet<string> | null;
}

/**
 * A subscriber of the bus. `inTransaction` runs before commit, with the request's storage
 * session: throwing rolls the request (or the whole batch) back and fails it. `afterCommit`
 * runs once the data is committed; it must not block (errors are logged, never surfaced).
 */
export interface EventSubscriber extends EventFilter {
  name: string;
  inTransaction?(events: ResourceEvent[], session: StorageSession): Promise<void>;
  afterCommit?(events: ResourceEvent[]): void;
  /** Flushes what it still holds and releases its connections (server shutdown). */
  close?(): Promise<void>;
}
