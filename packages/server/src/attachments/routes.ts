/**
 * `{record-url}/attachment`, as the `kinto-attachment` plugin serves it:
 *
 * - `POST` (multipart/form-data: `attachment`, the file; `data` and `permissions`, JSON): the
 *   caller's right to write the record (or to create it) is checked first, then the file streams
 *   to the backend (upload.ts), then the record is written — a PATCH, or a PUT when it does not
 *   exist, dispatched through the resource engine in this request's unit of work, so every rule
 *   of a record write applies (permissions, `If-Match`, schemas, quotas, history, events) — with
 *   `attachment` set. 201 (created) or 200, the attachment as body, `Location` the record's URL.
 * - `DELETE`: the record's `attachment` set to null (its file goes after commit); 204.
 * - `GET`/`HEAD` (Quire's): the file, to whoever may read the record — streamed from a local
 *   directory, or a redirect to the S3 object (signed when files are private).
 *
 * `/buckets/default/…` works too: the personal bucket and the collection are created as for any
 * request there. Inside `/batch`, only DELETE runs (a batch's bodies are JSON); POST is refused.
 */
import send from '@fastify/send';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Response } from 'light-my-request';
import { ApiError, ERRNO, invalidParameter, objectNotFound } from '../errors.js';
import { dispatchInternal } from '../http/internal-requests.js';
import { validateId } from '../engine/body.js';
import { objectRef, type ObjectRef } from '../engine/definition.js';
import { baseUrl } from '../http/base-url.js';
import { denied } from '../engine/denied.js';
import { ensureParents, FOR_UPDATE, scopeOf } from '../engine/objects.js';
import { registerMethods } from '../engine/routes.js';
import { bucketResource } from '../resources/buckets.js';
import { collectionResource } from '../resources/collections.js';
import { recordResource } from '../resources/records.js';
import { inheritedHeaders } from '../views/batch.js';
import type { LocalFileBackend } from './local-backend.js';
import { readIndex } from './file-index.js';
import { lingerAfterAnswer } from './linger.js';
import type { AttachmentFiles } from './files.js';
import { dispositionOf, parseMimetypeOverrides, servedTypeOf } from './media-types.js';
import { folderFor, newLocation } from './names.js';
import { backendError, discard, receiveUpload, tooLarge } from './upload.js';

const RECORD_PATH = '/v1/buckets/:bucket_id/collections/:collection_id/records/:record_id';
const DEFAULT_RECORD_PATH = '/v1/buckets/default/collections/:collection_id/records/:record_id';
/** Room for the multipart framing and the `data`/`permissions` fields beside the file, when judging a Content-Length. */
const FORM_OVERHEAD = 64 * 1024;

interface Params {
  bucket_id?: string;
  collection_id: string;
  record_id: string;
}

/** The ApiError a sub-request answered (its errno, message, details and headers kept). */
function relayedError(response: Response): ApiError {
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(response.body) as Record<string, unknown>;
  } catch {
    // not JSON: status only
  }
  const headers: Record<string, string> = {};
  for (const name of ['etag', 'last-modified', 'retry-after', 'www-authenticate', 'allow']) {
    const value = response.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return new ApiError(response.statusCode, typeof body.errno === 'number' ? body.errno : ERRNO.UNDEFINED, {
    ...(typeof body.message === 'string' ? { message: body.message } : {}),
    ...(typeof body.error === 'string' ? { error: body.error } : {}),
    details: body.details,
    headers,
  });
}

function isMultipart(request: FastifyRequest): boolean {
  return /^multipart\/form-data(\s*;|$)/i.test(request.headers['content-type'] ?? '');
}

/**
 * @param localFiles the local backend, whose files this server streams (null: S3, redirected to)
 * @param publicBaseUrl the capability's `base_url` for a request
 */
