/** Settings of the resource engine (engine/): page sizes and pagination tokens. */
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../settings/config-error.js';
import { Nullable, type SettingSchemas, type SettingValues } from '../settings/schema.js';
import type { HTTP_SETTINGS } from '../http/settings.js';

/** `/v1/buckets/<id>/collections/<id>/records/<id>` less its ids, plus a pagination query string's room. */
const DEEPEST_URL_OVERHEAD = '/v1/buckets//collections//records/?_since=&_limit=&_token='.length + 1024;

export const RESOURCE_SETTINGS = {
  max_object_id_length: Type.Integer({
    default: 256,
    minimum: 36,
    // A record's primary key (its collection's URI, then its id) must fit a PostgreSQL B-tree entry (2,704 bytes).
    maximum: 800,
    description:
      'Longest id of a bucket, collection, group, record or account (`GET /` shows it in `settings`); a longer one is refused with 400, so that every object stays addressable by URL: three such ids and a page token fit in `max_header_bytes` with room for the headers (checked at start), and a PostgreSQL index key. From 36 (a UUID) to 800.',
  }),
  paginate_by: Nullable(Type.Integer({ minimum: 1 }), {
    default: null,
    description: 'Server page size (unset: `storage_max_fetch_size`).',
  }),
  pagination_token_validity_seconds: Type.Integer({
    default: 600,
    minimum: 1,
    description: 'Lifetime of a plural-DELETE pagination token.',
  }),
} satisfies SettingSchemas;

/**
 * Every object must stay addressable: the deepest URL (a record's, three ids long) with a page
 * token must fit in the request line with room for the headers — half of `max_header_bytes`.
 */
export function checkResourceSettings(
  settings: SettingValues<typeof RESOURCE_SETTINGS> & Pick<SettingValues<typeof HTTP_SETTINGS>, 'max_header_bytes'>,
): void {
  const deepest = 3 * settings.max_object_id_length + DEEPEST_URL_OVERHEAD;
  if (deepest > settings.max_header_bytes / 2) {
    throw new ConfigError(
      `Invalid setting max_object_id_length: ${settings.max_object_id_length} makes a record's URL up to ${deepest} bytes, more than half of max_header_bytes (${settings.max_header_bytes}); raise max_header_bytes or lower max_object_id_length`,
    );
  }
}

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type ResourceSettings = SettingValues<typeof RESOURCE_SETTINGS>;
