/**
 * Attachment settings (attachments/): named after the `kinto-attachment` plugin's
 * (`attachment.base_path` → `attachment_base_path`, `attachment.aws.bucket_name` →
 * `attachment_aws_bucket_name`, environment `QUIRE_ATTACHMENT_BASE_PATH`…). The backend is S3 when
 * `attachment_aws_bucket_name` is set, else a local directory, as the original picks S3 unless
 * `base_path` is given.
 *
 * Kinto's per-resource settings (`attachment.resources.<bid>[.<cid>].<name>`) are names built
 * from ids, which cannot be declared one by one: they are one JSON setting,
 * `attachment_resources`, `{"<bid>": {…}, "<bid>/<cid>": {…}}` (the collection's entry wins), as
 * the quotas' limits are grouped.
 */
import { Type, type Static } from '@sinclair/typebox';
import { ConfigError } from '../settings/config-error.js';
import { List, Nullable, type SettingProblem, type SettingSchemas, type SettingValues } from '../settings/schema.js';
import { FOLDER_PLACEHOLDERS, resolveExtensions } from './names.js';

const ID = '[a-zA-Z0-9_-]+';

/** What `attachment_resources` may override for a bucket or a collection. */
const OVERRIDE_PROPERTIES = {
  randomize: Type.Optional(Type.Boolean()),
  keep_old_files: Type.Optional(Type.Boolean()),
  gzipped: Type.Optional(Type.Boolean()),
  folder: Type.Optional(Type.String()),
  max_size: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  extensions: Type.Optional(Type.String()),
  allowed_mimetypes: Type.Optional(Type.Array(Type.String())),
};
const OVERRIDES = Type.Object(OVERRIDE_PROPERTIES, { additionalProperties: false });
export type AttachmentOverrides = Static<typeof OVERRIDES>;
const OVERRIDE_NAMES = Object.keys(OVERRIDE_PROPERTIES);

function overridesProblem({ keyword, path, params }: SettingProblem): string | { where: string; why: string } {
  const [key, name] = path;
  if (key === undefined) {
    if (keyword === 'additionalProperties')
      return `key "${String(params.additionalProperty)}" is not a bucket id nor "<bucket id>/<collection id>"`;
    return 'expected a JSON object of bucket ids (or "<bid>/<cid>") to settings';
  }
  if (name === undefined && keyword === 'additionalProperties') {
    return {
      where: ` ("${key}")`,
      why:
        `"${String(params.additionalProperty)}" cannot be set per bucket or collection (only ` +
        `${OVERRIDE_NAMES.join(', ')})`,
    };
  }
  return { where: ` ("${key}")`, why: `${name ?? 'the value'} has the wrong type` };
}