export function registerAttachmentRoutes(
  app: FastifyInstance,
  files: AttachmentFiles,
  localFiles: LocalFileBackend | null,
  publicBaseUrl: (request: FastifyRequest) => string,
): void {
  const { services } = app;
  const { settings, authorizer } = services;
  const mimetypeOverrides = parseMimetypeOverrides(settings.attachment_mimetypes);
  const access = recordResource.access ?? authorizer;

  /** The record the URL names; for `/buckets/default`, in the caller's bucket (created with the collection if missing). */
  async function recordRefOf(request: FastifyRequest): Promise<ObjectRef> {
    const params = request.params as Params;
    let bucketId = params.bucket_id;
    if (bucketId === undefined) {
      // Created as any request there creates them; the caller's If-Match / If-None-Match are
      // the record's, never applied to these implicit creations.
      if (!services.ensurePersonalCollection) throw denied(services, request.identity);
      bucketId = await services.ensurePersonalCollection(request, params.collection_id);
    }
    const bucket = objectRef(bucketResource, bucketId, null);
    return objectRef(recordResource, params.record_id, objectRef(collectionResource, params.collection_id, bucket));
  }

  /** The checks a record write makes before anything is received: may write it (or create it), valid id, parents exist. */
  async function checkWritable(request: FastifyRequest, ref: ObjectRef): Promise<void> {
    await request.work.run('read', async (session) => {
      const context = { request, identity: request.identity, settings, work: request.work, session };
      const existing = await session.objects.get(scopeOf(ref), ref.id);
      const allowed = existing
        ? await access.can(context, ref, 'write')
        : await access.canCreate(context, recordResource, ref.ancestors.at(-1) ?? null);
      if (!allowed) throw denied(services, request.identity);
      validateId(ref.id, recordResource.idPattern);
      await ensureParents(session, ref.ancestors.at(-1) ?? null);
    });
  }

  /** PATCHes the record (PUT when it does not exist) in this request's unit of work; a failure rolls it back. */
  async function writeRecord(
    request: FastifyRequest,
    ref: ObjectRef,
    body: Record<string, unknown>,
  ): Promise<Response> {
    const headers = { ...inheritedHeaders(request), 'content-type': 'application/json' };
    const payload = JSON.stringify(body);
    const url = `/v1${ref.uri.split('/').map(encodeURIComponent).join('/')}`;
    const dispatch = (method: string) =>
      dispatchInternal(app, request.work, { method, url, headers, payload, remoteAddress: request.ip });
    return request.work.run('write', async (session) => {
      // Read locked: nobody creates or deletes it before the write below decides (a creator
      // without write on a missing record must PUT: a PATCH would be refused before its 404).
      const exists = (await session.objects.get(scopeOf(ref), ref.id, FOR_UPDATE)) !== null;
      const response = await dispatch(exists ? 'PATCH' : 'PUT');
      if (response.statusCode >= 400) throw relayedError(response);
      return response;
    });
  }

  async function post(request: FastifyRequest, reply: FastifyReply) {
    try {
      return await receiveAndWrite(request, reply);
    } catch (error) {
      // Refused before the whole body was read (permissions, a limit…): close the connection
      // rather than read the rest of what may be a large file only to drop it.
      if (!request.raw.readableEnded) {
        reply.header('Connection', 'close');
        lingerAfterAnswer(request.raw, settings.attachment_upload_linger_seconds * 1000);
      }
      throw error;
    }
  }

  async function receiveAndWrite(request: FastifyRequest, reply: FastifyReply) {
    // A batch's sub-requests carry JSON; a file cannot travel in one.
    if (request.work.batch) {
      throw invalidParameter(
        'body',
        'requests',
        'Attachments cannot be uploaded within a batch: POST the file to the record’s /attachment URL.',
      );
    }
    if (!isMultipart(request))
      throw new ApiError(400, ERRNO.INVALID_PARAMETERS, { message: 'Content-Type should be multipart/form-data' });
    const ref = await recordRefOf(request);
    const [bucket, collection] = ref.ancestors as [ObjectRef, ObjectRef];
    const options = files.options.for(bucket.id, collection.id);
    await checkWritable(request, ref);
    const length = Number(request.headers['content-length']);
    if (
      options.maxSize !== null &&
      Number.isFinite(length) &&
      length > options.maxSize + 2 * settings.max_body_bytes + FORM_OVERHEAD
    ) {
      throw tooLarge(options.maxSize);
    }

    const folder = folderFor(options.folder, { bucket_id: bucket.id, collection_id: collection.id });
    let upload: Awaited<ReturnType<typeof receiveUpload>>;
    try {
      upload = await receiveUpload(request.raw, {
        backend: files.backend,
        journal: files.journal,
        collectionUri: collection.uri,
        recordId: ref.id,
        locationFor: (filename) => newLocation(folder, filename, options),
        gzipped: options.gzipped,
        maxSize: options.maxSize,
        extensions: options.extensions,
        allowedMimetypes: options.allowedMimetypes,
        mimetypeOverrides,
        maxFieldBytes: settings.max_body_bytes,
        limits: {
          idleMs: settings.attachment_upload_idle_timeout_seconds * 1000,
          deadlineMs: settings.attachment_upload_deadline_seconds * 1000,
          minBytesPerSecond: settings.attachment_upload_min_bytes_per_second,
        },
        renewEveryMs: (settings.attachment_sweep_grace_seconds * 1000) / 4,
      });
    } catch (error) {
      files.metrics.upload(error instanceof ApiError && error.status < 500 ? 'refused' : 'failed', 0);
      throw error;
    }

    const { attachment, intent } = upload;
    let response: Response;
    try {
      response = await files.writing(request.work, ref.uri, attachment, () =>
        writeRecord(request, ref, {
          data: { ...upload.data, attachment },
          ...(upload.permissions !== undefined ? { permissions: upload.permissions } : {}),
        }),
      );
    } catch (error) {
      files.metrics.upload(error instanceof ApiError && error.status < 500 ? 'refused' : 'failed', 0);
      await discard(files.backend, attachment, intent).catch(() => {});
      throw error;
    }
    // Committed: the record holds the file.
    await intent.done().catch(() => {});
    files.metrics.upload('stored', attachment.original?.size ?? attachment.size);
    for (const name of ['etag', 'last-modified']) {
      const value = response.headers[name];
      if (typeof value === 'string') reply.header(name, value);
    }
    reply.header('Location', `${baseUrl(services.settings, request)}/v1${ref.uri}`);
    return reply.code(response.statusCode === 201 ? 201 : 200).send(attachment);
  }

  async function remove(request: FastifyRequest, reply: FastifyReply) {
    const ref = await recordRefOf(request);
    const response = await writeRecordOrMissing(request, ref);
    for (const name of ['etag', 'last-modified']) {
      const value = response.headers[name];
      if (typeof value === 'string') reply.header(name, value);
    }
    return reply.code(204).send();
  }

  /** DELETE's write: a PATCH only (a missing record is a 404, not a record created without a file). */
  async function writeRecordOrMissing(request: FastifyRequest, ref: ObjectRef): Promise<Response> {
    const headers = { ...inheritedHeaders(request), 'content-type': 'application/json' };
    const url = `/v1${ref.uri.split('/').map(encodeURIComponent).join('/')}`;
    return request.work.run('write', async () => {
      const response = await dispatchInternal(app, request.work, {
        method: 'PATCH',
        url,
        headers,
        payload: JSON.stringify({ data: { attachment: null } }),
        remoteAddress: request.ip,
      });
      if (response.statusCode >= 400) throw relayedError(response);
      return response;
    });
  }

  /** The file of a record, to whoever may read the record. */
  async function download(request: FastifyRequest, reply: FastifyReply) {
    const ref = await recordRefOf(request);
    const found = await request.work.run('read', async (session) => {
      const context = { request, identity: request.identity, settings, work: request.work, session };
      if (!(await access.can(context, ref, 'read'))) throw denied(services, request.identity);
      validateId(ref.id, recordResource.idPattern);
      await ensureParents(session, ref.ancestors.at(-1) ?? null);
      const record = await session.objects.get(scopeOf(ref), ref.id);
      if (!record) throw objectNotFound('record', ref.id);
      const indexed = await readIndex(session.objects, ref.parentUri, ref.id);
      const attachment = record.attachment as { filename?: unknown } | null | undefined;
      return indexed
        ? {
            location: indexed.location,
            filename: typeof attachment?.filename === 'string' ? attachment.filename : 'file',
          }
        : null;
    });
    if (!found) throw new ApiError(404, ERRNO.INVALID_RESOURCE_ID, { message: 'This record has no attachment.' });
    const disposition = dispositionOf(servedTypeOf(found.location), found.filename);
    // The record's file changes with each upload: revalidate (ETag), never cache as immutable.
    reply.header('Cache-Control', 'private, no-cache');
    if (!localFiles) {
      const signed = settings.attachment_private
        ? await files.backend.signedUrl?.(found.location, settings.attachment_signed_url_ttl_seconds, found.filename)
        : null;
      const target = signed ?? `${publicBaseUrl(request)}${found.location}`;
      return reply.code(307).header('Location', target).header('Cache-Control', 'no-store').send();
    }
    return sendLocalFile(request, reply, localFiles, found.location, { 'Content-Disposition': disposition });
  }

  const handlers = { POST: post, DELETE: remove, GET: download, HEAD: download };
  // Multipart bodies are read by the POST handler as they stream: no parser buffers them here.
  void app.register(async (scope) => {
    scope.addContentTypeParser('multipart/form-data', (_request, _payload, done) => done(null, undefined));
    registerMethods(scope, `${RECORD_PATH}/attachment`, handlers);
    registerMethods(scope, `${DEFAULT_RECORD_PATH}/attachment`, handlers);
  });
}

