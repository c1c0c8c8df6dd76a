/**
 * `/buckets/default` (protocol-reference §13.1): each user's personal bucket. The id is derived
 * from the user id (§9.4); the bucket — and the collection a URL names — are created on first
 * access, then the engine's endpoint answers the request as if sent to `/buckets/<real id>/…`
 * (engine/in-process-call.ts), so responses, `Next-Page` and events show the real id, as
 * deployed clients expect. Inside `/batch` all of it joins the batch's transaction.
 */
import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { Identity } from '../auth/policy.js';
import { ConfigError } from '../settings/config-error.js';
import type { AuthSettings } from '../auth/settings.js';
import type { PermissionSettings } from '../permission/settings.js';
import type { ServerSettings } from '../server-settings.js';
import type { ViewSettings } from './settings.js';
import { invalidParameter, methodNotAllowed } from '../errors.js';
import { splitUrl } from '../http/url.js';
import { isPlainObject } from '../engine/body.js';
import { ID_PATTERN } from '../engine/definition.js';
import { denied } from '../engine/denied.js';
import { UnicityError } from '../storage/errors.js';
import type { Permissions, StorageSession, StoredObject } from '../storage/types.js';
import { callEndpoint } from '../engine/in-process-call.js';
import type { EngineCall } from '../engine/request.js';
import type { PersonalCaller } from '../request-context.js';
import { sendAnswer } from '../engine/routes.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = ViewSettings & AuthSettings & PermissionSettings & ServerSettings;

const PREFIX = '/v1/buckets/default';

