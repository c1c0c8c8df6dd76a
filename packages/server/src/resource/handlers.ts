/**
 * The generic resource engine: the eight endpoints of every resource (plural HEAD/GET/POST/DELETE,
 * object GET/PUT/PATCH/DELETE) driven by a ResourceDefinition. Nothing here is specific to
 * buckets, collections, groups or records.
 *
 * Order of checks on every request, as the protocol does it: authorisation, then the object id,
 * then the parents' existence, then the object, then preconditions.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Identity } from '../auth/policy.js';
import { ApiError, ERRNO, invalidParameter, objectNotFound } from '../errors.js';
import { baseUrl as requestBaseUrl } from '../http/base-url.js';
import { cacheLifetime, setCacheHeaders } from '../http/cache-headers.js';
import { splitUrl } from '../http/url.js';
import type { Services } from '../request-context.js';
import type { Filter, Permissions, ReadOptions, Scope, StoredObject, StorageSession, Tombstone } from '../storage/types.js';
import {
  applyPatch,
  parseWriteBody,
  suppliedTimestamp,
  userFields,
  validateId,
} from './body.js';
import { objectRef, type ObjectRef, type ResourceDefinition } from './definition.js';
import {
  assertBodyMatchesId,
  mergePermissions,
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

/** The parent object addressed by the URL (null for buckets). */
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