/** The API's policy, and `sandbox`: a file opened in a tab is a document of no origin. */
const FILE_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; sandbox";
const fileResponses = new WeakSet<FastifyRequest>();

/** Files get FILE_CSP, set after the API's security headers (http/headers.ts, registered earlier). */
export function registerFileResponsePolicy(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (fileResponses.has(request)) reply.header('Content-Security-Policy', FILE_CSP);
    return payload;
  });
}

/** Sends a stored local file with Range, conditional requests (ETag, Last-Modified) and its type. */
export async function sendLocalFile(
  request: FastifyRequest,
  reply: FastifyReply,
  backend: LocalFileBackend,
  location: string,
  extraHeaders: Record<string, string> = {},
  immutable = false,
) {
  let path: string;
  try {
    path = backend.pathOf(location);
  } catch {
    throw new ApiError(404, ERRNO.MISSING_RESOURCE, {
      message: 'The resource you are looking for could not be found.',
    });
  }
  const sent = await send(request.raw, path.slice(backend.root.length), {
    root: backend.root,
    dotfiles: 'deny',
    index: false,
    acceptRanges: true,
    etag: true,
    lastModified: true,
    cacheControl: immutable,
    ...(immutable ? { immutable: true, maxAge: '365d' } : {}),
  });
  if (sent.type !== 'file') {
    const status = (sent.metadata as { error?: { status?: number } }).error?.status;
    if (status === 416 || status === 412) {
      throw new ApiError(status, ERRNO.INVALID_PARAMETERS, {
        error: status === 416 ? 'Range Not Satisfiable' : 'Precondition Failed',
        message: status === 416 ? 'The range is outside the file.' : 'The file does not match the precondition.',
        headers: sent.headers,
      });
    }
    if (sent.type === 'error' && status !== 404 && status !== 403)
      throw backendError((sent.metadata as { error: Error }).error);
    throw new ApiError(404, ERRNO.MISSING_RESOURCE, {
      message: 'The resource you are looking for could not be found.',
    });
  }
  reply.code(sent.statusCode);
  for (const [name, value] of Object.entries(sent.headers)) reply.header(name, value);
  const type = servedTypeOf(location);
  reply.header('Content-Type', type);
  // Opened in a tab, a file runs nothing: a sandboxed document with no script, and anything
  // but an image, audio, video, PDF or plain text is downloaded rather than shown.
  fileResponses.add(request);
  reply.header('Content-Disposition', dispositionOf(type, location.split('/').at(-1) ?? 'file'));
  for (const [name, value] of Object.entries(extraHeaders)) reply.header(name, value);
  return reply.send(sent.stream);
}
