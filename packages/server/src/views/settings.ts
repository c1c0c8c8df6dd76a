/**
 * Settings of the views beside the resources: `/batch`, `GET /` in readonly mode, `__version__`
 * and `__heartbeat__`, `/buckets/default`, `__flush__` and the admin console.
 */
import { Type } from '@sinclair/typebox';
import type { PERMISSION_SETTINGS } from '../permission/settings.js';
import { Nullable, type SettingSchemas, type SettingValues } from '../settings/schema.js';

export const VIEW_SETTINGS = {
  batch_max_requests: Nullable(Type.Integer({ minimum: 0 }), {
    default: 25,
    description: 'Maximum sub-requests per `POST /batch` (0 or null: unlimited). Public in `GET /`.',
  }),
  batch_timeout_seconds: Type.Number({
    default: 30,
    minimum: 0.01,
    description:
      'Time budget of one `POST /batch`: past it the batch is rolled back and answers 503 (a batch whose ' +
      'client went away is rolled back at once).',
  }),
  batch_max_response_bytes: Type.Integer({
    default: 32 * 1024 * 1024,
    minimum: 1024 * 1024,
    description:
      'Most bytes of the answer of a `POST /batch` that writes, held until it commits: past it the batch is ' +
      'rolled back and answers 413. A batch that only reads streams its answer instead, an entry at a time.',
  }),
  root_cache_expires_seconds: Type.Integer({
    default: 86400,
    minimum: 0,
    description: 'In `readonly` mode, how long `GET /` may be cached (`Cache-Control: max-age`).',
  }),
  version_json_path: Nullable(Type.String(), {
    default: null,
    description: 'File served by `/__version__` (unset: built from the package version).',
  }),
  heartbeat_timeout_seconds: Type.Number({
    default: 10,
    minimum: 0.1,
    description: 'Time limit of each `__heartbeat__` check.',
  }),
  default_bucket_enabled: Type.Boolean({
    default: true,
    description: 'Serve `/buckets/default`, each user’s personal bucket (capability `default_bucket`).',
  }),
  default_bucket_hmac_secret: Nullable(Type.String(), {
    default: null,
    secret: true,
    description:
      'HMAC key of personal bucket ids. Unset: derived from `userid_hmac_secret` (set it to a Kinto ' +
      'deployment’s value to keep its ids).',
  }),
  flush_endpoint_enabled: Type.Boolean({
    default: false,
    description:
      'Serve `POST /__flush__`, which deletes everything in storage (capability `flush_endpoint`). Never in ' +
      'production.',
  }),
  admin: Type.Boolean({
    default: false,
    description:
      'Serve [Quire Console](apps/console/README.md), the admin web app, at `/v1/admin/` (capability ' +
      '`admin`); also turns on `GET /permissions`, which it uses.',
  }),
} satisfies SettingSchemas;

/** The admin console needs GET /permissions (protocol-reference §13.7: the admin plugin enables it). */
export function enablePermissionsEndpointForAdmin(
  settings: SettingValues<typeof VIEW_SETTINGS> &
    Pick<SettingValues<typeof PERMISSION_SETTINGS>, 'experimental_permissions_endpoint'>,
): void {
  if (settings.admin) settings.experimental_permissions_endpoint = true;
}

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type ViewSettings = SettingValues<typeof VIEW_SETTINGS>;
