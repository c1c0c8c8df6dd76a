/**
 * The generic resource engine: the endpoints of every resource (plural HEAD/GET/POST/DELETE,
 * object GET/PUT/PATCH/DELETE) driven by a ResourceDefinition. Nothing here is specific to one
 * resource; what departs from the common behaviour is a hook of its definition.
 *
 * Order of checks on every request, as the protocol does it: authorisation, then the object id,
 * then the parents' existence, then the object, then preconditions.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Identity } from '../auth/policy.js';
import { ApiError, ERRNO, invalidParameter, objectNotFound } from '../errors.js';
import type { ImpactedObject } from '../events/types.js';
import { baseUrl as requestBaseUrl } from '../http/base-url.js';
import { cacheLifetime, setCacheHeaders } from '../http/cache-headers.js';
import { unsupportedContentType } from '../http/content.js';
import { splitUrl } from '../http/url.js';
import type { Services } from '../request-context.js';
import type { Filter, Permissions, ReadOptions, Scope, StoredObject, StorageSession, Tombstone } from '../storage/types.js';
import { applyPatch, isPlainObject, parseWriteBody, suppliedTimestamp, userFields, validateId, type WriteBody } from './body.js';
import {
  objectRef,
  type AccessContext,
  type ObjectRef,
  type RequestContext,
  type ResourceDefinition,
  type WriteContext,
} from './definition.js';
import {
  assertBodyMatchesId,
  mergePermissions,
  PATCH_MEDIA_TYPES,
  patchResponseData,
  patchType,
  responseBehavior,
  setTimestampHeaders,
  writeOptions,
} from './object-responses.js';
import { encodeToken, nextPageUrl } from './pagination.js';
import { checkListPreconditions, checkObjectPreconditions, parsePreconditions } from './preconditions.js';
import { parseListQuery, projectFields, type ListQuery } from './querystring.js';

type Params = Record<string, string>;

/**
 * How a write reads the object it changes: locked until commit, so that its preconditions and
 * the write are one atomic step (exactly one of racing `If-Match` writes wins), and a PATCH
 * applies to the version it replaces.
 */
export const FOR_UPDATE: ReadOptions = { forUpdate: true };

export function scopeOf(ref: { def: ResourceDefinition; parentUri: string }): Scope {
  return { resourceName: ref.def.name, parentId: ref.parentUri };
}

/** The definitions from the root down to `def`. */
function lineage(def: ResourceDefinition): ResourceDefinition[] {
  const chain: ResourceDefinition[] = [];
  for (let current: ResourceDefinition | null = def; current; current = current.parent) chain.unshift(current);
  return chain;
}

/** The parent object addressed by the URL (null for top-level resources). */
export function parentRefFromParams(def: ResourceDefinition, params: Params): ObjectRef | null {
  let parent: ObjectRef | null = null;
  for (const ancestor of lineage(def).slice(0, -1)) {
    parent = objectRef(ancestor, params[`${ancestor.name}_id`] ?? '', parent);
  }
  return parent;
}

export function objectRefFromParams(def: ResourceDefinition, params: Params): ObjectRef {
  return objectRef(def, params[`${def.name}_id`] ?? '', parentRefFromParams(def, params));
}

/** 401 for anonymous callers (with the policies' challenges), 403 otherwise (§9.2). */
export function denied(services: Services, identity: Identity): ApiError {
  if (identity.userId === null) {
    const challenges = services.policies.map((policy) => policy.challenge);
    return new ApiError(401, ERRNO.MISSING_AUTH_TOKEN, {
      message: 'Please authenticate yourself to use this endpoint.',
      headers: challenges.length ? { 'WWW-Authenticate': challenges.join(', ') } : {},
    });
  }
  return new ApiError(403, ERRNO.FORBIDDEN, { message: 'This user cannot access this resource.' });
}

/** 404 (errno 111) unless every ancestor exists; returns the direct parent object. */
export async function ensureParents(session: StorageSession, parent: ObjectRef | null): Promise<StoredObject | null> {
  if (!parent) return null;
  let found: StoredObject | null = null;
  for (const ref of [...parent.ancestors, parent]) {
    found = await session.objects.get(scopeOf(ref), ref.id);
    if (!found) throw objectNotFound(ref.def.name, ref.id, ERRNO.MISSING_RESOURCE);
  }
  return found;
}