/** Every ancestor must exist: 404 (errno 111) naming the first missing one. */
/** 404 (errno 111) unless every ancestor exists; returns the direct parent object. */
async function ensureParents(session: StorageSession, parent: ObjectRef | null): Promise<StoredObject | null> {
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
 * `pageCap` is an endpoint's own `paginate_by` (history_paginate_by), applied on top.
 */
export function effectiveLimit(services: Services, requested: number | null, pageCap: number | null = null): number {
  const { storage_max_fetch_size: maxFetch } = services.settings;
  const caps = [services.settings.paginate_by, pageCap].filter((cap): cap is number => cap !== null);
  const paginateBy = caps.length > 0 ? Math.min(...caps) : null;
  let limit = requested ?? paginateBy;
  if (requested !== null && paginateBy !== null) limit = Math.min(requested, paginateBy);
  return limit ? Math.min(limit, maxFetch) : maxFetch;
}

/**
 * One page of a listing (§7.6, §7.7): the objects after the token, at most a page, and the
 * Next-Page header when more follow. Plural DELETE tokens are single-use — replaying one would
 * delete another page — so the token's nonce is consumed here and the next one stored.
 */
export async function readPage(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  session: StorageSession,
  scope: Scope,
  query: ListQuery,
  filters: Filter[],
  method: 'GET' | 'DELETE',
  pageCap: number | null = null,
): Promise<Array<StoredObject | Tombstone>> {
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
  if (method === 'DELETE') await session.nonces.store(token.nonce, services.settings.pagination_token_validity_seconds);
  reply.header('Next-Page', nextPageUrl(baseUrl(services, request), splitUrl(request.raw.url).path, query.params, limit, token.encoded));
  return items;
}

/** `HEAD` of a listing: the count of what the filters select, in both header spellings. */
export async function sendCount(reply: FastifyReply, session: StorageSession, scope: Scope, filters: Filter[]) {
  const total = await session.objects.count(scope, filters);
  reply.header('Total-Objects', String(total));
  reply.header('Total-Records', String(total));
  return reply.send();
}

/** Adds the author to `write` (rule 1, setting `explicit_permissions`). */
function withAuthor(services: Services, identity: Identity, acl: Permissions): Permissions {
  if (!services.settings.explicit_permissions || identity.userId === null) return acl;
  const writers = acl.write ?? [];
  return writers.includes(identity.userId) ? acl : { ...acl, write: [...writers, identity.userId] };
}

function cleanAcl(acl: Permissions): Permissions {
  const result: Permissions = {};
  for (const [name, principals] of Object.entries(acl)) {
    if (principals && principals.length > 0) result[name] = principals;
  }
  return result;
}

async function aclOf(session: StorageSession, uri: string): Promise<Permissions> {
  return (await session.permissions.get([uri])).get(uri) ?? {};
}

export function createResourceHandlers(services: Services, def: ResourceDefinition) {
  const { storage, authorizer, events } = services;
  const { settings } = services;
  const patchLimits = { maxOperations: settings.max_json_patch_operations, maxDepth: settings.max_json_depth, maxKeys: settings.max_json_keys };

  /** The checks before touching an object; returns its parent object. */
  async function requireObject(session: StorageSession, identity: Identity, ref: ObjectRef, permission: 'read' | 'write') {
    if (!(await authorizer.can(session.permissions, identity.principals, ref, permission))) throw denied(services, identity);
    validateId(ref.id);
    return ensureParents(session, ref.ancestors.at(-1) ?? null);
  }

  async function requireCreate(session: StorageSession, identity: Identity, parent: ObjectRef | null) {
    if (!(await authorizer.canCreate(session.permissions, identity.principals, def.name, parent))) throw denied(services, identity);
  }

  /**
   * Runs a write: `fn` decides and stores it in a transaction and returns how to answer once it
   * has committed. A write of its own is stamped at commit (stampAtCommit: the collection stays
   * locked only while the database commits), so its timestamp is known only then; in a batch,
   * or with a listener that runs in the transaction, it is stamped at once.
   */
  async function write(request: FastifyRequest, fn: (session: StorageSession, stampAtCommit: boolean) => Promise<() => unknown>) {
    const stampAtCommit = !request.batch && !events.hasInTransactionSubscribers;
    const answer = await events.withSession(request, storage, 'write', (session) => fn(session, stampAtCommit));
    return answer();
  }

  /** Stores data + ACL for a PUT/POST creation or replacement; answers 201/200 once committed. */
  async function writeObject(
    session: StorageSession,
    identity: Identity,
    ref: ObjectRef,
    existing: StoredObject | null,
    body: ReturnType<typeof parseWriteBody>,
    reply: FastifyReply,
    { newId = false, stampAtCommit = false } = {},
  ) {
    const previousAcl = existing ? await aclOf(session, ref.uri) : {};
    let data = userFields(body.data ?? (existing ? existing : {}));
    if (def.processData) data = await def.processData(data, { settings: services.settings, session, existing, ref });
    const options = { ...writeOptions(suppliedTimestamp(body.data), existing), newId, stampAtCommit };
    const stored = existing
      ? await session.objects.update(scopeOf(ref), ref.id, data, options)
      : await session.objects.create(scopeOf(ref), ref.id, data, options);

    // §4.6: a non-empty `permissions` replaces the whole ACL on PUT; omitted or {} keeps it.
    const given = body.permissions && Object.keys(body.permissions).length > 0 ? body.permissions : null;
    const acl = cleanAcl(withAuthor(services, identity, given ?? previousAcl));
    await session.permissions.set(ref.uri, acl);
    await def.afterWrite?.(session, ref.uri, stored);
    events.emit(session, reply.request, {
      resourceName: def.name, parentId: ref.parentUri, action: existing ? 'update' : 'create', timestamp: () => stored.last_modified,
      impactedObjects: [existing ? { new: stored, old: existing } : { new: stored }],
    });
    const permissions = authorizer.visiblePermissions(identity.principals, acl);
    return () => {
      setTimestampHeaders(reply, stored.last_modified);
      reply.code(existing ? 200 : 201);
      return { data: stored, permissions };
    };
  }

  async function listObjects(request: FastifyRequest, reply: FastifyReply, method: 'GET' | 'HEAD' | 'DELETE') {
    const identity = request.identity;
    const parent = parentRefFromParams(def, request.params as Params);
    const query = parseListQuery(splitUrl(request.raw.url).query);
    const preconditions = parsePreconditions(request.headers);
    const scope: Scope = { resourceName: def.name, parentId: parent ? parent.uri : '' };
    const permission = method === 'DELETE' ? 'write' : 'read';

    return events.withSession(request, storage, method === 'DELETE' ? 'write' : 'read', async (session) => {
      const access = await authorizer.listAccess(session.permissions, identity.principals, def.name, def.plural, parent, permission);
      if (access.kind === 'none') throw denied(services, identity);
      const parentObject = await ensureParents(session, parent);
      const timestamp = await session.objects.timestamp(scope);
      if (query.usedDeprecatedTo) {
        reply.header(
          'Alert',
          JSON.stringify({ code: 'soft-eol', message: '_to is now deprecated, you should use _before instead', url: services.settings.project_docs }),
        );
      }
      const outcome = checkListPreconditions(preconditions, timestamp, method);
      setTimestampHeaders(reply, timestamp);
      if (method !== 'DELETE') setCacheHeaders(reply, cacheLifetime(services.settings, identity, { resourceName: def.name, parentUri: scope.parentId, parent: parentObject }));
      if (outcome === 'not-modified') return reply.code(304).send();

      const filters = [...query.filters];
      if (access.kind === 'some') filters.push({ field: 'id', operator: 'in', value: access.ids });

      if (method === 'HEAD') return sendCount(reply, session, scope, filters);
      const items = await readPage(services, request, reply, session, scope, query, filters, method);

      if (method === 'DELETE') return deleteListed(session, scope, items as StoredObject[], query, reply, timestamp);
      if (events.wants('read', def.name)) {
        events.emit(session, request, { resourceName: def.name, parentId: scope.parentId, action: 'read', timestamp, impactedObjects: items.map((item) => ({ new: item })) });
      }
      return { data: query.fields ? items.map((item) => projectFields(item as unknown as Record<string, unknown>, query.fields as string[])) : items };
    });
  }

  async function deleteListed(session: StorageSession, scope: Scope, items: StoredObject[], query: ListQuery, reply: FastifyReply, timestamp: number) {
    if (items.length === 0) return { data: [] };
    const tombstones: Tombstone[] = await session.objects.deleteAll(scope, {
      filters: [{ field: 'id', operator: 'in', value: items.map((item) => item.id) }],
      sorting: query.sorting,
    });
    for (const tombstone of tombstones) {
      const uri = `${scope.parentId}/${def.plural}/${tombstone.id}`;
      if (def.cascades) {
        await session.outbox.deleteTree(uri);
        await session.objects.deleteTree(uri);
      }
      await session.permissions.deleteTree(uri);
    }
    const newest = tombstones.reduce((max, tombstone) => Math.max(max, tombstone.last_modified), timestamp);
    const previous = new Map(items.map((item) => [item.id, item]));
    events.emit(session, reply.request, {
      resourceName: def.name, parentId: scope.parentId, action: 'delete', timestamp: newest,
      impactedObjects: tombstones.map((tombstone) => ({ new: tombstone, old: previous.get(tombstone.id) ?? tombstone })),
    });
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
      const identity = request.identity;
      const parent = parentRefFromParams(def, request.params as Params);
      const body = parseWriteBody(request.body, def);
      const preconditions = parsePreconditions(request.headers);
      const givenId = body.data?.id;
      if (givenId !== undefined) validateId(givenId);
      const ref = objectRef(def, (givenId as string | undefined) ?? def.generateId(), parent);

      return write(request, async (session, stampAtCommit) => {
        const existing = givenId === undefined ? null : await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE);
        if (existing) {
          // POST of an existing id answers the existing object, unchanged (§2).
          await requireObject(session, identity, ref, 'read');
          checkObjectPreconditions(preconditions, existing, existing, { method: 'POST' });
          setTimestampHeaders(reply, existing.last_modified);
          const acl = await aclOf(session, ref.uri);
          events.emit(session, request, { resourceName: def.name, parentId: ref.parentUri, action: 'read', timestamp: existing.last_modified, impactedObjects: [{ new: existing }] });
          const permissions = authorizer.visiblePermissions(identity.principals, acl);
          return () => ({ data: existing, permissions });
        }
        await requireCreate(session, identity, parent);
        await ensureParents(session, parent);
        checkObjectPreconditions(preconditions, null, null, { method: 'POST' });
        return writeObject(session, identity, ref, null, body, reply, { newId: givenId === undefined, stampAtCommit });
      });
    },

    async get(request: FastifyRequest, reply: FastifyReply) {
      const identity = request.identity;
      const ref = objectRefFromParams(def, request.params as Params);
      const preconditions = parsePreconditions(request.headers);
      const query = parseListQuery(splitUrl(request.raw.url).query);
      return events.withSession(request, storage, 'read', async (session) => {
        await session.preload?.(scopeOf(ref), ref.id, ref.uri); // the object and its ACL in one go
        const parentObject = await requireObject(session, identity, ref, 'read');
        const object = await session.objects.get(scopeOf(ref), ref.id);
        if (!object) throw objectNotFound(def.name, ref.id);
        const outcome = checkObjectPreconditions(preconditions, object, object, { method: 'GET' });
        setTimestampHeaders(reply, object.last_modified);
        setCacheHeaders(reply, cacheLifetime(services.settings, identity, { resourceName: def.name, parentUri: ref.parentUri, parent: parentObject }));
        if (outcome === 'not-modified') return reply.code(304).send();
        const acl = await aclOf(session, ref.uri);
        events.emit(session, request, { resourceName: def.name, parentId: ref.parentUri, action: 'read', timestamp: object.last_modified, impactedObjects: [{ new: object }] });
        const data = query.fields ? projectFields(object, query.fields) : object;
        return { data, permissions: authorizer.visiblePermissions(identity.principals, acl) };
      });
    },

    async put(request: FastifyRequest, reply: FastifyReply) {
      const identity = request.identity;
      const ref = objectRefFromParams(def, request.params as Params);
      const preconditions = parsePreconditions(request.headers);
      const body = parseWriteBody(request.body, def);
      return write(request, async (session, stampAtCommit) => {
        const existing = await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE);
        // PUT with If-None-Match: * on an existing object needs create, so a caller allowed to
        // create learns 412 rather than 403 (1.11).
        if (existing && preconditions.ifNoneMatch?.kind !== 'any') await requireObject(session, identity, ref, 'write');
        else {
          await requireCreate(session, identity, ref.ancestors.at(-1) ?? null);
          validateId(ref.id);
          await ensureParents(session, ref.ancestors.at(-1) ?? null);
        }
        checkObjectPreconditions(preconditions, existing, existing, { method: 'PUT' });
        assertBodyMatchesId(body.data, ref.id);
        return writeObject(session, identity, ref, existing, body, reply, { stampAtCommit });
      });
    },

    async patch(request: FastifyRequest, reply: FastifyReply) {
      const identity = request.identity;
      const ref = objectRefFromParams(def, request.params as Params);
      const preconditions = parsePreconditions(request.headers);
      const behavior = responseBehavior(request);
      const type = patchType(request);
      return write(request, async (session, stampAtCommit) => {
        await requireObject(session, identity, ref, 'write');
        const existing = await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE);
        if (!existing) throw objectNotFound(def.name, ref.id);
        checkObjectPreconditions(preconditions, existing, existing, { method: 'PATCH' });
        const previousAcl = await aclOf(session, ref.uri);
        const patched = applyPatch(type, request.body, userFields(existing), previousAcl, def, patchLimits);
        assertBodyMatchesId(patched.sentData, ref.id);
        let data = userFields(patched.data);
        if (def.processData) data = await def.processData(data, { settings: services.settings, session, existing, ref });
        const stored = await session.objects.update(scopeOf(ref), ref.id, data, { ...writeOptions(suppliedTimestamp(patched.sentData), existing), stampAtCommit });

        const merged = patched.replacePermissions ?? mergePermissions(previousAcl, patched.permissions ?? {}, type);
        const acl = cleanAcl(withAuthor(services, identity, merged));
        await session.permissions.set(ref.uri, acl);
        await def.afterWrite?.(session, ref.uri, stored);
        events.emit(session, request, { resourceName: def.name, parentId: ref.parentUri, action: 'update', timestamp: () => stored.last_modified, impactedObjects: [{ new: stored, old: existing }] });

        const permissions = authorizer.visiblePermissions(identity.principals, acl);
        const sent = type === 'json-patch' ? {} : userFields(patched.sentData);
        return () => {
          setTimestampHeaders(reply, stored.last_modified);
          return { data: patchResponseData(behavior, sent, stored, existing), permissions };
        };
      });
    },

    async delete(request: FastifyRequest, reply: FastifyReply) {
      const identity = request.identity;
      const ref = objectRefFromParams(def, request.params as Params);
      const preconditions = parsePreconditions(request.headers);
      const supplied = new URLSearchParams(splitUrl(request.raw.url).query).get('last_modified');
      return write(request, async (session, stampAtCommit) => {
        await requireObject(session, identity, ref, 'write');
        const existing = await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE);
        if (!existing) throw objectNotFound(def.name, ref.id);
        checkObjectPreconditions(preconditions, existing, existing, { method: 'DELETE' });
        const suppliedValue = supplied !== null && /^\d+$/.test(supplied) ? Number(supplied) : undefined;
        const tombstone = await session.objects.delete(scopeOf(ref), ref.id, { ...writeOptions(suppliedValue, existing), stampAtCommit });
        if (def.cascades) {
          await session.outbox.deleteTree(ref.uri);
          await session.objects.deleteTree(ref.uri);
        }
        await session.permissions.deleteTree(ref.uri);
        events.emit(session, request, { resourceName: def.name, parentId: ref.parentUri, action: 'delete', timestamp: () => tombstone.last_modified, impactedObjects: [{ new: tombstone, old: existing }] });
        return () => {
          setTimestampHeaders(reply, tombstone.last_modified);
          return { data: tombstone };
        };
      });
    },
  };
}

export type ResourceHandlers = ReturnType<typeof createResourceHandlers>;
