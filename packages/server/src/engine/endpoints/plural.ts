/**
 * The endpoints of a resource's list (`/…/records`): GET (a page), HEAD (a count), POST (a
 * creation), DELETE (a page deleted). Each puts the protocol's steps in order on the resource
 * model: authorisation, then the parents' existence, then the preconditions (§6).
 */
import type { ImpactedObject } from '../../events/types.js';
import type { Filter, ListedJson, Scope, StoredObject, StorageSession, Tombstone } from '../../storage/types.js';
import { parseWriteBody, suppliedTimestamp, userFields, validateId } from '../body.js';
import {
  objectRef,
  type ObjectRef,
  type RequestContext,
  type SessionContext,
  type WriteContext,
} from '../definition.js';
import { givenAcl, type Page, type ResourceModel } from '../model.js';
import { setStoredTimestampHeaders, setTimestampHeaders, type ResponseHead } from '../object-responses.js';
import { ensureParents, parentRefFromParams } from '../objects.js';
import { nextPageUrl } from '../pagination.js';
import { checkListPreconditions, checkObjectPreconditions, parsePreconditions } from '../preconditions.js';
import { compileProjection, type ListQuery } from '../querystring.js';
import { mapInSlices } from '../page-reader.js';
import { markUnmatched, unmatchedListing } from '../unmatched.js';
import type { EngineRequest } from '../request.js';
import { JsonText, setReadCacheHeaders, type Answer } from './answer.js';

type ListMethod = 'GET' | 'HEAD' | 'DELETE';

/** `GET` of a list: a page of what the caller may read, filtered and sorted (§7). */
export function listObjects(model: ResourceModel, request: EngineRequest, reply: ResponseHead): Promise<Answer> {
  return onListing(model, request, reply, 'GET');
}

/** `HEAD` of a list: the count of what a GET would list, in `Total-Objects`. */
export function headObjects(model: ResourceModel, request: EngineRequest, reply: ResponseHead): Promise<Answer> {
  return onListing(model, request, reply, 'HEAD');
}

/** `DELETE` of a list: deletes a page of what the caller may write and answers the tombstones. */
export function deleteObjects(model: ResourceModel, request: EngineRequest, reply: ResponseHead): Promise<Answer> {
  return onListing(model, request, reply, 'DELETE');
}

/** The three listing endpoints share their steps up to the page. */
async function onListing(
  model: ResourceModel,
  request: EngineRequest,
  reply: ResponseHead,
  method: ListMethod,
): Promise<Answer> {
  // The query's parsing and the page's first chunk in the owner's turn (loop-turns.ts).
  await request.turn();
  const { def, settings } = model;
  const context = model.context(request);
  const parent = parentRefFromParams(def, request.params);
  const query = request.query.listing;
  const requested = def.prepareList ? await def.prepareList(context, query) : query.filters;
  const preconditions = parsePreconditions(request.headers);
  const scope: Scope = { resourceName: def.name, parentId: parent ? parent.uri : '' };

  return request.work.run(method === 'DELETE' ? 'write' : 'read', async (session) => {
    const sessionContext = { ...context, session };
    const visible = await model.requireListing(sessionContext, parent, method === 'DELETE' ? 'write' : 'read');
    const parentObject = await ensureParents(session, parent);
    const timestamp = await session.objects.timestamp(scope);
    if (query.usedDeprecatedTo) {
      reply.header(
        'Alert',
        JSON.stringify({
          code: 'soft-eol',
          message: '_to is now deprecated, you should use _before instead',
          url: settings.project_docs,
        }),
      );
    }
    const outcome = checkListPreconditions(preconditions, timestamp, method);
    setTimestampHeaders(reply, timestamp);
    if (method !== 'DELETE') {
      const busting = query.expected === null ? undefined : { expected: query.expected, timestamp };
      setReadCacheHeaders(model, reply, context.identity, scope.parentId, parentObject, busting);
    }
    if (outcome === 'not-modified') {
      reply.code(304);
      return null;
    }
    if (method === 'HEAD') return countObjects(model, session, scope, [...requested, ...visible], reply);
    // A partial replica's poll (unmatched.ts): every change since, those outside its subset as stubs.
    const unmatched = method === 'GET' ? unmatchedListing(settings.partial_replicas_enabled, query, requested) : null;
    const filters: Filter[] = [...(unmatched?.listFilters ?? requested), ...visible];
    const listMethod = method === 'DELETE' ? 'DELETE' : 'GET';
    const page = await model.listPage(session, scope, query, filters, listMethod, request.turn);
    if (page.next) setNextPage(request, reply, query, page);
    if (unmatched) page.items = await markUnmatched(session, scope, unmatched, visible, page.items);
    if (method === 'DELETE') {
      const items = await mapInSlices(page.items, (item) => JSON.parse(item.json) as StoredObject, request.turn);
      return deletePage(model, sessionContext, parent, items, query, reply, timestamp);
    }
    return pageText(model, context, query, scope.parentId, timestamp, page.items);
  });
}