/** `scheme://host` of the absolute URLs answered to `request`: never an untrusted Host (base-url.ts). */
export function baseUrl(services: Services, request: FastifyRequest): string {
  return requestBaseUrl(services.settings, request);
}

/**
 * Page size of §7.6: `_limit` capped by `paginate_by`, everything capped by the fetch size.
 * `pageCap` is a resource's own cap (the history's `history_paginate_by`), applied on top.
 */
export function effectiveLimit(services: Services, requested: number | null, pageCap: number | null = null): number {
  const { storage_max_fetch_size: maxFetch } = services.settings;
  const caps = [services.settings.paginate_by, pageCap].filter((cap): cap is number => cap !== null);
  const paginateBy = caps.length > 0 ? Math.min(...caps) : null;
  let limit = requested ?? paginateBy;
  if (requested !== null && paginateBy !== null) limit = Math.min(requested, paginateBy);
  return limit ? Math.min(limit, maxFetch) : maxFetch;
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
function givenAcl(body: WriteBody): Permissions | null {
  return body.permissions && Object.keys(body.permissions).length > 0 ? body.permissions : null;
}

async function aclOf(session: StorageSession, uri: string): Promise<Permissions> {
  return (await session.permissions.get([uri])).get(uri) ?? {};
}

const PLURAL_METHODS = ['GET', 'HEAD', 'POST', 'DELETE'] as const;
const OBJECT_METHODS = ['GET', 'PUT', 'PATCH', 'DELETE'] as const;

/** The endpoints a definition serves (all eight unless it says otherwise). */
export function endpointsOf(def: ResourceDefinition) {
  return def.endpoints ?? { plural: PLURAL_METHODS, object: OBJECT_METHODS };
}

export function createResourceHandlers(services: Services, def: ResourceDefinition) {
  const { settings, authorizer, events } = services;
  const access = def.access ?? authorizer;
  const idPattern = def.idPattern;
  const present = def.present ?? ((object: Record<string, unknown>) => object);
  const owner = def.owner ?? ((context: RequestContext) => (settings.explicit_permissions ? context.identity.userId : null));
  const hasAcl = def.permissions.length > 0;
  const pageCap = def.pageSize?.(settings) ?? null;
  const patchLimits = { maxOperations: settings.max_json_patch_operations, maxDepth: settings.max_json_depth, maxKeys: settings.max_json_keys };

  function requestContext(request: FastifyRequest): RequestContext {
    return { request, identity: request.identity, settings, work: request.work };
  }

  /** The checks before touching an object; returns its parent object. */
  async function requireObject(context: AccessContext, ref: ObjectRef, permission: 'read' | 'write') {
    if (!(await access.can(context, ref, permission))) throw denied(services, context.identity);
    validateId(ref.id, idPattern);
    return ensureParents(context.session, ref.ancestors.at(-1) ?? null);
  }

  async function requireCreate(context: AccessContext, parent: ObjectRef | null) {
    if (!(await access.canCreate(context, def, parent))) throw denied(services, context.identity);
  }

  function newId(context: RequestContext): string {
    if (!def.generateId) throw invalidParameter('body', 'data.id', 'Required');
    return def.generateId(context);
  }

  /** Cache headers of a read: what the settings allow for this resource, or none. */
  function setReadCacheHeaders(reply: FastifyReply, identity: Identity, parentUri: string, parent: StoredObject | null) {
    const seconds = def.cacheable === false ? 0 : cacheLifetime(settings, identity, { resourceName: def.name, parentUri, parent });
    setCacheHeaders(reply, seconds);
  }

  /** Records an event of this resource, its objects as the definition presents them. */
  function emit(request: FastifyRequest, parentId: string, action: 'create' | 'update' | 'delete' | 'read', timestamp: number | (() => number), impacted: ImpactedObject[]) {
    if (!events.wants(action, def.name)) return;
    const shown = (object: StoredObject | Tombstone) => present(object as unknown as Record<string, unknown>) as StoredObject;
    const impactedObjects = def.present ? impacted.map((item) => ({ new: shown(item.new), ...(item.old ? { old: shown(item.old) } : {}) })) : impacted;
    request.work.emit(request, { resourceName: def.name, parentId, action, timestamp, impactedObjects });
  }

  /**
   * Runs a write: `fn` decides and stores it in the request's unit of work and returns how to
   * answer once it has committed. A write of its own is stamped at commit (stampAtCommit: the
   * collection stays locked only while the database commits), so its timestamp is known only
   * then; it is stamped at once inside a batch, for listeners that run in the transaction, and
   * for a resource that presents copies of its objects (the copies would miss the stamp).
   */
  async function write(request: FastifyRequest, fn: (session: StorageSession, stampAtCommit: boolean) => Promise<() => unknown>) {
    const stampAtCommit = !request.work.isOpen && !events.hasInTransactionSubscribers && def.present === undefined;
    const answer = await request.work.run('write', (session) => fn(session, stampAtCommit));
    return answer();
  }

  /**
   * The steps every write shares (POST, PUT, PATCH): the definition checks the data, the object
   * and its ACL are stored, the definition's afterWrite runs, the event is recorded.
   */
  async function storeObject(context: WriteContext, data: Record<string, unknown>, acl: Permissions, supplied: number | undefined, flags: { newId?: boolean; stampAtCommit: boolean }) {
    const { session, ref, existing } = context;
    const processed = def.processData ? await def.processData(data, context) : data;
    const options = { ...writeOptions(supplied, existing), newId: flags.newId ?? false, stampAtCommit: flags.stampAtCommit };
    const stored = existing
      ? await session.objects.update(scopeOf(ref), ref.id, processed, options)
      : await session.objects.create(scopeOf(ref), ref.id, processed, options);
    const author = owner(context, ref);
    const storedAcl = cleanAcl(withOwner(acl, author));
    await session.permissions.set(ref.uri, storedAcl);
    await def.afterWrite?.(context, stored);
    emit(context.request, ref.parentUri, existing ? 'update' : 'create', () => stored.last_modified, [existing ? { new: stored, old: existing } : { new: stored }]);
    const principals = author === null ? context.identity.principals : [...context.identity.principals, author];
    return { stored, permissions: authorizer.visiblePermissions(principals, storedAcl) };
  }

  /** What a deleted object leaves: its children when it cascades, its ACL and those below it. */
  async function deleteRemains(session: StorageSession, uri: string) {
    if (def.cascades) {
      // The history entries still pending first: a drain holding them is waited for, and what
      // it stored goes with the rest.
      await session.outbox.deleteTree(uri);
      await session.objects.deleteTree(uri);
    }
    if (hasAcl || def.cascades) await session.permissions.deleteTree(uri, { itself: hasAcl });
  }

  async function listObjects(request: FastifyRequest, reply: FastifyReply, method: 'GET' | 'HEAD' | 'DELETE') {
    const context = requestContext(request);
    const { identity } = context;
    const parent = parentRefFromParams(def, request.params as Params);
    const query = parseListQuery(splitUrl(request.raw.url).query);
    const requested = def.prepareList ? await def.prepareList(context, query) : query.filters;
    const preconditions = parsePreconditions(request.headers);
    const scope: Scope = { resourceName: def.name, parentId: parent ? parent.uri : '' };
    const permission = method === 'DELETE' ? 'write' : 'read';

    return request.work.run(method === 'DELETE' ? 'write' : 'read', async (session) => {
      const visible = await access.list({ ...context, session }, def, parent, permission);
      if (visible.kind === 'none') throw denied(services, identity);
      const parentObject = await ensureParents(session, parent);
      const timestamp = await session.objects.timestamp(scope);
      if (query.usedDeprecatedTo) {
        reply.header('Alert', JSON.stringify({ code: 'soft-eol', message: '_to is now deprecated, you should use _before instead', url: settings.project_docs }));
      }
      const outcome = checkListPreconditions(preconditions, timestamp, method);
      setTimestampHeaders(reply, timestamp);
      if (method !== 'DELETE') setReadCacheHeaders(reply, identity, scope.parentId, parentObject);
      if (outcome === 'not-modified') return reply.code(304).send();

      const filters = [...requested];
      if (visible.kind === 'some') filters.push({ field: 'id', operator: 'in', value: visible.ids });
      if (visible.kind === 'filtered') filters.push(...visible.filters);

      if (method === 'HEAD') return sendCount(reply, session, scope, filters);
      const items = await readPage(request, reply, session, scope, query, filters, method);
      if (method === 'DELETE') return deleteListed({ ...context, session }, parent, items as StoredObject[], query, reply, timestamp);
      emit(request, scope.parentId, 'read', timestamp, items.map((item) => ({ new: item })));
      const shown = (items as unknown as Array<Record<string, unknown>>).map(present);
      return { data: query.fields ? shown.map((item) => projectFields(item, query.fields as string[])) : shown };
    });
  }

  /**
   * One page of a listing (§7.6, §7.7): the objects after the token, at most a page, and the
   * Next-Page header when more follow. Plural DELETE tokens are single-use — replaying one would
   * delete another page — so the token's nonce is consumed here and the next one stored.
   */
  async function readPage(request: FastifyRequest, reply: FastifyReply, session: StorageSession, scope: Scope, query: ListQuery, filters: Filter[], method: 'GET' | 'DELETE') {
    if (method === 'DELETE' && query.token && !(await session.nonces.consume(query.token.nonce))) {
      throw invalidParameter('querystring', null, '_token was already used or has expired.');
    }
    const limit = effectiveLimit(services, query.requestedLimit, pageCap);
    const page = await session.objects.list(scope, {
      filters,
      sorting: query.sorting,
      ...(query.token ? { after: query.token.lastObject } : {}),
      limit: limit + 1,
      includeDeleted: method === 'GET' && query.includeDeleted,
    });
    if (page.length <= limit) return page;
    const items = page.slice(0, limit);
    const offset = (query.token?.offset ?? 0) + items.length + 1;
    const token = encodeToken(items[items.length - 1] as Record<string, unknown>, query.sorting, offset);
    if (method === 'DELETE') await session.nonces.store(token.nonce, settings.pagination_token_validity_seconds);
    reply.header('Next-Page', nextPageUrl(baseUrl(services, request), splitUrl(request.raw.url).path, query.params, limit, token.encoded));
    return items;
  }

  /** `HEAD` of a listing: the count of what the filters select, in both header spellings. */
  async function sendCount(reply: FastifyReply, session: StorageSession, scope: Scope, filters: Filter[]) {
    const total = await session.objects.count(scope, filters);
    reply.header('Total-Objects', String(total));
    reply.header('Total-Records', String(total));
    return reply.send();
  }

  async function deleteListed(context: AccessContext, parent: ObjectRef | null, items: StoredObject[], query: ListQuery, reply: FastifyReply, timestamp: number) {
    if (items.length === 0) return { data: [] };
    const { session } = context;
    const scope: Scope = { resourceName: def.name, parentId: parent ? parent.uri : '' };
    const filters: Filter[] = [{ field: 'id', operator: 'in', value: items.map((item) => item.id) }];
    if (def.keyedByTimestamp) filters.unshift({ field: 'last_modified', operator: 'in', value: items.map((item) => item.last_modified) });
    const tombstones: Tombstone[] = await session.objects.deleteAll(scope, { filters, sorting: query.sorting });
    for (const tombstone of tombstones) {
      const ref = objectRef(def, tombstone.id, parent);
      await def.beforeRemainsDeleted?.({ ...context, ref });
      await deleteRemains(session, ref.uri);
      await def.afterDelete?.({ ...context, ref }, tombstone);
    }
    const newest = tombstones.reduce((max, tombstone) => Math.max(max, tombstone.last_modified), timestamp);
    const previous = new Map(items.map((item) => [item.id, item]));
    emit(context.request, scope.parentId, 'delete', newest, tombstones.map((tombstone) => ({ new: tombstone, old: previous.get(tombstone.id) ?? tombstone })));
    setTimestampHeaders(reply, newest);
    const data = tombstones as unknown as Array<Record<string, unknown>>;
    return { data: query.fields ? data.map((item) => projectFields(item, query.fields as string[])) : data };
  }

  return {
    async getList(request: FastifyRequest, reply: FastifyReply) {
      return listObjects(request, reply, request.method === 'HEAD' ? 'HEAD' : 'GET');
    },

    async deleteList(request: FastifyRequest, reply: FastifyReply) {
      return listObjects(request, reply, 'DELETE');
    },

    async create(request: FastifyRequest, reply: FastifyReply) {
      const context = requestContext(request);
      const parent = parentRefFromParams(def, request.params as Params);
      const body = parseWriteBody(request.body, def);
      const preconditions = parsePreconditions(request.headers);
      const givenId = body.data?.id;
      if (givenId !== undefined) validateId(givenId, idPattern);
      const ref = objectRef(def, (givenId as string | undefined) ?? newId(context), parent);

      return write(request, async (session, stampAtCommit) => {
        const accessContext = { ...context, session, sentData: body.data };
        const existing = givenId === undefined ? null : await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE);
        if (existing) {
          // POST of an existing id answers the existing object, unchanged (§2).
          await requireObject(accessContext, ref, 'read');
          checkObjectPreconditions(preconditions, existing, present(existing), { method: 'POST' });
          setTimestampHeaders(reply, existing.last_modified);
          const acl = await aclOf(session, ref.uri);
          emit(request, ref.parentUri, 'read', existing.last_modified, [{ new: existing }]);
          const permissions = authorizer.visiblePermissions(context.identity.principals, acl);
          return () => ({ data: present(existing), permissions });
        }
        await requireCreate(accessContext, parent);
        await ensureParents(session, parent);
        checkObjectPreconditions(preconditions, null, null, { method: 'POST' });
        const writeContext: WriteContext = { ...accessContext, ref, existing: null, sent: body.data ?? {}, method: 'POST' };
        const data = userFields(body.data ?? {});
        const { stored, permissions } = await storeObject(writeContext, data, givenAcl(body) ?? {}, suppliedTimestamp(body.data), { newId: givenId === undefined, stampAtCommit });
        return () => {
          setTimestampHeaders(reply, stored.last_modified);
          reply.code(201);
          return { data: present(stored), permissions };
        };
      });
    },

    async get(request: FastifyRequest, reply: FastifyReply) {
      const context = requestContext(request);
      const ref = objectRefFromParams(def, request.params as Params);
      const preconditions = parsePreconditions(request.headers);
      const query = parseListQuery(splitUrl(request.raw.url).query);
      return request.work.run('read', async (session) => {
        await session.preload?.(scopeOf(ref), ref.id, ref.uri); // the object and its ACL in one go
        const parentObject = await requireObject({ ...context, session }, ref, 'read');
        const object = await session.objects.get(scopeOf(ref), ref.id);
        if (!object) throw objectNotFound(def.name, ref.id);
        const outcome = checkObjectPreconditions(preconditions, object, present(object), { method: 'GET' });
        setTimestampHeaders(reply, object.last_modified);
        setReadCacheHeaders(reply, context.identity, ref.parentUri, parentObject);
        if (outcome === 'not-modified') return reply.code(304).send();
        const acl = await aclOf(session, ref.uri);
        emit(request, ref.parentUri, 'read', object.last_modified, [{ new: object }]);
        const shown = present(object);
        return { data: query.fields ? projectFields(shown, query.fields) : shown, permissions: authorizer.visiblePermissions(context.identity.principals, acl) };
      });
    },

    async put(request: FastifyRequest, reply: FastifyReply) {
      const context = requestContext(request);
      const ref = objectRefFromParams(def, request.params as Params);
      const preconditions = parsePreconditions(request.headers);
      const body = parseWriteBody(request.body, def);
      return write(request, async (session, stampAtCommit) => {
        const accessContext = { ...context, session, sentData: body.data };
        const existing = await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE);
        // PUT with If-None-Match: * on an existing object needs create, so a caller allowed to
        // create learns 412 rather than 403 (1.11).
        if (existing && preconditions.ifNoneMatch?.kind !== 'any') await requireObject(accessContext, ref, 'write');
        else {
          await requireCreate(accessContext, ref.ancestors.at(-1) ?? null);
          validateId(ref.id, idPattern);
          await ensureParents(session, ref.ancestors.at(-1) ?? null);
        }
        checkObjectPreconditions(preconditions, existing, existing && present(existing), { method: 'PUT' });
        assertBodyMatchesId(body.data, ref.id);
        const previousAcl = existing ? await aclOf(session, ref.uri) : {};
        const writeContext: WriteContext = { ...accessContext, ref, existing, sent: body.data ?? {}, method: 'PUT' };
        const data = userFields(body.data ?? existing ?? {});
        const { stored, permissions } = await storeObject(writeContext, data, givenAcl(body) ?? previousAcl, suppliedTimestamp(body.data), { stampAtCommit });
        return () => {
          setTimestampHeaders(reply, stored.last_modified);
          reply.code(existing ? 200 : 201);
          return { data: present(stored), permissions };
        };
      });
    },

    async patch(request: FastifyRequest, reply: FastifyReply) {
      const context = requestContext(request);
      const ref = objectRefFromParams(def, request.params as Params);
      const preconditions = parsePreconditions(request.headers);
      const behavior = responseBehavior(request);
      const type = patchType(request);
      if (def.patchTypes && !def.patchTypes.includes(type)) throw unsupportedContentType(def.patchTypes.map((taken) => PATCH_MEDIA_TYPES[taken]));
      const sentData = isPlainObject(request.body) ? request.body.data : undefined;
      return write(request, async (session, stampAtCommit) => {
        const accessContext = { ...context, session, sentData };
        await requireObject(accessContext, ref, 'write');
        const existing = await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE);
        if (!existing) throw objectNotFound(def.name, ref.id);
        checkObjectPreconditions(preconditions, existing, present(existing), { method: 'PATCH' });
        const previousAcl = await aclOf(session, ref.uri);
        const patched = applyPatch(type, request.body, userFields(existing), previousAcl, def, patchLimits);
        assertBodyMatchesId(patched.sentData, ref.id);
        const acl = patched.replacePermissions ?? mergePermissions(previousAcl, patched.permissions ?? {}, type);
        const writeContext: WriteContext = { ...accessContext, ref, existing, sent: patched.sentData, method: 'PATCH' };
        const { stored, permissions } = await storeObject(writeContext, userFields(patched.data), acl, suppliedTimestamp(patched.sentData), { stampAtCommit });
        const sent = type === 'json-patch' ? {} : userFields(patched.sentData);
        return () => {
          setTimestampHeaders(reply, stored.last_modified);
          return { data: present(patchResponseData(behavior, sent, stored, existing) as StoredObject), permissions };
        };
      });
    },

    async delete(request: FastifyRequest, reply: FastifyReply) {
      const context = requestContext(request);
      const ref = objectRefFromParams(def, request.params as Params);
      const preconditions = parsePreconditions(request.headers);
      const supplied = new URLSearchParams(splitUrl(request.raw.url).query).get('last_modified');
      return write(request, async (session, stampAtCommit) => {
        const accessContext = { ...context, session };
        await requireObject(accessContext, ref, 'write');
        const existing = await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE);
        if (!existing) throw objectNotFound(def.name, ref.id);
        checkObjectPreconditions(preconditions, existing, present(existing), { method: 'DELETE' });
        const suppliedValue = supplied !== null && /^\d+$/.test(supplied) ? Number(supplied) : undefined;
        const tombstone = await session.objects.delete(scopeOf(ref), ref.id, { ...writeOptions(suppliedValue, existing), stampAtCommit });
        await def.beforeRemainsDeleted?.({ ...accessContext, ref });
        await deleteRemains(session, ref.uri);
        await def.afterDelete?.({ ...accessContext, ref }, tombstone);
        emit(request, ref.parentUri, 'delete', () => tombstone.last_modified, [{ new: tombstone, old: existing }]);
        return () => {
          setTimestampHeaders(reply, tombstone.last_modified);
          return { data: tombstone };
        };
      });
    },
  };
}

export type ResourceHandlers = ReturnType<typeof createResourceHandlers>;
