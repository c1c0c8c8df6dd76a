/**
 * What the attachment endpoints share: the server, the files, and how a request names its
 * record and is judged on it (the records' access policy, as the engine judges a record request).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AddressSlots } from '../../auth/address-slots.js';
import type { AccessContext, AccessPolicy, ObjectRef } from '../../engine/definition.js';
import { objectRef } from '../../engine/definition.js';
import { denied } from '../../engine/denied.js';
import { engineRequestOf } from '../../engine/routes.js';
import { bucketResource } from '../../resources/buckets.js';
import { collectionResource } from '../../resources/collections.js';
import { recordResource } from '../../resources/records.js';
import type { StorageSession } from '../../storage/types.js';
import type { AttachmentFiles } from '../files.js';
import type { LocalFileBackend } from '../local-backend.js';

export interface AttachmentRoutes {
  app: FastifyInstance;
  files: AttachmentFiles;
  /** The local backend, whose files this server streams (null: S3, redirected to). */
  localFiles: LocalFileBackend | null;
  /** The capability's `base_url` for a request. */
  publicBaseUrl: (request: FastifyRequest) => string;
  /** `attachment_mimetypes`, parsed. */
  mimetypeOverrides: Record<string, string>;
  /** Who may read or write a record: the records' own policy, else the default one. */
  access: AccessPolicy;
  /** Uploads in progress per client address. */
  uploadSlots: AddressSlots;
}

interface Params {
  bucket_id?: string;
  collection_id: string;
  record_id: string;
}

/**
 * The record the URL names; for `/buckets/default`, in the caller's bucket (created with the
 * collection if missing).
 */
export async function recordRefOf({ app }: AttachmentRoutes, request: FastifyRequest): Promise<ObjectRef> {
  const { services } = app;
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

/** The context an access policy judges `request` in. */
export function accessContextOf(
  { app }: AttachmentRoutes,
  request: FastifyRequest,
  session: StorageSession,
): AccessContext {
  return {
    request: engineRequestOf(request),
    identity: request.identity,
    settings: app.services.settings,
    work: request.work,
    session,
  };
}
