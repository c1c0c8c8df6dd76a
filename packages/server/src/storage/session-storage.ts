/**
 * The `StorageSession` calls made on the storage itself, each in a session of its own: reads on
 * the backend's plain reads, writes in a transaction of their own. Both backends extend it and
 * only say how to run those sessions (and what else a `Storage` does).
 */
import type {
  Filter,
  ListOptions,
  OutboxInput,
  OutboxTarget,
  PermissionEntriesQuery,
  PermissionEntry,
  Permissions,
  ReadOptions,
  Scope,
  Storage,
  StorageSession,
  StoredObject,
  Tombstone,
  WriteOptions,
} from './types.js';

export abstract class SessionStorage implements Storage {
  abstract readonly backend: string;
  abstract transaction<T>(fn: (session: StorageSession) => Promise<T>): Promise<T>;
  abstract snapshot<T>(fn: (session: StorageSession) => Promise<T>): Promise<T>;
  abstract read<T>(fn: (session: StorageSession) => Promise<T>): Promise<T>;
  abstract ping(): Promise<boolean>;
  abstract flush(): Promise<void>;
  abstract close(): Promise<void>;

  /** Runs one read outside any transaction (a backend may share one session between such reads). */
  protected abstract readOnce<T>(fn: (session: StorageSession) => Promise<T>): Promise<T>;

  resourceTimestamp(scope: Scope): Promise<number> {
    return this.readOnce((session) => session.resourceTimestamp(scope));
  }

  get(scope: Scope, id: string, options?: ReadOptions): Promise<StoredObject | null> {
    return this.readOnce((session) => session.get(scope, id, options));
  }

  list(scope: Scope, options?: ListOptions): Promise<Array<StoredObject | Tombstone>> {
    return this.readOnce((session) => session.list(scope, options));
  }

  count(scope: Scope, filters?: Filter[]): Promise<number> {
    return this.readOnce((session) => session.count(scope, filters));
  }

  getPermissions(uris: string[]): Promise<Map<string, Permissions>> {
    return this.readOnce((session) => session.getPermissions(uris));
  }

  listAuthorizedIds(parentUri: string, childPath: string, principals: string[], permissions: string[]): Promise<string[]> {
    return this.readOnce((session) => session.listAuthorizedIds(parentUri, childPath, principals, permissions));
  }

  listGroupsOf(principals: string[]): Promise<string[]> {
    return this.readOnce((session) => session.listGroupsOf(principals));
  }

  listPermissionEntries(query: PermissionEntriesQuery): Promise<PermissionEntry[]> {
    return this.readOnce((session) => session.listPermissionEntries(query));
  }

  outboxKeys(topic: string, key?: string): Promise<string[]> {
    return this.readOnce((session) => session.outboxKeys(topic, key));
  }

  setGroupMembers(groupUri: string, members: string[]): Promise<void> {
    return this.transaction((session) => session.setGroupMembers(groupUri, members));
  }

  storeNonce(nonce: string, ttlSeconds: number): Promise<void> {
    return this.transaction((session) => session.storeNonce(nonce, ttlSeconds));
  }

  consumeNonce(nonce: string): Promise<boolean> {
    return this.transaction((session) => session.consumeNonce(nonce));
  }

  create(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    return this.transaction((session) => session.create(scope, id, data, options));
  }

  update(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    return this.transaction((session) => session.update(scope, id, data, options));
  }

  insertMany(scope: Scope, objects: Array<{ id: string; data: Record<string, unknown> }>): Promise<StoredObject[]> {
    return this.transaction((session) => session.insertMany(scope, objects));
  }

  importObjects(scope: Scope, objects: Array<StoredObject | Tombstone>, scopeTimestamp?: number): Promise<void> {
    return this.transaction((session) => session.importObjects(scope, objects, scopeTimestamp));
  }

  delete(scope: Scope, id: string, options?: WriteOptions): Promise<Tombstone> {
    return this.transaction((session) => session.delete(scope, id, options));
  }

  deleteAll(scope: Scope, options?: Omit<ListOptions, 'includeDeleted'>): Promise<Tombstone[]> {
    return this.transaction((session) => session.deleteAll(scope, options));
  }

  deleteTree(uri: string): Promise<void> {
    return this.transaction((session) => session.deleteTree(uri));
  }

  enqueue(topic: string, items: OutboxInput[]): Promise<void> {
    return this.transaction((session) => session.enqueue(topic, items));
  }

  moveOutboxToScope(topic: string, key: string, limit: number, target: OutboxTarget): Promise<number> {
    return this.transaction((session) => session.moveOutboxToScope(topic, key, limit, target));
  }

  purgeDeleted(scope: Scope, before?: number): Promise<number> {
    return this.transaction((session) => session.purgeDeleted(scope, before));
  }

  trimScope(scope: Scope, keep: number, filters?: Filter[]): Promise<number> {
    return this.transaction((session) => session.trimScope(scope, keep, filters));
  }

  setPermissions(uri: string, permissions: Permissions): Promise<void> {
    return this.transaction((session) => session.setPermissions(uri, permissions));
  }

  deletePermissionsTree(uri: string): Promise<void> {
    return this.transaction((session) => session.deletePermissionsTree(uri));
  }
}

/** Records in a session's ACL memo that the ACLs below `uri` (and of `uri` itself, if asked) are gone. */
export function forgetAclsBelow(acls: Map<string, Permissions>, uri: string, itself: boolean): void {
  const prefix = `${uri}/`;
  for (const known of acls.keys()) if (known.startsWith(prefix)) acls.set(known, {});
  if (itself) acls.set(uri, {});
}
