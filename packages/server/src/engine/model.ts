/**
 * The resource model (Kinto's name): what every resource does on storage and permissions,
 * driven by its ResourceDefinition, with no HTTP — no status, no header, no URL. The endpoints
 * (endpoints/*.ts) put the protocol's steps in order on top of it; what departs from the common
 * behaviour is a hook of the definition.
 */
import { invalidParameter, objectNotFound } from '../errors.js';
import type { ImpactedObject } from '../events/types.js';
import type { Services } from '../request-context.js';
import type {
  Filter,
  ListedJson,
  Permissions,
  Scope,
  Sort,
  StoredObject,
  StorageSession,
  Tombstone,
} from '../storage/types.js';
import { validateId, type WriteBody } from './body.js';
import {
  objectRef,
  type AccessContext,
  type ObjectRef,
  type RequestContext,
  type ResourceDefinition,
  type SessionContext,
  type WriteContext,
} from './definition.js';
import { denied } from './denied.js';
import { writeOptions } from './object-responses.js';
import type { Turn } from './loop-turns.js';
import { aclOf, ensureParents, FOR_UPDATE, scopeOf } from './objects.js';
import { ObjectSizes, readPage } from './page-reader.js';
import { effectiveLimit, encodeToken, keysetOf } from './pagination.js';
import type { ListQuery } from './querystring.js';
import type { EngineRequest } from './request.js';

type Action = 'create' | 'update' | 'delete' | 'read';

/** A page of a listing and, when more follow, the token of the next one. */
export interface Page<Item = StoredObject | Tombstone> {
  items: Item[];
  next: { limit: number; token: string } | null;
}

function cleanAcl(acl: Permissions): Permissions {
  const result: Permissions = {};
  for (const [name, principals] of Object.entries(acl)) {
    if (principals && principals.length > 0) result[name] = principals;
  }
  return result;
}

/** Adds the owner to `write` (rule 1, setting `explicit_permissions`; an account's own principal). */
function withOwner(acl: Permissions, owner: string | null): Permissions {
  if (owner === null) return acl;
  const writers = acl.write ?? [];
  return writers.includes(owner) ? acl : { ...acl, write: [...writers, owner] };
}

/** §4.6: a non-empty `permissions` replaces the whole ACL on PUT and POST; omitted or {} keeps it. */
export function givenAcl(body: WriteBody): Permissions | null {
  return body.permissions && Object.keys(body.permissions).length > 0 ? body.permissions : null;
}

/**
 * What a listed object's keyset is read from: the object, parsed from its text only when a sort
 * field is one of its data's (the default `-last_modified` needs no parsing).
 */
function listedObject(item: ListedJson, sorting: readonly Sort[]): Record<string, unknown> {
  if (sorting.every(({ field }) => field === 'last_modified' || field === 'id'))
    return item as object as Record<string, unknown>;
  return JSON.parse(item.json) as Record<string, unknown>;
}

export class ResourceModel {
  readonly def: ResourceDefinition;
  readonly #services: Services;
  readonly #access: NonNullable<ResourceDefinition['access']>;
  readonly #pageCap: number | null;
  /** What the objects of its lists weighed when last read: the size of a page's chunks. */
  readonly #sizes = new ObjectSizes();

  constructor(services: Services, def: ResourceDefinition) {
    this.#services = services;
    this.def = def;
    this.#access = def.access ?? services.authorizer;
    this.#pageCap = def.pageSize?.(services.settings) ?? null;
  }

  get settings() {
    return this.#services.settings;
  }

  /** Whether its answers and events show copies of the stored objects (its own `present`). */
  get answersCopies(): boolean {
    return this.def.present !== undefined;
  }

  /**
   * Whether a page of this listing can be answered as the stored text (`listJson`): the objects
   * are shown as stored (no `present`, no `_fields`) and no listener wants the read events, which
   * carry them parsed.
   */
  answersStoredText(query: ListQuery): boolean {
    return !this.def.present && !query.fields && !this.#services.events.wants('read', this.def.name);
  }

  /** The object as answered and as events carry it. */
  present(object: StoredObject | Tombstone): Record<string, unknown> {
    const shown = object as unknown as Record<string, unknown>;
    return this.def.present ? this.def.present(shown) : shown;
  }

  // --- Permissions -------------------------------------------------------------------------

