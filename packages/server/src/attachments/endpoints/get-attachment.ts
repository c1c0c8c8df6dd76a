/**
 * `GET`/`HEAD {record}/attachment` (Quire's): the record's file, to whoever may read the record —
 * streamed from the local directory, or a redirect to the S3 object (signed when files are private).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { validateId } from '../../engine/body.js';
import type { ObjectRef } from '../../engine/definition.js';
import { denied } from '../../engine/denied.js';
import { ensureParents, scopeOf } from '../../engine/objects.js';
import { ApiError, ERRNO, objectNotFound } from '../../errors.js';
import { recordResource } from '../../resources/records.js';
import { readIndex } from '../file-index.js';
import { sendLocalFile } from '../file-responses.js';
import { dispositionOf, servedTypeOf } from '../media-types.js';
import { type AttachmentRoutes, accessContextOf, recordRefOf } from './routes-context.js';

export async function getAttachment(routes: AttachmentRoutes, request: FastifyRequest, reply: FastifyReply) {
  const { files, localFiles, app } = routes;
  const { settings } = app.services;
  const ref = await recordRefOf(routes, request);
  const found = await findFile(routes, request, ref);
  if (!found) throw new ApiError(404, ERRNO.INVALID_RESOURCE_ID, { message: 'This record has no attachment.' });
  const disposition = dispositionOf(servedTypeOf(found.location), found.filename);
  // The record's file changes with each upload: revalidate (ETag), never cache as immutable.
  reply.header('Cache-Control', 'private, no-cache');
  if (!localFiles) {
    const signed = settings.attachment_private
      ? await files.backend.signedUrl?.(found.location, settings.attachment_signed_url_ttl_seconds, found.filename)
      : null;
    const target = signed ?? `${routes.publicBaseUrl(request)}${found.location}`;
    return reply.code(307).header('Location', target).header('Cache-Control', 'no-store').send();
  }
  return sendLocalFile(request, reply, localFiles, found.location, { 'Content-Disposition': disposition });
}

/** The record's file (null: it has none), once the caller may read the record and it exists. */
async function findFile(
  routes: AttachmentRoutes,
  request: FastifyRequest,
  ref: ObjectRef,
): Promise<{ location: string; filename: string } | null> {
  return request.work.run('read', async (session) => {
    const context = accessContextOf(routes, request, session);
    if (!(await routes.access.can(context, ref, 'read'))) throw denied(routes.app.services, request.identity);
    validateId(ref.id, recordResource.idPattern);
    await ensureParents(session, ref.ancestors.at(-1) ?? null);
    const record = await session.objects.get(scopeOf(ref), ref.id);
    if (!record) throw objectNotFound('record', ref.id);
    const indexed = await readIndex(session.objects, ref.parentUri, ref.id);
    const attachment = record.attachment as { filename?: unknown } | null | undefined;
    if (!indexed) return null;
    return {
      location: indexed.location,
      filename: typeof attachment?.filename === 'string' ? attachment.filename : 'file',
    };
  });
}