/** §9.4: the first 32 hex digits of HMAC-SHA256(secret, user id), grouped like a UUID. */
export function personalBucketId(secret: string, userId: string): string {
  const hex = createHmac('sha256', secret).update(userId, 'utf8').digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The configured secret, else one derived from `userid_hmac_secret`: stable across restarts
 * and shared by every process that shares that secret. (Kinto's default is the empty string,
 * which lets anyone compute — and squat — another user's bucket id before its first use.)
 */
function defaultBucketSecret(settings: ModuleSettings): string {
  if (settings.default_bucket_hmac_secret !== null) return settings.default_bucket_hmac_secret;
  if (settings.userid_hmac_secret !== null) {
    return createHmac('sha256', settings.userid_hmac_secret).update('quire default bucket', 'utf8').digest('hex');
  }
  throw new ConfigError('Setting default_bucket_hmac_secret (or userid_hmac_secret) is required by the default bucket');
}

/** What the default bucket's functions share: the server, its settings and the ids' secret. */
interface DefaultBucket {
  app: FastifyInstance;
  settings: ModuleSettings;
  secret: string;
}

export function registerDefaultBucket(app: FastifyInstance): void {
  const { services } = app;
  const { settings } = services;
  if (!settings.default_bucket_enabled) return;
  const secret = defaultBucketSecret(settings);
  const bucket: DefaultBucket = { app, settings, secret };
  services.personalBucketId = (userId) => personalBucketId(secret, userId);
  services.capabilities.default_bucket = {
    description: 'The default bucket is an alias for a personal bucket where collections are created implicitly.',
    url: 'https://kinto.readthedocs.io/en/latest/api/1.x/buckets.html#personal-bucket-default',
  };
  // Called by features with routes of their own under /buckets/default (attachments): none of
  // the caller's headers (preconditions…) applies to these implicit creations.
  services.ensurePersonalCollection = (request, collectionId) =>
    ensurePersonalCollection(bucket, request, collectionId);
  // The batch answers a sub-request under /buckets/default through this, then the engine.
  services.personalCall = (caller, call) => personalCall(bucket, caller, call);

  const handler = (request: FastifyRequest, reply: FastifyReply) => answerOnRealBucket(bucket, request, reply);
  // Static segments win over `:bucket_id` in the router, so these catch every default-bucket URL.
  const methods: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
  app.route({ method: methods, url: PREFIX, handler });
  app.route({ method: methods, url: `${PREFIX}/*`, handler });
}

/** The author owns what is created implicitly (the explicit_permissions rule). */
function ownerAcl(settings: ModuleSettings, identity: Identity): Permissions {
  return settings.explicit_permissions && identity.userId ? { write: [identity.userId] } : {};
}

/** Creates the object unless it exists; an implicit creation is a `create` event like any other. */
async function createIfMissing(
  settings: ModuleSettings,
  caller: PersonalCaller,
  session: StorageSession,
  object: { resourceName: string; parentId: string; id: string; uri: string },
) {
  const { resourceName, parentId, id } = object;
  const scope = { resourceName, parentId };
  if (await session.objects.get(scope, id)) return;
  let stored: StoredObject;
  try {
    stored = await session.objects.create(scope, id, {});
  } catch (error) {
    // A concurrent first request created it: that is the outcome we want.
    if (error instanceof UnicityError) return;
    throw error;
  }
  await session.permissions.set(object.uri, ownerAcl(settings, caller.identity));
  caller.work.emit(caller.source, {
    resourceName,
    parentId,
    action: 'create',
    timestamp: stored.last_modified,
    impactedObjects: [{ new: stored }],
  });
}

/** The caller's personal bucket and, unless null, its collection `collectionId`: created if missing. */
async function createPersonal(
  { settings }: DefaultBucket,
  caller: PersonalCaller,
  bucketId: string,
  collectionId: string | null,
  createBucket = true,
): Promise<void> {
  const bucketUri = `/buckets/${bucketId}`;
  await caller.work.run('write', async (session) => {
    if (createBucket) await createIfMissing(settings, caller, session, bucketObject(bucketId));
    if (collectionId === null) return;
    const uri = `${bucketUri}/collections/${collectionId}`;
    await createIfMissing(settings, caller, session, {
      resourceName: 'collection',
      parentId: bucketUri,
      id: collectionId,
      uri,
    });
  });
}

function bucketObject(bucketId: string) {
  return { resourceName: 'bucket', parentId: '', id: bucketId, uri: `/buckets/${bucketId}` };
}

/** The implicit creations of a request naming collection `collectionId` under `/buckets/default`. */
async function ensurePersonalCollection(
  bucket: DefaultBucket,
  request: FastifyRequest,
  collectionId: string,
): Promise<string> {
  const { identity } = request;
  const { services } = bucket.app;
  if (identity.userId === null) throw denied(services, identity);
  if (bucket.settings.readonly) throw methodNotAllowed();
  if (!ID_PATTERN.test(collectionId)) throw invalidParameter('path', 'id', 'Invalid collection id');
  const bucketId = personalBucketId(bucket.secret, identity.userId);
  await createPersonal(bucket, { identity, work: request.work, source: request }, bucketId, collectionId);
  return bucketId;
}

/** A request under `/buckets/default`: the implicit creations, then the engine's endpoint on the real path. */
async function answerOnRealBucket(bucket: DefaultBucket, request: FastifyRequest, reply: FastifyReply) {
  const { path, query } = splitUrl(request.raw.url);
  const { body } = request;
  const contentType = body === undefined ? undefined : (request.headers['content-type'] ?? 'application/json');
  const headers = { ...request.headers, 'content-type': contentType };
  const caller = { identity: request.identity, work: request.work, source: request };
  const call = await personalCall(bucket, caller, { method: request.method, path, query, headers, body });
  // The engine's endpoint on the real path, in the request's unit of work (a batch's too).
  return sendAnswer(reply, await callEndpoint(bucket.app, request, call, reply));
}

/**
 * `call`, a request under `/buckets/default`, checked and its implicit creations made: the same
 * request on the real bucket's path (`{"data": {"id": "default"}}` on the bucket renamed too).
 */
async function personalCall(bucket: DefaultBucket, caller: PersonalCaller, call: EngineCall): Promise<EngineCall> {
  const { identity } = caller;
  const { app, settings } = bucket;
  if (identity.userId === null) throw denied(app.services, identity);
  if (settings.readonly) throw methodNotAllowed();
  const bucketId = personalBucketId(bucket.secret, identity.userId);
  const rest = call.path.slice(PREFIX.length);
  const segments = rest.split('/');
  const collectionId = segments[1] === 'collections' ? segments[2] : undefined;
  // A PUT on the bucket or on the collection itself creates it: no implicit creation then.
  const putsBucket = call.method === 'PUT' && rest === '';
  const putsCollection = call.method === 'PUT' && segments.length === 3 && collectionId !== undefined;
  if (collectionId !== undefined && !putsCollection && !ID_PATTERN.test(decodeURIComponent(collectionId))) {
    throw invalidParameter('path', 'id', 'Invalid collection id');
  }
  const implicitCollection = collectionId && !putsCollection ? decodeURIComponent(collectionId) : null;
  await createPersonal(bucket, caller, bucketId, implicitCollection, !putsBucket);

  let body = call.body;
  // `{"data": {"id": "default"}}` names the alias: the real id replaces it.
  if (rest === '' && isPlainObject(body) && isPlainObject(body.data) && body.data.id === 'default') {
    body = { ...body, data: { ...body.data, id: bucketId } };
  }
  return { ...call, path: `/v1/buckets/${bucketId}${rest}`, body };
}
