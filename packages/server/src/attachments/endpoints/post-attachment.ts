/**
 * `POST {record}/attachment` (multipart/form-data: `attachment`, the file; `data` and
 * `permissions`, JSON): the caller's right to write the record (or to create it) is checked
 * first, then the file streams to the backend (upload.ts), then the record is written with
 * `attachment` set (record-write.ts). 201 (created) or 200, the attachment as body, `Location`
 * the record's URL. Inside `/batch` it is refused: a batch's bodies are JSON.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { validateId } from '../../engine/body.js';
import type { ObjectRef } from '../../engine/definition.js';
import { denied } from '../../engine/denied.js';
import type { CollectedHead } from '../../engine/in-process-call.js';
import { ensureParents, scopeOf } from '../../engine/objects.js';
import { ApiError, ERRNO, invalidParameter } from '../../errors.js';
import { baseUrl } from '../../http/base-url.js';
import { toApiError } from '../../http/error-handler.js';
import { recordResource } from '../../resources/records.js';
import { lingerAfterAnswer } from '../linger.js';
import { folderFor, newLocation } from '../names.js';
import type { ResolvedAttachmentOptions } from '../settings.js';
import { discard, type ReceivedUpload, receiveUpload, tooLarge } from '../upload.js';
import { writeRecord } from './record-write.js';
import { type AttachmentRoutes, accessContextOf, recordRefOf } from './routes-context.js';

/** Room for the multipart framing and the `data`/`permissions` fields beside the file (judging a Content-Length). */
const FORM_OVERHEAD = 64 * 1024;

export async function postAttachment(routes: AttachmentRoutes, request: FastifyRequest, reply: FastifyReply) {
  try {
    const refusal = () =>
      new ApiError(429, ERRNO.CLIENT_REACHED_CAPACITY, {
        message: 'Too many uploads in progress from this address (attachment_uploads_max_per_address).',
        headers: { 'Retry-After': '1' },
      });
    return await routes.uploadSlots.run(request.ip, () => receiveAndWrite(routes, request, reply), refusal);
  } catch (error) {
    // Refused before the whole body was read (permissions, a limit…): close the connection
    // rather than read the rest of what may be a large file only to drop it.
    if (!request.raw.readableEnded) {
      reply.header('Connection', 'close');
      lingerAfterAnswer(request.raw, routes.app.services.settings.attachment_upload_linger_seconds * 1000);
    }
    throw error;
  }
}

async function receiveAndWrite(routes: AttachmentRoutes, request: FastifyRequest, reply: FastifyReply) {
  const { files, app } = routes;
  const { settings } = app.services;
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
  const ref = await recordRefOf(routes, request);
  const [bucket, collection] = ref.ancestors as [ObjectRef, ObjectRef];
  const options = files.options.for(bucket.id, collection.id);
  await checkWritable(routes, request, ref);
  const length = Number(request.headers['content-length']);
  if (
    options.maxSize !== null &&
    Number.isFinite(length) &&
    length > options.maxSize + 2 * settings.max_body_bytes + FORM_OVERHEAD
  ) {
    throw tooLarge(options.maxSize);
  }
  const upload = await receive(routes, request, ref, options);
  const { attachment, intent } = upload;
  let head: CollectedHead;
  try {
    const body = {
      data: { ...upload.data, attachment },
      ...(upload.permissions !== undefined ? { permissions: upload.permissions } : {}),
    };
    head = await files.writing(request.work, ref.uri, attachment, () =>
      writeRecord(routes, request, ref, body, { create: true }),
    );
  } catch (error) {
    files.metrics.upload(toApiError(error, settings).status < 500 ? 'refused' : 'failed', 0);
    await discard(files.backend, attachment, intent).catch(() => {});
    throw error;
  }
  // Committed: the record holds the file.
  await intent.done().catch(() => {});
  files.metrics.upload('stored', attachment.original?.size ?? attachment.size);
  for (const name of ['etag', 'last-modified']) {
    const value = head.headers.get(name);
    if (value !== undefined) reply.header(name, value);
  }
  reply.header('Location', `${baseUrl(settings, request)}/v1${ref.uri}`);
  return reply.code(head.status === 201 ? 201 : 200).send(attachment);
}

function isMultipart(request: FastifyRequest): boolean {
  return /^multipart\/form-data(\s*;|$)/i.test(request.headers['content-type'] ?? '');
}

/** A record write's checks, before anything is received: may write it (or create it), valid id, parents exist. */
async function checkWritable(routes: AttachmentRoutes, request: FastifyRequest, ref: ObjectRef): Promise<void> {
  const { access, app } = routes;
  await request.work.run('read', async (session) => {
    const context = accessContextOf(routes, request, session);
    const existing = await session.objects.get(scopeOf(ref), ref.id);
    const allowed = existing
      ? await access.can(context, ref, 'write')
      : await access.canCreate(context, recordResource, ref.ancestors.at(-1) ?? null);
    if (!allowed) throw denied(app.services, request.identity);
    validateId(ref.id, recordResource.idPattern);
    await ensureParents(session, ref.ancestors.at(-1) ?? null);
  });
}

/** The file streamed into the backend, with the form's other fields. */
async function receive(
  routes: AttachmentRoutes,
  request: FastifyRequest,
  ref: ObjectRef,
  options: ResolvedAttachmentOptions,
): Promise<ReceivedUpload> {
  const { files, app } = routes;
  const { settings } = app.services;
  const [bucket, collection] = ref.ancestors as [ObjectRef, ObjectRef];
  const folder = folderFor(options.folder, { bucket_id: bucket.id, collection_id: collection.id });
  try {
    return await receiveUpload(request.raw, {
      backend: files.backend,
      journal: files.journal,
      collectionUri: collection.uri,
      recordId: ref.id,
      locationFor: (filename) => newLocation(folder, filename, options),
      gzipped: options.gzipped,
      maxSize: options.maxSize,
      extensions: options.extensions,
      allowedMimetypes: options.allowedMimetypes,
      mimetypeOverrides: routes.mimetypeOverrides,
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
}
