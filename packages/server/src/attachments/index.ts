/**
 * Attachments (the `kinto-attachment` plugin's protocol), on when `attachment_enabled`: files on
 * records, kept in a local directory or in S3-compatible storage, announced by the capability
 * `attachments` with the `base_url` they are served from.
 *
 * - routes.ts: `POST`/`DELETE`/`GET {record}/attachment`, one endpoint each in endpoints/;
 * - file-responses.ts: files served (local backend) and the policy they carry;
 * - upload.ts: the multipart body streamed, hashed and checked into the backend;
 * - record-hooks.ts: the hooks on records, collections and buckets (the field is the server's,
 *   files follow their records and go with them);
 * - file-index.ts: which file each record holds; journal.ts: crash safety and the sweeper;
 * - local-backend.ts, s3-backend.ts: the two backends (backend.ts).
 *
 * With the local backend, and unless files are private, this server serves them at
 * `/v1/attachments/<location>` (Range, ETag, `Cache-Control: immutable`: a location never
 * changes content).
 */
import { join } from 'node:path';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ERRNO } from '../errors.js';
import { baseUrl } from '../http/base-url.js';
import { registerMethods } from '../engine/routes.js';
import type { FileBackend } from './backend.js';
import { AttachmentFiles } from './files.js';
import { Journal, startSweeper } from './journal.js';
import { LocalFileBackend } from './local-backend.js';
import { attachmentMetrics } from './metrics.js';
import { folderPrefixes, isFileLocation } from './names.js';
import { attachmentExtensions } from './record-hooks.js';
import { registerFileResponsePolicy, sendLocalFile } from './file-responses.js';
import { registerAttachmentRoutes } from './routes.js';
import { S3FileBackend, s3PublicUrl } from './s3-backend.js';
import { AttachmentOptions, type AttachmentSettings } from './settings.js';

const SERVED_PREFIX = '/v1/attachments';

/** The backend the settings choose: S3 when a bucket is named, else the local directory. */
export async function createFileBackend(
  settings: AttachmentSettings & { data_dir: string },
  log: () => FastifyBaseLogger | undefined = () => undefined,
): Promise<FileBackend> {
  if (settings.attachment_aws_bucket_name !== null) return S3FileBackend.create(settings, log);
  return new LocalFileBackend(settings.attachment_base_path ?? join(settings.data_dir, 'attachments')).open();
}

export async function registerAttachments(app: FastifyInstance): Promise<void> {
  const { services } = app;
  const { settings, storage } = services;
  if (!settings.attachment_enabled) return;
  const log = () => app.log;
  const backend = await createFileBackend(settings, log);
  const folders = [
    settings.attachment_folder,
    ...Object.values(settings.attachment_resources).flatMap((entry) =>
      entry.folder === undefined ? [] : [entry.folder],
    ),
  ];
  const journal = new Journal(backend, storage, {
    graceMs: settings.attachment_sweep_grace_seconds * 1000,
    log,
    uploadPrefixes: folderPrefixes(folders),
  });
  const files = new AttachmentFiles(
    backend,
    journal,
    new AttachmentOptions(settings),
    attachmentMetrics(services.metrics, backend.name),
    log,
  );
  const localFiles = backend instanceof LocalFileBackend ? backend : null;

  const configured = settings.attachment_base_url;
  const publicBaseUrl = (request: FastifyRequest): string => {
    if (configured) return configured.endsWith('/') ? configured : `${configured}/`;
    if (localFiles) return `${baseUrl(services.settings, request)}${SERVED_PREFIX}/`;
    return s3PublicUrl(settings);
  };
  services.capabilities.attachments = (request: FastifyRequest) => ({
    description: 'Add file attachments to records',
    url: 'https://github.com/Kinto/kinto-attachment/',
    version: services.version,
    base_url: publicBaseUrl(request),
    gzipped: settings.attachment_gzipped,
    // Quire's: what clients may check before sending.
    max_size: settings.attachment_max_size,
    private: settings.attachment_private,
  });
  // As the original: a read-only server writes nothing, not even a probe.
  services.heartbeats.attachments = async () => (settings.readonly ? true : backend.ping());
  services.resourceExtensions.push(...attachmentExtensions(files, settings.storage_max_fetch_size));
  registerAttachmentRoutes(app, files, localFiles, publicBaseUrl);
  registerFileResponsePolicy(app);
  if (localFiles && !settings.attachment_private) registerFileServing(app, localFiles);

  let stopSweeper: (() => Promise<void>) | null = null;
  if (settings.attachment_sweep_interval_seconds > 0) {
    app.addHook('onReady', async () => {
      stopSweeper = startSweeper(journal, settings.attachment_sweep_interval_seconds * 1000, log);
    });
  }
  app.addHook('onClose', async () => {
    await stopSweeper?.();
    await backend.close();
  });
}

/** `GET /v1/attachments/<location>`: the local backend's files, public as the original's `base_url`. */
function registerFileServing(app: FastifyInstance, backend: LocalFileBackend): void {
  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    const location = (request.params as { '*': string })['*'];
    if (!isFileLocation(location))
      throw new ApiError(404, ERRNO.MISSING_RESOURCE, {
        message: 'The resource you are looking for could not be found.',
      });
    return sendLocalFile(request, reply, backend, location, {}, true);
  };
  registerMethods(app, `${SERVED_PREFIX}/*`, { GET: serve, HEAD: serve });
}
