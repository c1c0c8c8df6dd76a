/**
 * The endpoints of one object (`/…/records/:record_id`): GET, PUT, PATCH, DELETE. Each puts the
 * protocol's steps in order on the resource model: authorisation, then the object id, then the
 * parents' existence, then the object, then the preconditions (§6), then the write.
 */
import { objectNotFound } from '../../errors.js';
import { unsupportedContentType } from '../../http/content.js';
import type { StoredObject } from '../../storage/types.js';
import { applyPatch, isPlainObject, parseWriteBody, suppliedTimestamp, userFields } from '../body.js';
import type { WriteContext } from '../definition.js';
import { givenAcl, type ResourceModel } from '../model.js';
import {
  assertBodyMatchesId,
  mergePermissions,
  PATCH_MEDIA_TYPES,
  patchResponseData,
  patchType,
  responseBehavior,
  setStoredTimestampHeaders,
  setTimestampHeaders,
  type ResponseHead,
} from '../object-responses.js';
import { aclOf, ensureParents, objectRefFromParams } from '../objects.js';
import { checkObjectPreconditions, parsePreconditions } from '../preconditions.js';
import { projectFields } from '../querystring.js';
import type { EngineRequest } from '../request.js';
import { setReadCacheHeaders, type Answer } from './answer.js';

/** `GET` of an object: 304 when `If-None-Match` names its version. */
export async function getObject(model: ResourceModel, request: EngineRequest, reply: ResponseHead): Promise<Answer> {
  const context = model.context(request);
  const ref = objectRefFromParams(model.def, request.params);
  const preconditions = parsePreconditions(request.headers);
  const query = request.query.listing;
  return request.work.run('read', async (session) => {
    const { object, parent } = await model.get({ ...context, session }, ref);
    const outcome = checkObjectPreconditions(preconditions, object, model.present(object), { method: 'GET' });
    setTimestampHeaders(reply, object.last_modified);
    setReadCacheHeaders(model, reply, context.identity, ref.parentUri, parent);
    if (outcome === 'not-modified') {
      reply.code(304);
      return null;
    }
    const permissions = await model.visiblePermissions({ ...context, session }, ref);
    model.emit(context, ref.parentUri, 'read', object.last_modified, [{ new: object }]);
    const shown = model.present(object);
    return { data: query.fields ? projectFields(shown, query.fields) : shown, permissions };
  });
}

/** `PUT`: creates or replaces the object, its ACL replaced by a non-empty `permissions`. */
export async function putObject(model: ResourceModel, request: EngineRequest, reply: ResponseHead): Promise<Answer> {
  const context = model.context(request);
  const ref = objectRefFromParams(model.def, request.params);
  const preconditions = parsePreconditions(request.headers);
  const body = parseWriteBody(request.body, model.def);
  const answer = await request.work.write(model.def.name, model.answersCopies, async (session, stampAtCommit) => {
    const accessContext = { ...context, session, sentData: body.data };
    const existing = await model.getForUpdate(session, ref);
    // PUT with If-None-Match: * on an existing object needs create, so a caller allowed to
    // create learns 412 rather than 403 (1.11).
    if (existing && preconditions.ifNoneMatch?.kind !== 'any') await model.requireObject(accessContext, ref, 'write');
    else {
      const parent = ref.ancestors.at(-1) ?? null;
      await model.requireCreate(accessContext, parent);
      model.validateId(ref.id);
      await ensureParents(session, parent);
    }
    checkObjectPreconditions(preconditions, existing, existing && model.present(existing), { method: 'PUT' });
    assertBodyMatchesId(body.data, ref.id);
    const previousAcl = existing ? await aclOf(session, ref.uri) : {};
    const writeContext: WriteContext = { ...accessContext, ref, existing, sent: body.data ?? {}, method: 'PUT' };
    const data = userFields(body.data ?? existing ?? {});
    const { stored, permissions } = await model.store(
      writeContext,
      data,
      givenAcl(body) ?? previousAcl,
      suppliedTimestamp(body.data),
      { stampAtCommit },
    );
    return { stored, permissions, created: existing === null };
  });
  // Once committed: a change stamped at commit has its timestamp only now (a batch's: later).
  setStoredTimestampHeaders(reply, answer.stored);
  reply.code(answer.created ? 201 : 200);
  return { data: model.present(answer.stored), permissions: answer.permissions };
}

