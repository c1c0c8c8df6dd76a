/**
 * Settings of the resource engine (engine/): page sizes and pagination tokens, and the limits
 * of a request's input (engine/request-input.ts), the same for every way in — a request from the
 * network, a batch's sub-request — and every listing (records, history, accounts, permissions,
 * the change monitor and its stream). Each default is what the worst value allowed costs one
 * request on 10 MB of records (bench/input-costs.ts): well under the 50 ms a request may hold
 * the event loop.
 */
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
      'Longest id of a bucket, collection, group, record or account (`GET /` shows it in `settings`); a longer ' +
      'one is refused with 400, so that every object stays addressable by URL: three such ids and a page token ' +
      'fit in `max_header_bytes` with room for the headers (checked at start), and a PostgreSQL index key. From ' +
      '36 (a UUID) to 800.',
  }),
  paginate_by: Nullable(Type.Integer({ minimum: 1 }), {
    default: null,
    description: 'Server page size (unset: `storage_max_fetch_size`).',
  }),
  max_page_bytes: Type.Integer({
    default: 8 * 1024 * 1024,
    minimum: 64 * 1024,
    description:
      'Most bytes of JSON in one page of a listing: the page ends before the object that would pass it (one ' +
      'object at least), and `Next-Page` continues from there, as after any page. What one listing holds in ' +
      'memory at once. Shown in `GET /` settings.',
  }),
  partial_replicas_enabled: Type.Boolean({
    default: true,
    description:
      'Announce the `partial_replicas` capability and answer `_unmatched=true` on filtered `_since` listings: the ' +
      'records changed since that no longer match come as stubs, so that a partial replica can drop them. Off: ' +
      '`_unmatched` is ignored, as the original server does.',
  }),
  pagination_token_validity_seconds: Type.Integer({
    default: 600,
    minimum: 1,
    description: 'Lifetime of a plural-DELETE pagination token.',
  }),
} satisfies SettingSchemas;

export const INPUT_SETTINGS = {
  max_path_bytes: Type.Integer({
    default: 4096,
    minimum: 256,
    description:
      'Longest request path (without its query string), in bytes, also a batch sub-request’s; longer gets 400 ' +
      '(errno 107).',
  }),
  max_path_segments: Type.Integer({
    default: 16,
    minimum: 8,
    description: 'Most `/`-separated segments of a request path; more gets 400 (errno 107).',
  }),
  max_query_params: Type.Integer({
    default: 128,
    minimum: 8,
    description: 'Most parameters in one query string (filters, `_sort`, `_fields`… and ignored `_x`); more gets 400.',
  }),
  max_query_filters: Type.Integer({
    default: 20,
    minimum: 1,
    description:
      'Most filters (`<op>_<field>=…` parameters) in one query string; more gets 400 (each is a condition of the ' +
      'statement, or a pass of the monitor’s filter engine).',
  }),
  max_query_list_length: Type.Integer({
    default: 1000,
    minimum: 1,
    description:
      'Most values in one `in_` or `exclude_` list; more gets 400 (one bound parameter each, looked up by hash).',
  }),
  max_query_contains_length: Type.Integer({
    default: 16,
    minimum: 1,
    description:
      'Most values in one `contains_` or `contains_any_` list; more gets 400 (on PostgreSQL each value is a ' +
      'containment test of every record: 100 values took 1.7 s on 10 MB of records).',
  }),
  max_query_field_length: Type.Integer({
    default: 256,
    minimum: 16,
    description: 'Longest field path (`a.b.c`) of a filter, `_sort` or `_fields`, in characters; longer gets 400.',
  }),
  max_query_field_depth: Type.Integer({
    default: 16,
    minimum: 2,
    description:
      'Most dotted segments in a field path (`a.b.c` is 3) of a filter, `_sort` or `_fields`; more gets 400 (a ' +
      'segment that is a number is also an array index: each is several JSON paths).',
  }),
  max_query_fields: Type.Integer({
    default: 100,
    minimum: 1,
    description: 'Most fields in one `_fields` projection; more gets 400.',
  }),
  max_query_sort_fields: Type.Integer({
    default: 10,
    minimum: 1,
    description:
      'Most fields in one `_sort`; more gets 400 (each is a condition of the statement: 800 took 3.4 s on the ' +
      'embedded store, which runs statements synchronously).',
  }),
  max_query_like_length: Type.Integer({
    default: 256,
    minimum: 1,
    description:
      'Longest `like_` pattern, in characters; longer gets 400 (on PostgreSQL a pattern costs each string it is ' +
      'tried on up to its length × the pattern’s).',
  }),
} satisfies SettingSchemas;

/** The input limits (engine/request-input.ts). */
export type InputSettings = SettingValues<typeof INPUT_SETTINGS>;

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
      `Invalid setting max_object_id_length: ${settings.max_object_id_length} makes a record's URL up to ` +
        `${deepest} bytes, more than half of max_header_bytes (${settings.max_header_bytes}); ` +
        'raise max_header_bytes or lower max_object_id_length',
    );
  }
}

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type ResourceSettings = SettingValues<typeof RESOURCE_SETTINGS>;
