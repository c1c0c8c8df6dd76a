/**
 * `{record-url}/attachment`, as the `kinto-attachment` plugin serves it, one endpoint per method
 * (endpoints/): `POST` uploads a file and writes it on the record (post-attachment.ts), `DELETE`
 * removes it (delete-attachment.ts), `GET`/`HEAD` (Quire's) serve it (get-attachment.ts). The
 * record writes go through the engine's endpoints in process (endpoints/record-write.ts).
 *
 * `/buckets/default/…` works too: the personal bucket and the collection are created as for any
 * request there. Inside `/batch`, only DELETE runs (a batch's bodies are JSON); POST is refused.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AddressSlots } from '../auth/address-slots.js';
import { registerMethods } from '../engine/routes.js';
import { recordResource } from '../resources/records.js';
import { deleteAttachment } from './endpoints/delete-attachment.js';
import { getAttachment } from './endpoints/get-attachment.js';
import { postAttachment } from './endpoints/post-attachment.js';
import type { AttachmentRoutes } from './endpoints/routes-context.js';
import type { AttachmentFiles } from './files.js';
import type { LocalFileBackend } from './local-backend.js';
import { parseMimetypeOverrides } from './media-types.js';

const RECORD_PATH = '/v1/buckets/:bucket_id/collections/:collection_id/records/:record_id';
const DEFAULT_RECORD_PATH = '/v1/buckets/default/collections/:collection_id/records/:record_id';

type AttachmentEndpoint = (routes: AttachmentRoutes, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

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
  const { settings, authorizer } = app.services;
  const routes: AttachmentRoutes = {
    app,
    files,
    localFiles,
    publicBaseUrl,
    mimetypeOverrides: parseMimetypeOverrides(settings.attachment_mimetypes),
    access: recordResource.access ?? authorizer,
    uploadSlots: new AddressSlots(settings.attachment_uploads_max_per_address),
  };
  const bound = (endpoint: AttachmentEndpoint) => (request: FastifyRequest, reply: FastifyReply) =>
    endpoint(routes, request, reply);
  const handlers = {
    POST: bound(postAttachment),
    DELETE: bound(deleteAttachment),
    GET: bound(getAttachment),
    HEAD: bound(getAttachment),
  };
  // Multipart bodies are read by the POST handler as they stream: no parser buffers them here.
  void app.register(async (scope) => {
    scope.addContentTypeParser('multipart/form-data', (_request, _payload, done) => done(null, undefined));
    registerMethods(scope, `${RECORD_PATH}/attachment`, handlers);
    registerMethods(scope, `${DEFAULT_RECORD_PATH}/attachment`, handlers);
  });
}