/** `PATCH` in its three flavours (§4.4), answered as `Response-Behavior` asks (§4.5). */
export async function patchObject(model: ResourceModel, request: EngineRequest, reply: ResponseHead): Promise<Answer> {
  const def = model.def;
  const { settings } = model;
  const context = model.context(request);
  const ref = objectRefFromParams(def, request.params);
  const preconditions = parsePreconditions(request.headers);
  const behavior = responseBehavior(request.headers);
  const type = patchType(request.headers);
  if (def.patchTypes && !def.patchTypes.includes(type))
    throw unsupportedContentType(def.patchTypes.map((taken) => PATCH_MEDIA_TYPES[taken]));
  const sentData = isPlainObject(request.body) ? request.body.data : undefined;
  const limits = {
    maxOperations: settings.max_json_patch_operations,
    maxDepth: settings.max_json_depth,
    maxKeys: settings.max_json_keys,
  };
  // Its answer is a copy of what it stored (patchResponseData), made in a batch before commit.
  const copies = model.answersCopies || request.work.isOpen;
  const answer = await request.work.write(def.name, copies, async (session, stampAtCommit) => {
    const accessContext = { ...context, session, sentData };
    await model.requireObject(accessContext, ref, 'write');
    const existing = await model.getForUpdate(session, ref);
    if (!existing) throw objectNotFound(def.name, ref.id);
    checkObjectPreconditions(preconditions, existing, model.present(existing), { method: 'PATCH' });
    const previousAcl = await aclOf(session, ref.uri);
    const patched = applyPatch(type, request.body, userFields(existing), previousAcl, def, limits);
    assertBodyMatchesId(patched.sentData, ref.id);
    const acl = patched.replacePermissions ?? mergePermissions(previousAcl, patched.permissions ?? {}, type);
    const writeContext: WriteContext = { ...accessContext, ref, existing, sent: patched.sentData, method: 'PATCH' };
    const { stored, permissions } = await model.store(
      writeContext,
      userFields(patched.data),
      acl,
      suppliedTimestamp(patched.sentData),
      { stampAtCommit },
    );
    return { stored, permissions, existing, sent: type === 'json-patch' ? {} : userFields(patched.sentData) };
  });
  setTimestampHeaders(reply, answer.stored.last_modified);
  const data = patchResponseData(behavior, answer.sent, answer.stored, answer.existing) as StoredObject;
  return { data: model.present(data), permissions: answer.permissions };
}

/** `DELETE`: answers the tombstone; `?last_modified=` may set its timestamp (§5.2). */
export async function deleteObject(model: ResourceModel, request: EngineRequest, reply: ResponseHead): Promise<Answer> {
  const context = model.context(request);
  const ref = objectRefFromParams(model.def, request.params);
  const preconditions = parsePreconditions(request.headers);
  const supplied = request.query.get('last_modified');
  const suppliedValue = supplied !== null && /^\d+$/.test(supplied) ? Number(supplied) : undefined;
  const tombstone = await request.work.write(model.def.name, model.answersCopies, async (session, stampAtCommit) => {
    const accessContext = { ...context, session };
    await model.requireObject(accessContext, ref, 'write');
    const existing = await model.getForUpdate(session, ref);
    if (!existing) throw objectNotFound(model.def.name, ref.id);
    checkObjectPreconditions(preconditions, existing, model.present(existing), { method: 'DELETE' });
    return model.delete(accessContext, ref, existing, suppliedValue, stampAtCommit);
  });
  setStoredTimestampHeaders(reply, tombstone);
  return { data: tombstone };
}
