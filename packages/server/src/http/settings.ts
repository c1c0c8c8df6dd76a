/**
 * Settings of the HTTP layer: limits of a request (http/content.ts, json-limits.ts,
 * client-errors.ts; the URL's input limits are engine/settings.ts's), response headers (headers.ts,
 * cache-headers.ts), redirects
 * (redirects.ts) and the absolute URLs the server writes (base-url.ts).
 */
import { Type } from '@sinclair/typebox';
import { DateText, List, Nullable, type SettingSchemas, type SettingValues } from '../settings/schema.js';

/** `/buckets/<bid>` or `/buckets/<bid>/collections/<cid>`. */
const PARENT_URI = '^/buckets/[^/]+(/collections/[^/]+)?$';

/** A map of bucket or collection URIs to whole seconds (the per-parent record lifetimes). */
function SecondsByParent(description: string) {
  return Type.Record(Type.String({ pattern: PARENT_URI }), Type.Integer({ minimum: 0 }), {
    default: {},
    additionalProperties: false,
    invalid: () =>
      'expected a JSON object of bucket or collection URIs to whole seconds, e.g. {"/buckets/b/collections/c": 3600}',
    description,
  });
}

export const HTTP_SETTINGS = {
  max_body_bytes: Type.Integer({
    default: 10 * 1024 * 1024,
    minimum: 1024,
    description: 'Largest request body accepted; larger ones get 413.',
  }),
  max_header_bytes: Type.Integer({
    default: 16 * 1024,
    minimum: 1024,
    maximum: 1024 * 1024,
    description:
      'Largest request line (URL with its query string, e.g. a long `in_` list) plus headers accepted; larger ' +
      'ones get 431 (errno 113).',
  }),
  max_json_depth: Type.Integer({
    default: 100,
    minimum: 2,
    maximum: 1000,
    description:
      'Deepest nesting of objects and arrays in a JSON body, the body itself being level 1 (also checked on ' +
      'an object’s data after a PATCH); deeper gets 400. At most 1000.',
  }),
  max_json_keys: Type.Integer({
    default: 10000,
    minimum: 10,
    description:
      'Most object keys and array items, all levels together, in a JSON body and in an object’s data after a ' +
      'PATCH; more gets 400. Bounds the time one write takes (about 10 ms per thousand top-level keys).',
  }),
  max_json_patch_operations: Type.Integer({
    default: 1000,
    minimum: 1,
    description: 'Most operations in one JSON-Patch (`application/json-patch+json`) body; more gets 400.',
  }),
  max_requests_in_progress_per_identity: Type.Integer({
    default: 4,
    minimum: 0,
    description:
      'Requests of one identity (of one address, anonymous) in progress at once, per process; its next ones ' +
      'wait their turn (a batch counts as one). Bounds the share of the event loop one caller’s costly ' +
      'requests take. 0: no limit.',
  }),
  max_requests_queued_per_identity: Type.Integer({
    default: 64,
    minimum: 0,
    description:
      'Requests of one identity waiting for their turn (`max_requests_in_progress_per_identity`); one more is ' +
      'answered 429 (errno 117) with `Retry-After`, as is one that waited `requests_queue_timeout_seconds`.',
  }),
  requests_queue_timeout_seconds: Type.Number({
    default: 10,
    minimum: 0.1,
    description: 'Longest wait of a request for its turn (`max_requests_in_progress_per_identity`); then 429.',
  }),
  retry_after_seconds: Type.Integer({ default: 3, minimum: 0, description: '`Retry-After` sent with 503 and 409.' }),
  backoff: Nullable(Type.Integer({ minimum: 0 }), {
    default: null,
    description: '`Backoff` seconds sent on responses (unset: none).',
  }),
  backoff_percentage: Nullable(Type.Number({ minimum: 0, maximum: 100 }), {
    default: null,
    description: 'Share of responses that carry `Backoff` (unset: all).',
  }),
  eos: Nullable(DateText(), {
    default: null,
    invalid: ({ value }) => `"${String(value)}" is not a date (YYYY-MM-DD)`,
    description: 'End-of-service date (YYYY-MM-DD): `Alert` soft-eol before, 410 hard-eol after.',
  }),
  eos_message: Nullable(Type.String(), { default: null, description: 'Message of the end-of-service `Alert`.' }),
  eos_url: Nullable(Type.String(), {
    default: null,
    description: 'URL of the end-of-service `Alert` (default `project_docs`).',
  }),
  cors_origins: List({ default: ['*'], description: 'Allowed CORS origins (`*` or glob patterns).' }),
  cors_max_age_seconds: Type.Integer({ default: 3600, minimum: 0, description: 'Preflight cache lifetime.' }),
  bucket_cache_expires_seconds: Nullable(Type.Integer({ minimum: 0 }), {
    default: null,
    description:
      'How long anonymous reads of buckets may be cached (unset or 0: `no-cache, no-store`, as for every ' +
      'authenticated read).',
  }),
  group_cache_expires_seconds: Nullable(Type.Integer({ minimum: 0 }), {
    default: null,
    description: 'The same for groups.',
  }),
  collection_cache_expires_seconds: Nullable(Type.Integer({ minimum: 0 }), {
    default: null,
    description: 'The same for collections.',
  }),
  record_cache_expires_seconds: Nullable(Type.Integer({ minimum: 0 }), {
    default: null,
    description:
      'The same for records; a collection’s own `cache_expires` attribute (seconds) wins over every setting.',
  }),
  record_cache_expires_seconds_by_parent: SecondsByParent(
    'Per bucket or collection, for its records: `{"/buckets/b": 30, "/buckets/b/collections/c": 3600}` ' +
      '(Kinto’s `<bid>.<cid>.record_cache_expires_seconds`); the collection’s entry wins over its bucket’s.',
  ),
  record_cache_maximum_expires_seconds: Nullable(Type.Integer({ minimum: 0 }), {
    default: null,
    description:
      'How long an anonymous listing of records asked with a cache-buster (`_expected=<timestamp>`, as the ' +
      'change monitor’s clients send it) may be cached when it holds that timestamp: a newer change comes with ' +
      'a newer URL, so a CDN may keep it long. Unset: the usual lifetime. A listing older than the timestamp ' +
      'asked (a lagging reader) is never cacheable.',
  }),
  record_cache_maximum_expires_seconds_by_parent: SecondsByParent(
    'The same per bucket or collection (kinto-changes’ `monitor.changes.record_cache_maximum_expires_seconds` ' +
      'is `{"/buckets/monitor/collections/changes": 3600}`); the collection’s entry wins over its bucket’s.',
  ),
  trailing_slash_redirect_enabled: Type.Boolean({
    default: true,
    description: 'Redirect `/path/` to `/path` when only the latter exists.',
  }),
  trailing_slash_redirect_ttl_seconds: Type.Integer({
    default: 3600,
    minimum: -1,
    description: 'Cache lifetime of trailing-slash redirects (-1: no cache headers).',
  }),
  version_prefix_redirect_enabled: Type.Boolean({
    default: true,
    description: 'Redirect paths without `/v1` to `/v1/...`.',
  }),
  version_prefix_redirect_ttl_seconds: Type.Integer({
    default: -1,
    minimum: -1,
    description: 'Cache lifetime of version-prefix redirects (-1: no cache headers).',
  }),
  http_scheme: Nullable(Type.String({ pattern: '^https?$' }), {
    default: null,
    invalid: () => 'http or https',
    description: 'Scheme used in absolute URLs (`url`, `Next-Page`) behind a proxy.',
  }),
  http_host: Nullable(Type.String(), {
    default: null,
    description:
      'Host (and port) of the absolute URLs the server writes (`url`, `Next-Page`, redirects). Unset: the ' +
      'Host header when it names the address the request came in on (`127.0.0.1:8888`, or `localhost:8888` on ' +
      'loopback) or is in `http_allowed_hosts`, else that address; with `trust_proxy`, the forwarded host. ' +
      'Set it behind a proxy or a port mapping.',
  }),
  http_allowed_hosts: List({
    default: [],
    description:
      'Host header values (`name` or `name:port`) that absolute URLs may use as sent, when `http_host` is ' +
      'unset: the names clients reach this server by.',
  }),
  trust_proxy: Type.Boolean({
    default: false,
    description:
      'Behind a reverse proxy: take the client address, scheme and host from `X-Forwarded-For`, `-Proto`, ' +
      '`-Host` (or the Host header), for absolute URLs and login limits. Never when clients can reach the ' +
      'server directly.',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type HttpSettings = SettingValues<typeof HTTP_SETTINGS>;
