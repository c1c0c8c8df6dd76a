/**
 * The contract of the permissions facet (`PermissionStore`): access control entries, group
 * memberships, and the permission entries of `GET /permissions`. Part of the storage contract
 * (types.ts).
 */
import type { Filter, Sort } from './object-store.js';

/** Access control entries of one object: permission name → principals. */
export type Permissions = Record<string, string[]>;

/**
 * Access control entries, keyed by object URI (e.g. `/buckets/b/collections/c`), group
 * memberships, and the queries over them.
 */
export interface PermissionStore {
  /**
   * ACEs of several objects at once (missing objects map to `{}`; principals sorted). In a
   * transaction, an ACL it already read or wrote comes from memory: what it saw and left.
   */
  get(uris: string[]): Promise<Map<string, Permissions>>;

  /** Replaces every ACE of the object; permissions with empty lists are dropped. */
  set(uri: string, permissions: Permissions): Promise<void>;

  /**
   * Deletes the ACEs and group memberships of the objects whose URI is `uri` or starts with
   * `uri + '/'`; with `itself: false`, those of `uri` itself stay.
   */
  deleteTree(uri: string, options?: { itself?: boolean }): Promise<void>;

  /** Replaces the members of the group at `groupUri` (principal strings). */
  setGroupMembers(groupUri: string, members: string[]): Promise<void>;

  /** URIs of the groups having one of `principals` as a member. */
  groupsOf(principals: string[]): Promise<string[]>;

  /**
   * Ids of the objects directly under `parentUri` of the given child kind (URI
   * `<parentUri>/<childPath>/<id>`, e.g. childPath `records`) on which one of `principals`
   * holds one of `permissions`.
   */
  authorizedIds(parentUri: string, childPath: string, principals: string[], permissions: string[]): Promise<string[]>;

  /**
   * The change monitor: the URIs of the buckets (`/buckets/b`) and collections
   * (`/buckets/b/collections/c`) on which one of `principals` holds one of `permissions`,
   * whatever their number of records: an index leaves out the ACEs of records and groups.
   */
  containersOf(principals: string[], permissions: string[]): Promise<string[]>;

  /**
   * One entry per object on which `principals` hold a permission, directly (ACEs) or through
   * `globalGrants`, shaped as `GET /permissions` shows it (protocol-reference §9.3), then
   * filtered, sorted and cut like a listing.
   */
  entries(query: PermissionEntriesQuery): Promise<PermissionEntry[]>;
}

/** An object and what the caller may do on it: `{uri, resource_name, id, bucket_id, …, permissions}`. */
export type PermissionEntry = Record<string, unknown> & { uri: string; resource_name: string; permissions: string[] };

export interface PermissionEntriesQuery {
  principals: string[];
  /**
   * Permissions held on every live object of a kind (from settings), e.g.
   * `{ resourceName: 'record', plural: 'records', permission: 'read' }`.
   */
  globalGrants: Array<{ resourceName: string; plural: string; permission: string }>;
  /** resource name → held permission → the permissions it implies on the same object. */
  implied: Record<string, Record<string, readonly string[]>>;
  /** Entries not backed by an object (the root entry), filtered and sorted with the others. */
  extraEntries: PermissionEntry[];
  /** Filters and sorting over the entry fields; the sorting must end with a unique field (`uri`). */
  filters?: Filter[];
  sorting: Sort[];
  after?: Record<string, unknown>;
  limit?: number;
}
