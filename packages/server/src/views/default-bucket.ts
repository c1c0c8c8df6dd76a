/**
 * `/buckets/default` (protocol-reference §13.1): each user's personal bucket. The id is derived
 * from the user id (§9.4); the bucket — and the collection a URL names — are created on first
 * access, then the request is re-run on `/buckets/<real id>/…`, so responses, `Next-Page` and
 * events show the real id, as deployed clients expect. Inside `/batch` the creation joins the
 * batch's transaction.
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
import { dispatchInternal } from '../http/internal-requests.js';
import { inheritedHeaders } from './batch.js';

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
export function defaultBucketSecret(settings: ModuleSettings): string {
  if (settings.default_bucket_hmac_secret !== null) return settings.default_bucket_hmac_secret;
  if (settings.userid_hmac_secret !== null) {
    return createHmac('sha256', settings.userid_hmac_secret).update('quire default bucket', 'utf8').digest('hex');
  }
  throw new ConfigError('Setting default_bucket_hmac_secret (or userid_hmac_secret) is required by the default bucket');
}

export function registerDefaultBucket(app: FastifyInstance): void {
  const { services } = app;
  const { settings } = services;
  if (!settings.default_bucket_enabled) return;
  const secret = defaultBucketSecret(settings);
  services.personalBucketId = (userId) => personalBucketId(secret, userId);
  services.capabilities.default_bucket = {
    description: 'The default bucket is an alias for a personal bucket where collections are created implicitly.',
    url: 'https://kinto.readthedocs.io/en/latest/api/1.x/buckets.html#personal-bucket-default',
  };

  /** The author owns what is created implicitly (the explicit_permissions rule). */
  function ownerAcl(identity: Identity): Permissions {
    return settings.explicit_permissions && identity.userId ? { write: [identity.userId] } : {};
  }

  /** Creates the object unless it exists; an implicit creation is a `create` event like any other. */
  async function createIfMissing(
    request: FastifyRequest,
    session: StorageSession,
    resourceName: string,
    parentId: string,
    id: string,
    uri: string,
  ) {
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
    await session.permissions.set(uri, ownerAcl(request.identity));
    request.work.emit(request, {
      resourceName,
      parentId,
      action: 'create',
      timestamp: stored.last_modified,
      impactedObjects: [{ new: stored }],
    });
  }

  /** The implicit creations of a request naming collection `collectionId` under `/buckets/default`. */
  async function ensurePersonalCollection(request: FastifyRequest, collectionId: string): Promise<string> {
    const { identity } = request;
    if (identity.userId === null) throw denied(services, identity);
    if (settings.readonly) throw methodNotAllowed();
    if (!ID_PATTERN.test(collectionId)) throw invalidParameter('path', 'id', 'Invalid collection id');
    const bucketId = personalBucketId(secret, identity.userId);
    const bucketUri = `/buckets/${bucketId}`;
    await request.work.run('write', async (session) => {
      await createIfMissing(request, session, 'bucket', '', bucketId, bucketUri);
      const uri = `${bucketUri}/collections/${collectionId}`;
      await createIfMissing(request, session, 'collection', bucketUri, collectionId, uri);
    });
    return bucketId;
  }
  // Called by features with routes of their own under /buckets/default (attachments): no
  // request is dispatched, so none of the caller's headers (preconditions…) applies to it.
  services.ensurePersonalCollection = ensurePersonalCollection;

  async function forward(request: FastifyRequest, reply: FastifyReply) {
    const { identity } = request;
    if (identity.userId === null) throw denied(services, identity);
    if (settings.readonly) throw methodNotAllowed();
    const bucketId = personalBucketId(secret, identity.userId);
    const bucketUri = `/buckets/${bucketId}`;
    const { path, query } = splitUrl(request.raw.url);
    const rest = path.slice(PREFIX.length);
    const segments = rest.split('/');
    const collectionId = segments[1] === 'collections' ? segments[2] : undefined;
    // A PUT on the bucket or on the collection itself creates it: no implicit creation then.
    const putsBucket = request.method === 'PUT' && rest === '';
    const putsCollection = request.method === 'PUT' && segments.length === 3 && collectionId !== undefined;
    if (collectionId !== undefined && !putsCollection && !ID_PATTERN.test(decodeURIComponent(collectionId))) {
      throw invalidParameter('path', 'id', 'Invalid collection id');
    }

    await request.work.run('write', async (session) => {
      if (!putsBucket) await createIfMissing(request, session, 'bucket', '', bucketId, bucketUri);
      if (collectionId && !putsCollection) {
        const id = decodeURIComponent(collectionId);
        await createIfMissing(request, session, 'collection', bucketUri, id, `${bucketUri}/collections/${id}`);
      }
    });

    let body = request.body;
    // `{"data": {"id": "default"}}` names the alias: the real id replaces it.
    if (rest === '' && isPlainObject(body) && isPlainObject(body.data) && body.data.id === 'default') {
      body = { ...body, data: { ...body.data, id: bucketId } };
    }
    // In the request's unit of work: inside a batch, the forwarded request joins its transaction.
    const headers = inheritedHeaders(request);
    if (body !== undefined) headers['content-type'] = request.headers['content-type'] ?? 'application/json';
    const response = await dispatchInternal(app, request.work, {
      method: request.method,
      url: `/v1${bucketUri}${rest}${query ? `?${query}` : ''}`,
      headers,
      remoteAddress: request.ip,
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    for (const [name, value] of Object.entries(response.headers)) {
      if (value === undefined || ['content-length', 'connection', 'transfer-encoding', 'date'].includes(name)) continue;
      void reply.header(name, value);
    }
    return reply.code(response.statusCode).send(response.body === '' ? undefined : response.rawPayload);
  }

  // Static segments win over `:bucket_id` in the router, so these catch every default-bucket URL.
  const methods: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
  app.route({ method: methods, url: PREFIX, handler: forward });
  app.route({ method: methods, url: `${PREFIX}/*`, handler: forward });
}