  /** The checks before touching an object: permission, then its id, then its parents; returns its parent object. */
  async requireObject(
    context: AccessContext,
    ref: ObjectRef,
    permission: 'read' | 'write',
  ): Promise<StoredObject | null> {
    if (!(await this.#access.can(context, ref, permission))) throw denied(this.#services, context.identity);
    this.validateId(ref.id);
    return ensureParents(context.session, ref.ancestors.at(-1) ?? null);
  }

  /** The check before creating an object under `parent`. */
  async requireCreate(context: AccessContext, parent: ObjectRef | null): Promise<void> {
    if (!(await this.#access.canCreate(context, this.def, parent))) throw denied(this.#services, context.identity);
  }

  /** Which objects under `parent` the caller may read (or write); 401/403 when none. */
  async requireListing(
    context: AccessContext,
    parent: ObjectRef | null,
    permission: 'read' | 'write',
  ): Promise<Filter[]> {
    const visible = await this.#access.list(context, this.def, parent, permission);
    if (visible.kind === 'none') throw denied(this.#services, context.identity);
    if (visible.kind === 'some') return [{ field: 'id', operator: 'in', value: visible.ids }];
    if (visible.kind === 'filtered') return visible.filters;
    return [];
  }

  /** What of the object's ACL the caller may see (its own entries, or all with `write`). */
  async visiblePermissions(context: SessionContext, ref: ObjectRef): Promise<Permissions> {
    const acl = await aclOf(context.session, ref.uri);
    return this.#services.authorizer.visiblePermissions(context.identity.principals, acl);
  }

  validateId(id: string): void {
    validateId(id, this.def.idPattern, this.settings.max_object_id_length);
  }

  /** A server-assigned id for a POST without `data.id` (400 where the resource requires one). */
  newId(context: RequestContext): string {
    if (!this.def.generateId) throw invalidParameter('body', 'data.id', 'Required');
    return this.def.generateId(context);
  }

  // --- Reads -------------------------------------------------------------------------------

  /** The object, once the caller may read it (404 when missing); with its parent object. */
  async get(context: SessionContext, ref: ObjectRef): Promise<{ object: StoredObject; parent: StoredObject | null }> {
    await context.session.preload?.(scopeOf(ref), ref.id, ref.uri); // the object and its ACL in one go
    const parent = await this.requireObject(context, ref, 'read');
    const object = await context.session.objects.get(scopeOf(ref), ref.id);
    if (!object) throw objectNotFound(this.def.name, ref.id);
    return { object, parent };
  }

  /** The object a write replaces, locked until commit (null when there is none). */
  getForUpdate(session: StorageSession, ref: ObjectRef): Promise<StoredObject | null> {
    return session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE);
  }

  /**
   * One page of a listing (§7.6, §7.7): the objects after the token, at most a page — of
   * objects, and of bytes (`max_page_bytes`) — and the next token when more follow. Each object
   * as the JSON text it is stored as (storage `listJson`), read in chunks (page-reader.ts): who
   * needs the objects parses them. Plural DELETE tokens are single-use — replaying one would
   * delete another page — so the token's nonce is consumed here and the next one stored.
   */
  async listPage(
    session: StorageSession,
    scope: Scope,
    query: ListQuery,
    filters: Filter[],
    method: 'GET' | 'DELETE',
    turn: Turn,
  ): Promise<Page<ListedJson>> {
    if (method === 'DELETE' && query.token && !(await session.nonces.consume(query.token.nonce))) {
      throw invalidParameter('querystring', null, '_token was already used or has expired.');
    }
    const { sorting } = query;
    const limit = effectiveLimit(this.settings, query.requestedLimit, this.#pageCap);
    const page = await readPage(
      (options) => session.objects.listJson(scope, options),
      {
        limit,
        maxBytes: this.settings.max_page_bytes,
        options: { filters, sorting, includeDeleted: method === 'GET' && query.includeDeleted },
        after: query.token?.lastObject,
        keyOf: (item) => keysetOf(listedObject(item, sorting), sorting),
        turn,
      },
      this.#sizes,
      `${scope.resourceName} ${scope.parentId}`,
    );
    if (!page.more) return { items: page.items, next: null };
    const last = listedObject(page.items[page.items.length - 1]!, sorting);
    const offset = (query.token?.offset ?? 0) + page.items.length + 1;
    const token = encodeToken(last, sorting, offset);
    if (method === 'DELETE') await session.nonces.store(token.nonce, this.settings.pagination_token_validity_seconds);
    return { items: page.items, next: { limit, token: token.encoded } };
  }

  /** How many objects the filters select. */
  count(session: StorageSession, scope: Scope, filters: Filter[]): Promise<number> {
    return session.objects.count(scope, filters);
  }

  // --- Writes ------------------------------------------------------------------------------

  /**
   * The steps every write shares (POST, PUT, PATCH): the definition checks the data, the object
   * and its ACL are stored, the definition's afterWrite runs, the event is recorded. Returns the
   * stored object and the permissions its author sees.
   */
  async store(
    context: WriteContext,
    data: Record<string, unknown>,
    acl: Permissions,
    supplied: number | undefined,
    flags: { newId?: boolean; stampAtCommit: boolean },
  ) {
    const { session, ref, existing } = context;
    const def = this.def;
    const processed = def.processData ? await def.processData(data, context) : data;
    const options = {
      ...writeOptions(supplied, existing),
      newId: flags.newId ?? false,
      stampAtCommit: flags.stampAtCommit,
    };
    const stored = existing
      ? await session.objects.update(scopeOf(ref), ref.id, processed, options)
      : await session.objects.create(scopeOf(ref), ref.id, processed, options);
    const author = this.#owner(context, ref);
    const storedAcl = cleanAcl(withOwner(acl, author));
    await session.permissions.set(ref.uri, storedAcl);
    await def.afterWrite?.(context, stored);
    this.emit(context, ref.parentUri, existing ? 'update' : 'create', () => stored.last_modified, [
      existing ? { new: stored, old: existing } : { new: stored },
    ]);
    const principals = author === null ? context.identity.principals : [...context.identity.principals, author];
    return { stored, permissions: this.#services.authorizer.visiblePermissions(principals, storedAcl) };
  }

  /** Deletes the object `existing` and what it leaves; returns its tombstone. */
  async delete(
    context: SessionContext,
    ref: ObjectRef,
    existing: StoredObject,
    supplied: number | undefined,
    stampAtCommit: boolean,
  ): Promise<Tombstone> {
    const { session } = context;
    const tombstone = await session.objects.delete(scopeOf(ref), ref.id, {
      ...writeOptions(supplied, existing),
      stampAtCommit,
    });
    await this.def.beforeRemainsDeleted?.({ ...context, ref });
    await this.#deleteRemains(session, ref.uri);
    await this.def.afterDelete?.({ ...context, ref }, tombstone);
    this.emit(context, ref.parentUri, 'delete', () => tombstone.last_modified, [{ new: tombstone, old: existing }]);
    return tombstone;
  }

  /** Deletes the listed objects (a page of a plural DELETE) and what they leave; returns their tombstones. */
  async deleteListed(
    context: SessionContext,
    parent: ObjectRef | null,
    items: StoredObject[],
    query: ListQuery,
    timestamp: number,
  ): Promise<Tombstone[]> {
    const { session } = context;
    const def = this.def;
    const scope: Scope = { resourceName: def.name, parentId: parent ? parent.uri : '' };
    const filters: Filter[] = [{ field: 'id', operator: 'in', value: items.map((item) => item.id) }];
    if (def.keyedByTimestamp)
      filters.unshift({ field: 'last_modified', operator: 'in', value: items.map((item) => item.last_modified) });
    const tombstones: Tombstone[] = await session.objects.deleteAll(scope, { filters, sorting: query.sorting });
    for (const tombstone of tombstones) {
      const ref = objectRef(def, tombstone.id, parent);
      await def.beforeRemainsDeleted?.({ ...context, ref });
      await this.#deleteRemains(session, ref.uri);
      await def.afterDelete?.({ ...context, ref }, tombstone);
    }
    const newest = tombstones.reduce((max, tombstone) => Math.max(max, tombstone.last_modified), timestamp);
    const previous = new Map(items.map((item) => [item.id, item]));
    this.emit(
      context,
      scope.parentId,
      'delete',
      newest,
      tombstones.map((tombstone) => ({ new: tombstone, old: previous.get(tombstone.id) ?? tombstone })),
    );
    return tombstones;
  }

  /** What a deleted object leaves: its children when it cascades, its ACL and those below it. */
  async #deleteRemains(session: StorageSession, uri: string): Promise<void> {
    const def = this.def;
    if (def.cascades) {
      // The history entries still pending first: a drain holding them is waited for, and what
      // it stored goes with the rest.
      await session.outbox.deleteTree(uri);
      await session.objects.deleteTree(uri);
    }
    const hasAcl = def.permissions.length > 0;
    if (hasAcl || def.cascades) await session.permissions.deleteTree(uri, { itself: hasAcl });
  }

  #owner(context: RequestContext, ref: ObjectRef): string | null {
    if (this.def.owner) return this.def.owner(context, ref);
    return this.settings.explicit_permissions ? context.identity.userId : null;
  }

  // --- Events ------------------------------------------------------------------------------

  /** Records an event of this resource in the request's unit of work, its objects as presented. */
  /** Whether anyone listens to `action` on this resource (emit does nothing otherwise). */
  wantsEvents(action: Action): boolean {
    return this.#services.events.wants(action, this.def.name);
  }

  emit(
    context: RequestContext,
    parentId: string,
    action: Action,
    timestamp: number | (() => number),
    impacted: ImpactedObject[],
  ): void {
    const { events } = this.#services;
    if (!events.wants(action, this.def.name)) return;
    const shown = (object: StoredObject | Tombstone) => this.present(object) as unknown as StoredObject;
    const impactedObjects = this.def.present
      ? impacted.map((item) => ({ new: shown(item.new), ...(item.old ? { old: shown(item.old) } : {}) }))
      : impacted;
    context.work.emit(context.request, { resourceName: this.def.name, parentId, action, timestamp, impactedObjects });
  }

  /** The caller's context for the hooks and the access policy. */
  context(request: EngineRequest): RequestContext {
    return { request, identity: request.identity, settings: this.settings, work: request.work };
  }
}