/**
 * A GET's page as JSON: the stored text as it is when the objects are shown as stored; else
 * each object parsed, presented, projected (`_fields`) and written in one pass, a slice at a
 * time. Only read events keep the parsed objects: otherwise each is garbage at once, young,
 * which the collector frees cheaply (less garbage survives into the old generation).
 */
async function pageText(
  model: ResourceModel,
  context: RequestContext,
  query: ListQuery,
  parentId: string,
  timestamp: number,
  items: ListedJson[],
): Promise<JsonText> {
  if (model.answersStoredText(query)) return new JsonText(`{"data":[${items.map((item) => item.json).join(',')}]}`);
  const read: ImpactedObject[] | null = model.wantsEvents('read') ? [] : null;
  const project = query.fields ? compileProjection(query.fields) : null;
  const texts = await mapInSlices(
    items,
    (item) => {
      const object = JSON.parse(item.json) as StoredObject | Tombstone;
      read?.push({ new: object });
      const shown = model.present(object);
      return JSON.stringify(project ? project(shown) : shown);
    },
    context.request.turn,
  );
  if (read) model.emit(context, parentId, 'read', timestamp, read);
  return new JsonText(`{"data":[${texts.join(',')}]}`);
}

/** The count of what the filters select, in both header spellings. */
async function countObjects(
  model: ResourceModel,
  session: StorageSession,
  scope: Scope,
  filters: Filter[],
  reply: ResponseHead,
): Promise<Answer> {
  const total = await model.count(session, scope, filters);
  reply.header('Total-Objects', String(total));
  reply.header('Total-Records', String(total));
  return null;
}

function setNextPage(request: EngineRequest, reply: ResponseHead, query: ListQuery, page: Pick<Page, 'next'>): void {
  if (!page.next) return;
  const url = nextPageUrl(request.origin, request.path, query.params, page.next.limit, page.next.token);
  reply.header('Next-Page', url);
}

async function deletePage(
  model: ResourceModel,
  context: SessionContext,
  parent: ObjectRef | null,
  items: StoredObject[],
  query: ListQuery,
  reply: ResponseHead,
  timestamp: number,
): Promise<Answer> {
  if (items.length === 0) return { data: [] };
  const tombstones = await model.deleteListed(context, parent, items, query, timestamp);
  setTimestampHeaders(
    reply,
    tombstones.reduce((max, tombstone) => Math.max(max, tombstone.last_modified), timestamp),
  );
  const data = tombstones as unknown as Array<Record<string, unknown>>;
  return { data: query.fields ? data.map(compileProjection(query.fields)) : data };
}

/** `POST`: creates the object (an id given or generated); an existing id answers it unchanged (§2). */
export async function createObject(model: ResourceModel, request: EngineRequest, reply: ResponseHead): Promise<Answer> {
  const def = model.def;
  const context = model.context(request);
  const parent = parentRefFromParams(def, request.params);
  const body = parseWriteBody(request.body, def);
  const preconditions = parsePreconditions(request.headers);
  const givenId = body.data?.id as string | undefined;
  if (givenId !== undefined) validateId(givenId, def.idPattern, model.settings.max_object_id_length);
  const ref = objectRef(def, givenId ?? model.newId(context), parent);

  const answer = await request.work.write(def.name, model.answersCopies, async (session, stampAtCommit) => {
    const accessContext = { ...context, session, sentData: body.data };
    const existing = givenId === undefined ? null : await model.getForUpdate(session, ref);
    if (existing) {
      await model.requireObject(accessContext, ref, 'read');
      checkObjectPreconditions(preconditions, existing, model.present(existing), { method: 'POST' });
      setTimestampHeaders(reply, existing.last_modified);
      const permissions = await model.visiblePermissions(accessContext, ref);
      model.emit(context, ref.parentUri, 'read', existing.last_modified, [{ new: existing }]);
      return { stored: existing, created: false, permissions };
    }
    await model.requireCreate(accessContext, parent);
    await ensureParents(session, parent);
    checkObjectPreconditions(preconditions, null, null, { method: 'POST' });
    const writeContext: WriteContext = { ...accessContext, ref, existing: null, sent: body.data ?? {}, method: 'POST' };
    const data = userFields(body.data ?? {});
    const { stored, permissions } = await model.store(
      writeContext,
      data,
      givenAcl(body) ?? {},
      suppliedTimestamp(body.data),
      { newId: givenId === undefined, stampAtCommit },
    );
    return { stored, created: true, permissions };
  });
  if (answer.created) {
    // Once committed: a change stamped at commit has its timestamp only now.
    setStoredTimestampHeaders(reply, answer.stored);
    reply.code(201);
  }
  return { data: model.present(answer.stored), permissions: answer.permissions };
}
