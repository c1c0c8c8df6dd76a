/**
 * What a resource adds to the generic engine (model.ts, endpoints/): where it lives, which endpoints it
 * serves, and hooks where it departs from the common behaviour. Buckets, collections, groups
 * and records need little more than their names; accounts and the history use the hooks
 * (Kinto's Resource subclasses override the same steps).
 */
import type { Identity } from '../auth/policy.js';
import type { Settings } from '../config.js';
import type { Filter, StorageSession, StoredObject, Tombstone } from '../storage/types.js';
import type { UnitOfWork } from '../unit-of-work.js';
import type { ListQuery } from './querystring.js';
import type { EngineRequest } from './request.js';

/** The three PATCH flavours (§4.4): shallow JSON merge, JSON Merge Patch, JSON Patch. */
export type PatchType = 'json' | 'merge-patch' | 'json-patch';

export type PluralMethod = 'GET' | 'HEAD' | 'POST' | 'DELETE';
export type ObjectMethod = 'GET' | 'PUT' | 'PATCH' | 'DELETE';

export interface ResourceDefinition {
  /** Storage resource name and event `resource_name` (`record`), `<name>_id` in URL patterns. */
  name: string;
  /** URI segment of its list: `buckets`, `collections`, `groups`, `records`, `accounts`, `history`. */
  plural: string;
  parent: ResourceDefinition | null;
  /** Permission names accepted in request bodies (protocol-reference §4.6); none: objects have no ACL. */
  permissions: readonly string[];
  /** The endpoints it serves (default: all eight); the others answer 405. */
  endpoints?: { plural: readonly PluralMethod[]; object: readonly ObjectMethod[] };
  /** Ids it accepts (default: protocol-reference §4.2, ID_PATTERN). */
  idPattern?: RegExp;
  /** Server-assigned id for POST without `data.id`; throws an ApiError where an id is required. */
  generateId?(context: RequestContext): string;
  /** Deleting it removes every child object (buckets, collections). */
  cascades: boolean;
  /** Who may do what (default: the inherited permissions of §9.2, permission/authorizer.ts). */
  access?: AccessPolicy;
  /** Reads of it may be cached by settings (http/cache-headers.ts); false: never (default true). */
  cacheable?: boolean;
  /** PATCH content types it takes (default: all three); another is a 415. */
  patchTypes?: readonly PatchType[];
  /** Its own cap on a page of a listing, on top of `paginate_by`. */
  pageSize?(settings: Settings): number | null;
  /**
   * Its objects are found by timestamp: listing deletes select them by `last_modified` as well
   * as by id (the history's table is keyed by timestamp; ids are not indexed there).
   */
  keyedByTimestamp?: boolean;

  /**
   * Before a listing opens its session: checks the query (unknown fields are a 400) and returns
   * the filters to apply (default: the query's). May do work the listing needs first.
   */
  prepareList?(context: RequestContext, query: ListQuery): Filter[] | Promise<Filter[]>;
  /**
   * Checks and normalises `data` before it is stored (e.g. group `members`, account passwords).
   * Throws ApiError. `context.existing` is the object being replaced or patched, if any.
   */
  processData?(
    data: Record<string, unknown>,
    context: WriteContext,
  ): Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Runs in the write's transaction once the object and its ACL are stored (e.g. group memberships). */
  afterWrite?(context: WriteContext, stored: StoredObject): Promise<void>;
  /**
   * Runs in the delete's transaction once the object is deleted but before what lived below it
   * (a cascading resource's children, the ACLs): the last moment its subtree can be read (the
   * attachments of a collection's records).
   */
  beforeRemainsDeleted?(context: SessionContext & { ref: ObjectRef }): Promise<void> | void;
  /** Runs in the delete's transaction once the object is deleted. */
  afterDelete?(context: SessionContext & { ref: ObjectRef }, tombstone: Tombstone): Promise<void> | void;
  /**
   * The principal that holds `write` on what it writes, whatever the body says, and acts for the
   * author when the answer shows permissions (default: the author, with `explicit_permissions`).
   */
  owner?(context: RequestContext, ref: ObjectRef): string | null;
  /** The object as answered and as events carry it (default: as stored; accounts hide their password hash). */
  present?(object: Record<string, unknown>): Record<string, unknown>;
}

/** What the hooks know of the request they serve. */
export interface RequestContext {
  request: EngineRequest;
  identity: Identity;
  settings: Settings;
  /** The request's unit of work (its session and events; a batch's for a sub-request). */
  work: UnitOfWork;
}

export interface SessionContext extends RequestContext {
  session: StorageSession;
}

export interface AccessContext extends SessionContext {
  /** The `data` the request sent (writes), for policies that look at it (a temporary password). */
  sentData?: unknown;
}

export interface WriteContext extends SessionContext {
  /** The object being written (its id, URI and ancestors). */
  ref: ObjectRef;
  existing: StoredObject | null;
  /** The `data` as the client sent it (for PATCH: the fields it sent, before merging). */
  sent: Record<string, unknown>;
  method: 'POST' | 'PUT' | 'PATCH';
}

/** Which objects of a listing the caller sees. */
export type ListAccess =
  | { kind: 'all' }
  /** Only these ids are visible (possibly none: the caller may create, so an empty list). */
  | { kind: 'some'; ids: string[] }
  /** Only the objects these filters select (the history's shared entries). */
  | { kind: 'filtered'; filters: Filter[] }
  | { kind: 'none' };

/**
 * Answers every permission question of the engine for one resource. May throw an ApiError to refuse
 * with another answer than 401/403.
 */
export interface AccessPolicy {
  /** read / write on an object, existing or not. */
  can(context: AccessContext, ref: ObjectRef, permission: 'read' | 'write'): Promise<boolean>;
  /** May create a `def` under `parent`. */
  canCreate(context: AccessContext, def: ResourceDefinition, parent: ObjectRef | null): Promise<boolean>;
  /** Which objects of `def` under `parent` the caller may read (or write: plural DELETE). */
  list(
    context: AccessContext,
    def: ResourceDefinition,
    parent: ObjectRef | null,
    permission: 'read' | 'write',
  ): Promise<ListAccess>;
}

/** One object (existing or not) addressed by a URL: its definition, id and ancestors' ids. */
export interface ObjectRef {
  def: ResourceDefinition;
  id: string;
  /** Storage parent id, e.g. `/buckets/b` for a collection; `''` for a bucket. */
  parentUri: string;
  /** `/buckets/b/collections/c`. */
  uri: string;
  /** The ancestors, root first (bucket, then collection for a record). */
  ancestors: ObjectRef[];
}

export function objectRef(def: ResourceDefinition, id: string, parent: ObjectRef | null): ObjectRef {
  const parentUri = parent ? parent.uri : '';
  return {
    def,
    id,
    parentUri,
    uri: `${parentUri}/${def.plural}/${id}`,
    ancestors: parent ? [...parent.ancestors, parent] : [],
  };
}

/** The id rule of protocol-reference §4.2 (buckets, collections, groups, records). */
export const ID_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_-]*$/;