export const ATTACHMENT_SETTINGS = {
  attachment_enabled: Type.Boolean({
    default: false,
    description:
      'Files on records, wire-compatible with the `kinto-attachment` plugin: `POST`/`DELETE ' +
      '{record}/attachment`, capability `attachments` (see ' +
      '[Attachments](packages/server/README.md#attachments)).',
  }),
  attachment_base_path: Nullable(Type.String(), {
    default: null,
    description:
      'Local directory of the files (the local backend, used unless `attachment_aws_bucket_name` is set). ' +
      'Unset: `<data_dir>/attachments`.',
  }),
  attachment_base_url: Nullable(Type.String({ pattern: '^(https?:)?//' }), {
    default: null,
    invalid: () => 'an absolute http(s) URL, e.g. https://cdn.example.com/files/',
    description:
      'Where clients fetch files from: the capability’s `base_url`, to which a record’s `attachment.location` ' +
      'is relative (a `/` is added if missing). Unset: served by Quire at `<server>/v1/attachments/` (local ' +
      'backend), or the S3 bucket’s own URL.',
  }),
  attachment_folder: Type.String({
    default: '{bucket_id}/{collection_id}',
    description:
      'Folder of each file below the base path, a pattern of ' +
      `${FOLDER_PLACEHOLDERS.map((name) => `\`{${name}}\``).join(', ')} (empty: all files in one folder).`,
  }),
  attachment_randomize: Type.Boolean({
    default: true,
    description:
      'Name files with a random UUID (and the original extension). False keeps the sanitised original name, ' +
      'in a folder of its own named by a random UUID: still unguessable, never overwritten.',
  }),
  attachment_keep_old_files: Type.Boolean({
    default: false,
    description:
      'Keep the file when its attachment is replaced or removed, or its record, collection or bucket is ' +
      'deleted (clients with stale copies can still download it).',
  }),
  attachment_gzipped: Type.Boolean({
    default: false,
    description:
      'Store files gzipped (`<name>.gz`, `application/x-gzip`); the record’s `attachment.original` then ' +
      'describes the file as sent.',
  }),
  attachment_extensions: Type.String({
    default: 'default',
    description:
      'Allowed file extensions, as the original’s: groups (`text`, `documents`, `images`, `audio`, `video`, ' +
      '`data`, `scripts`, `archives`, `executables`, `default` = documents+text+images+data) and extensions, ' +
      'joined by `+` or spaces, e.g. `images+pdf`; `any`: every extension, none included.',
  }),
  attachment_mimetypes: Type.String({
    default: '',
    description:
      'Media types recorded for given extensions, over what the client sent: ' +
      '`.txt:text/plain;.pem:application/x-pem-file` (as the original’s; `.pem` and `.geojson` are built in).',
  }),
  attachment_allowed_mimetypes: List({
    default: [],
    description:
      'Allowed media types of files (`image/png`, `image/*`); empty: any. Others are refused with 400 before ' +
      'they are stored.',
  }),
  attachment_max_size: Nullable(Type.Integer({ minimum: 0 }), {
    default: 100 * 1024 * 1024,
    description:
      'Largest file accepted, in bytes (unset: no limit); a larger one is refused with 413 as soon as its ' +
      'size shows (its `Content-Length`, or while it streams), and nothing is kept.',
  }),
  attachment_private: Type.Boolean({
    default: false,
    description:
      'Files are not public: Quire does not serve them at `base_url` (set S3 ACL to private too); readers of ' +
      'the record download them from `GET {record}/attachment` (streamed, or redirected to a short-lived ' +
      'signed S3 URL). False, as the original: anyone with the location can fetch the file.',
  }),
  attachment_signed_url_ttl_seconds: Type.Integer({
    default: 300,
    minimum: 1,
    maximum: 7 * 24 * 3600,
    description: 'Lifetime of the signed S3 URLs `GET {record}/attachment` redirects to.',
  }),
  attachment_resources: Type.Record(Type.String({ pattern: `^${ID}(/${ID})?$` }), OVERRIDES, {
    default: {},
    additionalProperties: false,
    invalid: overridesProblem,
    description:
      'Settings of given buckets or collections (Kinto’s `attachment.resources.<bid>[.<cid>].<name>`): ' +
      '`{"<bid>": {"randomize": false}, "<bid>/<cid>": {"keep_old_files": true}}`; the collection’s entry ' +
      `wins. Names: ${OVERRIDE_NAMES.map((name) => `\`${name}\``).join(', ')}.`,
  }),
  attachment_upload_idle_timeout_seconds: Type.Number({
    default: 30,
    minimum: 1,
    description: 'An upload that sends nothing for this long is abandoned (408); what it sent is removed.',
  }),
  attachment_upload_deadline_seconds: Type.Number({
    default: 3600,
    minimum: 1,
    maximum: 7 * 24 * 3600,
    description:
      'An upload whose body has not all arrived this long after it began is cut (408), however steadily ' +
      'it trickles; what it sent is removed.',
  }),
  attachment_upload_min_bytes_per_second: Type.Integer({
    default: 1024,
    minimum: 0,
    description:
      'Least average rate of an upload, over each span of `attachment_upload_idle_timeout_seconds` ' +
      '(0: none): a slower one is cut (408). Spans in which the file store held the upload back do not count.',
  }),
  attachment_uploads_max_per_address: Type.Integer({
    default: 8,
    minimum: 1,
    description:
      'Uploads a client address (IPv6: per /64) may have in progress at once, per process, whoever sends them ' +
      '(accounts made at will from one address count together); one more is answered 429 with `Retry-After`.',
  }),
  attachment_upload_linger_seconds: Type.Number({
    default: 5,
    minimum: 0,
    maximum: 60,
    description:
      'After answering an upload refused before its body was read (403, 413, 408…), the connection reads ' +
      'and drops what the client still sends for at most this long before closing, so that the client gets ' +
      'the answer rather than a reset connection (0: close at once).',
  }),
  attachment_sweep_interval_seconds: Type.Integer({
    default: 300,
    minimum: 0,
    description:
      'How often each process looks for the files of uploads and deletions a crash interrupted, and removes ' +
      'those no record holds (0: never).',
  }),
  attachment_sweep_grace_seconds: Type.Integer({
    default: 600,
    minimum: 10,
    description:
      'Age at which an interrupted upload or deletion is swept. Uploads under way renew their mark every ' +
      'quarter of it.',
  }),
  attachment_aws_bucket_name: Nullable(Type.String({ minLength: 1 }), {
    default: null,
    description:
      'S3 bucket of the files: selects the S3 backend (any S3-compatible service, see `attachment_aws_endpoint_url`).',
  }),
  attachment_aws_region: Type.String({ default: 'us-east-1', description: 'S3 region.' }),
  attachment_aws_endpoint_url: Nullable(Type.String({ pattern: '^https?://' }), {
    default: null,
    invalid: () => 'an http(s) URL, e.g. https://s3.eu-west-1.amazonaws.com',
    description:
      'S3 endpoint of an S3-compatible service (MinIO, Ceph, R2…). Unset: built from ' +
      '`attachment_aws_host`/`_port`/`_is_secure` when a host is set, else AWS’s.',
  }),
  attachment_aws_host: Nullable(Type.String(), {
    default: null,
    description: 'S3 host (the original’s setting; `attachment_aws_endpoint_url` is simpler).',
  }),
  attachment_aws_port: Nullable(Type.Integer({ minimum: 1, maximum: 65535 }), {
    default: null,
    description: 'S3 port, with `attachment_aws_host`.',
  }),
  attachment_aws_is_secure: Type.Boolean({ default: true, description: 'https to `attachment_aws_host`.' }),
  attachment_aws_use_path_style: Type.Boolean({
    default: false,
    description:
      'Path-style S3 URLs (`<endpoint>/<bucket>/<key>`), as most S3-compatible services need; else ' +
      'virtual-hosted (`<bucket>.<endpoint>`).',
  }),
  attachment_aws_access_key: Nullable(Type.String(), {
    default: null,
    secret: true,
    description: 'S3 access key id (unset: the AWS SDK’s default credentials chain).',
  }),
  attachment_aws_secret_key: Nullable(Type.String(), {
    default: null,
    secret: true,
    description: 'S3 secret access key.',
  }),
  attachment_aws_acl: Nullable(Type.String(), {
    default: 'public-read',
    description:
      'Canned ACL of stored files, as the original’s default; unset (or with `attachment_private`): none, the ' +
      'bucket’s policy applies.',
  }),
} satisfies SettingSchemas;

export type AttachmentSettings = SettingValues<typeof ATTACHMENT_SETTINGS>;

export function checkAttachmentSettings(settings: AttachmentSettings): void {
  if (!settings.attachment_enabled) return;
  const folders = [
    settings.attachment_folder,
    ...Object.values(settings.attachment_resources).flatMap((entry) =>
      entry.folder === undefined ? [] : [entry.folder],
    ),
  ];
  for (const folder of folders) {
    for (const [, name] of folder.matchAll(/\{([^}]*)\}/g)) {
      if (!(FOLDER_PLACEHOLDERS as readonly string[]).includes(name ?? '')) {
        throw new ConfigError(
          `Invalid setting attachment_folder: unknown placeholder {${name}} in "${folder}" (known: ` +
            `${FOLDER_PLACEHOLDERS.map((known) => `{${known}}`).join(', ')})`,
        );
      }
    }
    if (folder.split('/').some((segment) => segment === '..' || segment === '.' || segment.startsWith('.'))) {
      throw new ConfigError(
        `Invalid setting attachment_folder: "${folder}" has a segment starting with "." (folders stay inside ` +
          'the base path)',
      );
    }
  }
  for (const spec of [
    settings.attachment_extensions,
    ...Object.values(settings.attachment_resources).flatMap((entry) =>
      entry.extensions === undefined ? [] : [entry.extensions],
    ),
  ]) {
    if (resolveExtensions(spec) !== 'any' && (resolveExtensions(spec) as Set<string>).size === 0) {
      throw new ConfigError(`Invalid setting attachment_extensions: "${spec}" allows no extension`);
    }
  }
  if (
    settings.attachment_aws_bucket_name === null &&
    (settings.attachment_aws_host !== null || settings.attachment_aws_endpoint_url !== null)
  ) {
    throw new ConfigError(
      'attachment_aws_host / attachment_aws_endpoint_url are set without attachment_aws_bucket_name: set the ' +
        'bucket to use S3',
    );
  }
  if ((settings.attachment_aws_access_key === null) !== (settings.attachment_aws_secret_key === null)) {
    throw new ConfigError(
      'attachment_aws_access_key and attachment_aws_secret_key go together: set both, or neither (the AWS ' +
        'default credentials)',
    );
  }
}

/** The settings that apply to one collection: the global ones, then its bucket's, then its own. */
export interface ResolvedAttachmentOptions {
  randomize: boolean;
  keepOldFiles: boolean;
  gzipped: boolean;
  folder: string;
  maxSize: number | null;
  extensions: Set<string> | 'any';
  allowedMimetypes: string[];
}

export class AttachmentOptions {
  readonly #settings: AttachmentSettings;
  /** What applies where no override does; and one resolution per bucket or collection the settings name. */
  readonly #defaults: ResolvedAttachmentOptions;
  readonly #overridden = new Map<string, ResolvedAttachmentOptions>();

  constructor(settings: AttachmentSettings) {
    this.#settings = settings;
    this.#defaults = this.#resolve({});
  }

  for(bucketId: string, collectionId: string | null): ResolvedAttachmentOptions {
    const overrides = this.#settings.attachment_resources;
    const key = collectionId === null ? bucketId : `${bucketId}/${collectionId}`;
    const named = Object.hasOwn(overrides, bucketId) || (collectionId !== null && Object.hasOwn(overrides, key));
    if (!named) return this.#defaults;
    let resolved = this.#overridden.get(key);
    if (!resolved) {
      const own = (name: string): AttachmentOverrides =>
        Object.hasOwn(overrides, name) ? (overrides[name] as AttachmentOverrides) : {};
      resolved = this.#resolve({ ...own(bucketId), ...(collectionId === null ? {} : own(key)) });
      this.#overridden.set(key, resolved);
    }
    return resolved;
  }

  #resolve(merged: AttachmentOverrides): ResolvedAttachmentOptions {
    const settings = this.#settings;
    return {
      randomize: merged.randomize ?? settings.attachment_randomize,
      keepOldFiles: merged.keep_old_files ?? settings.attachment_keep_old_files,
      gzipped: merged.gzipped ?? settings.attachment_gzipped,
      folder: merged.folder ?? settings.attachment_folder,
      maxSize: merged.max_size === undefined ? settings.attachment_max_size : merged.max_size,
      extensions: resolveExtensions(merged.extensions ?? settings.attachment_extensions),
      allowedMimetypes: merged.allowed_mimetypes ?? settings.attachment_allowed_mimetypes,
    };
  }
}
