/**
 * Settings: names operators of this protocol already know (`storage_url`, `batch_max_requests`,
 * ...), read from `QUIRE_<NAME>` environment variables, then an optional JSON config file, then
 * the defaults below. Bad settings fail at boot with a clear message (ConfigError).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { QuotaSettingError, validateQuotaSettings } from './quotas/settings.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type SettingType = 'string' | 'integer' | 'boolean' | 'list' | 'number' | 'json';

interface SettingSpec {
  type: SettingType;
  default: unknown;
  nullable?: boolean;
  min?: number;
  max?: number;
  /** Secrets are never logged nor shown. */
  secret?: boolean;
  /** An integer setting that also accepts `auto`, which stands for what this returns. */
  auto?: () => number;
  description: string;
}

const DOCS = 'https://github.com/quire-sync/quire';

/** Every setting, its type, default and meaning. The README's table is generated from this. */
export const SETTINGS = {
  host: { type: 'string', default: '127.0.0.1', description: 'Interface to listen on (also read from `HOST`).' },
  port: { type: 'integer', default: 8888, min: 0, max: 65535, description: 'Port to listen on (also read from `PORT`).' },
  storage_url: {
    type: 'string',
    default: null,
    nullable: true,
    secret: true,
    description: 'A `postgresql://` URL selects PostgreSQL; unset, the embedded store (SQLite) lives in `data_dir`.',
  },
  data_dir: { type: 'string', default: '.quire-data', description: 'Directory of the embedded store (relative to the working directory).' },
  workers: {
    type: 'integer',
    default: 1,
    min: 1,
    max: 1024,
    auto: availableParallelism,
    description: 'Server processes `quire start` runs on the one port (`auto`: one per core). Above 1, PostgreSQL only; each has its own pool of `storage_pool_size` connections.',
  },
  storage_pool_size: { type: 'integer', default: 10, min: 1, max: 1000, description: 'PostgreSQL connection pool size per process.' },
  storage_cache_max_entries: {
    type: 'integer',
    default: 10000,
    min: 0,
    description: 'PostgreSQL: users’ groups, ACLs of buckets, collections and groups, and buckets and collections kept in memory per process, of each kind (0: none). Other processes’ changes reach it through NOTIFY.',
  },
  storage_auto_migrate: {
    type: 'boolean',
    default: false,
    description: 'Apply pending PostgreSQL migrations at start (otherwise `quire migrate` must be run first). The embedded store always migrates.',
  },
  storage_connect_timeout_seconds: {
    type: 'number',
    default: 30,
    min: 0,
    description: 'PostgreSQL: how long `quire start` and `quire migrate` keep trying to reach an unavailable database before giving up (exit code 69), with a line on stderr per attempt (0: one attempt).',
  },
  storage_reconnect_max_delay_seconds: {
    type: 'number',
    default: 2,
    min: 0.05,
    description: 'PostgreSQL: longest wait between attempts to reopen a dropped connection that the server keeps open (shared statement connections, the cache’s LISTEN connection); waits start at 50 ms and double. Meanwhile requests that need one answer 503.',
  },
  storage_max_fetch_size: { type: 'integer', default: 10000, min: 1, description: 'Hard cap on objects read per page.' },
  paginate_by: { type: 'integer', default: null, nullable: true, min: 1, description: 'Server page size (unset: `storage_max_fetch_size`).' },
  batch_max_requests: { type: 'integer', default: 25, nullable: true, min: 0, description: 'Maximum sub-requests per `POST /batch` (0 or null: unlimited). Public in `GET /`.' },
  batch_timeout_seconds: {
    type: 'number',
    default: 30,
    min: 0.01,
    description: 'Time budget of one `POST /batch`: past it the batch is rolled back and answers 503 (a batch whose client went away is rolled back at once).',
  },
  max_body_bytes: { type: 'integer', default: 10 * 1024 * 1024, min: 1024, description: 'Largest request body accepted; larger ones get 413.' },
  max_header_bytes: {
    type: 'integer',
    default: 16 * 1024,
    min: 1024,
    max: 1024 * 1024,
    description: 'Largest request line (URL, with its query string: long `in_` lists) plus headers accepted; larger ones get 431.',
  },
  max_json_depth: { type: 'integer', default: 100, min: 2, max: 1000, description: 'Deepest nesting of objects and arrays in a JSON body, the body itself being level 1 (and, after a PATCH, in an object’s data); deeper gets 400.' },
  max_json_keys: {
    type: 'integer',
    default: 10000,
    min: 10,
    description: 'Most object keys and array items, all levels together, in a JSON body and in an object’s data after a PATCH; more gets 400. Bounds the time one write takes (about 10 ms per thousand top-level keys).',
  },
  max_json_patch_operations: { type: 'integer', default: 1000, min: 1, description: 'Most operations in one JSON-Patch (`application/json-patch+json`) body; more gets 400.' },
  max_query_sort_fields: { type: 'integer', default: 10, min: 1, description: 'Most fields in one `_sort`; more gets 400 (each is a condition of the statement: 800 took 3.4 s on the embedded store).' },
  max_query_filters: { type: 'integer', default: 100, min: 1, description: 'Most filters (`<op>_<field>=…` parameters) in one query string; more gets 400.' },
  pagination_token_validity_seconds: { type: 'integer', default: 600, min: 1, description: 'Lifetime of a plural-DELETE pagination token.' },
  readonly: { type: 'boolean', default: false, description: 'Refuse every write with 405.' },
  explicit_permissions: { type: 'boolean', default: true, description: 'Add the author of each write to the object’s `write` principals.' },
  multiauth_policies: { type: 'list', default: ['basicauth'], description: 'Authentication policies, in the order they are tried.' },
  userid_hmac_secret: {
    type: 'string',
    default: null,
    nullable: true,
    secret: true,
    description: 'HMAC key of Basic Auth user ids. Required on PostgreSQL; on the embedded store a random one is kept in `data_dir`.',
  },
  bucket_create_principals: { type: 'list', default: ['system.Authenticated'], description: 'Who may create buckets.' },
  bucket_read_principals: { type: 'list', default: [], description: 'Principals granted read on every bucket.' },
  bucket_write_principals: { type: 'list', default: [], description: 'Principals granted write on every bucket.' },
  collection_create_principals: { type: 'list', default: [], description: 'Principals granted collection creation in every bucket.' },
  collection_read_principals: { type: 'list', default: [], description: 'Principals granted read on every collection.' },
  collection_write_principals: { type: 'list', default: [], description: 'Principals granted write on every collection.' },
  group_create_principals: { type: 'list', default: [], description: 'Principals granted group creation in every bucket.' },
  group_read_principals: { type: 'list', default: [], description: 'Principals granted read on every group.' },
  group_write_principals: { type: 'list', default: [], description: 'Principals granted write on every group.' },
  record_create_principals: { type: 'list', default: [], description: 'Principals granted record creation in every collection.' },
  record_read_principals: { type: 'list', default: [], description: 'Principals granted read on every record.' },
  record_write_principals: { type: 'list', default: [], description: 'Principals granted write on every record.' },
  experimental_permissions_endpoint: { type: 'boolean', default: true, description: 'Serve `GET /permissions` (capability `permissions_endpoint`).' },
  permissions_read_principals: { type: 'list', default: ['system.Everyone'], description: 'Who may call `GET /permissions` (each caller sees only its own permissions).' },
  default_bucket_enabled: { type: 'boolean', default: true, description: 'Serve `/buckets/default`, each user’s personal bucket (capability `default_bucket`).' },
  default_bucket_hmac_secret: {
    type: 'string',
    default: null,
    nullable: true,
    secret: true,
    description: 'HMAC key of personal bucket ids. Unset: derived from `userid_hmac_secret` (set it to a Kinto deployment’s value to keep its ids).',
  },
  account_create_principals: { type: 'list', default: [], description: 'Who may create accounts (`system.Everyone`: open sign-up). Every principal but `system.Everyone` must also be in `account_write_principals`.' },
  account_read_principals: { type: 'list', default: [], description: 'Principals granted read on every account (they list all accounts).' },
  account_write_principals: { type: 'list', default: [], description: 'Account administrators: write on every account, create accounts for others.' },
  account_cache_ttl_seconds: { type: 'integer', default: 30, min: 0, description: 'How long a verified account password is remembered by a process (0: check the hash on every request).' },
  account_login_max_failures: {
    type: 'integer',
    default: 10,
    min: 1,
    description: 'Failed logins allowed per account and client address within `account_login_window_seconds` before that address’s logins to that account get 429 (the owner, elsewhere, is not blocked).',
  },
  account_login_max_failures_per_ip: { type: 'integer', default: 50, min: 1, description: 'Failed account logins allowed per client address (IPv6: per /64), whatever the account, within the window before its logins get 429.' },
  account_login_window_seconds: { type: 'integer', default: 900, min: 1, description: 'Window of the login failure limits (also the longest `Retry-After`).' },
  account_login_limiter_redis_url: {
    type: 'string',
    default: null,
    nullable: true,
    secret: true,
    description: 'A `redis://` URL to share the login failure counters between processes (unset: each process counts in memory).',
  },
  account_validation: { type: 'boolean', default: false, description: 'Accounts must be validated by e-mail before they can log in (ids must then be e-mail addresses).' },
  account_validation_email_regexp: {
    type: 'string',
    default: '^[a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\\.[a-zA-Z0-9-.]+$',
    description: 'Pattern account ids must match when `account_validation` is on.',
  },
  account_validation_key_ttl_seconds: { type: 'integer', default: 7 * 24 * 3600, min: 1, description: 'How long an account validation key stays usable.' },
  account_validation_link_template: {
    type: 'string',
    default: null,
    nullable: true,
    description: 'URL of the page that validates an account, with `{id}` and `{activation-key}` placeholders; mail templates can use it as `{validation-link}`.',
  },
  account_validation_email_subject_template: { type: 'string', default: 'activate your account', description: 'Subject of the validation mail (placeholders: account fields, `{activation-key}`, `{validation-link}`, `email-context` keys).' },
  account_validation_email_body_template: { type: 'string', default: '{activation-key}', description: 'Body of the validation mail (same placeholders as its subject).' },
  account_validation_confirmation_subject_template: { type: 'string', default: 'Account active', description: 'Subject of the mail sent once an account is validated.' },
  account_validation_confirmation_body_template: { type: 'string', default: 'The account {id} is now active', description: 'Body of the mail sent once an account is validated.' },
  account_reset_password_ttl_seconds: { type: 'integer', default: 3600, min: 1, description: 'How long a temporary password sent by `reset-password` stays usable.' },
  account_reset_password_subject_template: { type: 'string', default: 'Reset password', description: 'Subject of the temporary password mail (placeholders: account fields, `{reset-password}`, `email-context` keys).' },
  account_reset_password_body_template: { type: 'string', default: '{reset-password}', description: 'Body of the temporary password mail.' },
  mail_transport: { type: 'string', default: 'smtp', description: 'How mail is sent: `smtp` (the `mail_host` server) or `sendmail` (the local sendmail binary).' },
  mail_host: { type: 'string', default: 'localhost', description: 'SMTP server host.' },
  mail_port: { type: 'integer', default: 25, min: 1, max: 65535, description: 'SMTP server port.' },
  mail_username: { type: 'string', default: null, nullable: true, description: 'SMTP user name (unset: no authentication).' },
  mail_password: { type: 'string', default: null, nullable: true, secret: true, description: 'SMTP password.' },
  mail_sender: { type: 'string', default: 'quire@localhost', description: '`From` address of the mails the server sends.' },
  mail_tls: { type: 'boolean', default: false, description: 'Connect to the SMTP server over TLS from the start (usually port 465).' },
  mail_starttls: { type: 'boolean', default: false, description: 'Require STARTTLS on a plain SMTP connection (refuse to send in clear).' },
  mail_timeout_seconds: { type: 'number', default: 10, min: 0.1, description: 'Time limit of each SMTP connection step.' },
  retry_after_seconds: { type: 'integer', default: 3, min: 0, description: '`Retry-After` sent with 503 and 409.' },
  backoff: { type: 'integer', default: null, nullable: true, min: 0, description: '`Backoff` seconds sent on responses (unset: none).' },
  backoff_percentage: { type: 'number', default: null, nullable: true, min: 0, max: 100, description: 'Share of responses that carry `Backoff` (unset: all).' },
  eos: { type: 'string', default: null, nullable: true, description: 'End-of-service date (YYYY-MM-DD): `Alert` soft-eol before, 410 hard-eol after.' },
  eos_message: { type: 'string', default: null, nullable: true, description: 'Message of the end-of-service `Alert`.' },
  eos_url: { type: 'string', default: null, nullable: true, description: 'URL of the end-of-service `Alert` (default `project_docs`).' },
  cors_origins: { type: 'list', default: ['*'], description: 'Allowed CORS origins (`*` or glob patterns).' },
  cors_max_age_seconds: { type: 'integer', default: 3600, min: 0, description: 'Preflight cache lifetime.' },
  root_cache_expires_seconds: { type: 'integer', default: 86400, min: 0, description: 'In `readonly` mode, how long `GET /` may be cached (`Cache-Control: max-age`).' },
  bucket_cache_expires_seconds: { type: 'integer', default: null, nullable: true, min: 0, description: 'How long anonymous reads of buckets may be cached (unset or 0: `no-cache, no-store`).' },
  group_cache_expires_seconds: { type: 'integer', default: null, nullable: true, min: 0, description: 'How long anonymous reads of groups may be cached (unset or 0: `no-cache, no-store`).' },
  collection_cache_expires_seconds: { type: 'integer', default: null, nullable: true, min: 0, description: 'How long anonymous reads of collections may be cached (unset or 0: `no-cache, no-store`).' },
  record_cache_expires_seconds: { type: 'integer', default: null, nullable: true, min: 0, description: 'How long anonymous reads of records may be cached (unset or 0: `no-cache, no-store`); a collection’s `cache_expires` attribute wins.' },
  record_cache_expires_seconds_by_parent: {
    type: 'json',
    default: {},
    description:
      'Per bucket or collection URI, how long anonymous reads of its records may be cached: `{"/buckets/b": 30, "/buckets/b/collections/c": 3600}` (Kinto’s `<bid>.<cid>.record_cache_expires_seconds`); a collection’s `cache_expires` wins.',
  },
  trailing_slash_redirect_enabled: { type: 'boolean', default: true, description: 'Redirect `/path/` to `/path` when only the latter exists.' },
  trailing_slash_redirect_ttl_seconds: { type: 'integer', default: 3600, min: -1, description: 'Cache lifetime of trailing-slash redirects (-1: no cache headers).' },
  version_prefix_redirect_enabled: { type: 'boolean', default: true, description: 'Redirect paths without `/v1` to `/v1/...`.' },
  version_prefix_redirect_ttl_seconds: { type: 'integer', default: -1, min: -1, description: 'Cache lifetime of version-prefix redirects (-1: no cache headers).' },
  http_scheme: { type: 'string', default: null, nullable: true, description: 'Scheme used in absolute URLs (`url`, `Next-Page`) behind a proxy.' },
  http_host: {
    type: 'string',
    default: null,
    nullable: true,
    description: 'Host (and port) of the absolute URLs the server writes (`url`, `Next-Page`, redirects). Unset: the Host header when it names the address the request came in on or is in `http_allowed_hosts`, else that address (`trust_proxy`: the forwarded host).',
  },
  http_allowed_hosts: { type: 'list', default: [], description: 'Host header values (`name` or `name:port`) that absolute URLs may use as sent, when `http_host` is unset: the names clients reach this server by.' },
  trust_proxy: {
    type: 'boolean',
    default: false,
    description: 'Behind a reverse proxy: take the client address, scheme and host from `X-Forwarded-For`, `-Proto`, `-Host` (or the Host header), for absolute URLs and login limits. Never when clients can reach the server directly.',
  },
  project_name: { type: 'string', default: 'quire', description: 'Name shown in `GET /`.' },
  project_docs: { type: 'string', default: DOCS, description: 'Documentation URL shown in `GET /` and alerts.' },
  error_info_link: { type: 'string', default: `${DOCS}/issues`, description: '`info` link of 500 responses.' },
  version_json_path: { type: 'string', default: null, nullable: true, description: 'File served by `/__version__` (unset: built from the package version).' },
  heartbeat_timeout_seconds: { type: 'number', default: 10, min: 0.1, description: 'Time limit of each `__heartbeat__` check.' },
  shutdown_timeout_seconds: { type: 'number', default: 30, min: 0, description: 'On SIGTERM, how long in-flight requests may take to finish.' },
  log_level: { type: 'string', default: 'info', description: 'pino log level (`fatal`…`trace`, `silent`). One line per request at `info`; health checks, 304 polls and batch sub-requests at `debug`.' },
  log_format: { type: 'string', default: 'auto', description: '`json` (one JSON object per line), `pretty` (pino-pretty), or `auto`: pretty when standard output is a terminal.' },
  metrics_enabled: { type: 'boolean', default: false, description: 'Serve Prometheus metrics at `/__metrics__` (request counts and latencies by route, batch sizes, storage time, pool, `_since` polls, login failures, process).' },
  metrics_port: {
    type: 'integer',
    default: null,
    nullable: true,
    min: 0,
    max: 65535,
    description: 'Serve the metrics on this port only (on `host`), not on the API’s: keeps them private. Needed with `workers` above 1 (the primary process answers for all workers).',
  },
  experimental_collection_schema_validation: {
    type: 'boolean',
    default: false,
    description: 'Validate records against their collection’s `schema`, and children against their bucket’s `collection:schema`, `group:schema`, `record:schema` (capability `schema`).',
  },
  schema_validator_cache_size: { type: 'integer', default: 256, min: 1, description: 'Compiled JSON schemas kept in memory per process (least recently used dropped first).' },
  changes_enabled: { type: 'boolean', default: true, description: 'Serve the change monitor `GET /buckets/monitor/collections/changes/records` (capability `changes`): one entry per collection with its records’ timestamp, polled or followed as server-sent events.' },
  changes_resources: { type: 'list', default: [], description: 'Buckets (`/buckets/b`) and collections (`/buckets/b/collections/c`) the monitor lists, to everyone (kinto-changes’ `changes.resources`). Empty: every collection the caller may read.' },
  changes_stream_max_per_process: { type: 'integer', default: 10000, min: 1, description: 'Open change streams per server process; one more is answered 503 with `Retry-After`.' },
  changes_stream_max_per_user: { type: 'integer', default: 20, min: 1, description: 'Open change streams per user (or per address for anonymous callers); one more is answered 429.' },
  changes_stream_heartbeat_seconds: { type: 'number', default: 15, min: 0.1, description: 'How often an open change stream sends a comment line, so that proxies keep it open.' },
  changes_stream_max_buffer_bytes: { type: 'integer', default: 1048576, min: 1, description: 'Bytes a change stream may have waiting to be written; a reader that falls further behind is disconnected (it resumes with `Last-Event-ID`).' },
  changes_stream_coalesce_ms: { type: 'integer', default: 5, min: 0, description: 'How long committed changes are gathered before they are offered to the streams and sent to the other processes (one entry per collection per period); 1 ms more per 20 open streams.' },
  flush_endpoint_enabled: { type: 'boolean', default: false, description: 'Serve `POST /__flush__`, which deletes everything in storage (capability `flush_endpoint`). Never in production.' },
  admin: {
    type: 'boolean',
    default: false,
    description: 'Serve Quire Console, the admin web app, at `/v1/admin/` (capability `admin`); also serves `GET /permissions`, as if `experimental_permissions_endpoint` were on.',
  },
  quotas_enabled: { type: 'boolean', default: false, description: 'Limit the size and number of objects per bucket and collection (capability `quotas`); over a limit, a write gets 507. Limits in `quotas_bucket`, `quotas_buckets`, `quotas_collection`, `quotas_collections` (see “Quotas”).' },
  quotas_bucket: { type: 'json', default: {}, description: 'Limits of every bucket: `{"max_bytes": …, "max_items": …, "max_bytes_per_item": …}` (bytes of all its objects, number of records, bytes of one object); each may be left out.' },
  quotas_buckets: { type: 'json', default: {}, description: 'Limits of given buckets, overriding `quotas_bucket` limit by limit: `{"<bid>": {"max_items": 100}}`.' },
  quotas_collection: { type: 'json', default: {}, description: 'Limits of every collection (same keys as `quotas_bucket`: bytes of the collection and its records, number of records, bytes of one object).' },
  quotas_collections: { type: 'json', default: {}, description: 'Limits of the collections of a bucket or of one collection, overriding `quotas_collection` limit by limit: `{"<bid>": {…}, "<bid>/<cid>": {…}}` (the most specific wins).' },
  event_listeners: {
    type: 'json',
    default: [],
    secret: true,
    description:
      'Event listeners: a JSON array of `{name, use, actions, resources, ...}` (see “Event listeners”); `use: "redis"` (or Kinto’s `kinto_redis.listeners`) pushes each event to a Redis list.',
  },
  history_enabled: { type: 'boolean', default: false, description: 'Keep a change log per bucket at `/buckets/<bid>/history` (capability `history`).' },
  history_exclude_resources: { type: 'list', default: [], description: 'URIs of buckets, collections or objects whose changes history does not record.' },
  history_exclude_user_ids: { type: 'list', default: [], description: 'User ids whose changes history does not record.' },
  history_auto_trim_max_count: {
    type: 'integer',
    default: null,
    nullable: true,
    min: 1,
    description: 'Keep only the newest N history entries per bucket and kind of object (bucket, collection, group, record); unset: keep everything. Shown in the `history` capability.',
  },
  history_auto_trim_user_ids: { type: 'list', default: [], description: 'With `history_auto_trim_max_count`: trim only the entries of these user ids, N per user and kind of object (empty: every entry).' },
  history_paginate_by: {
    type: 'integer',
    default: 1000,
    min: 1,
    description: 'Most entries per page of a history listing (`GET`/`DELETE /buckets/<bid>/history`), whatever `_limit` asks; the rest follows with `Next-Page`.',
  },
  history_drain_batch_size: { type: 'integer', default: 500, min: 1, max: 100000, description: 'Pending history entries moved into the history per transaction after commit.' },
  history_drain_delay_ms: { type: 'integer', default: 200, min: 0, max: 60000, description: 'How long after a commit its history entries wait to be moved together with the next commits’ (readers of the history never wait for it).' },
  history_drain_interval_seconds: { type: 'number', default: 30, min: 0.1, description: 'How often a process looks for pending history entries left by another (stopped) process.' },
  openid_providers: {
    type: 'json',
    default: [],
    secret: true,
    description:
      'OpenID Connect providers: a JSON array of `{name, issuer, client_id, client_secret, userid_field, header_type, audience, verification_ttl_seconds, state_ttl_seconds, state_length}`; list each `name` in `multiauth_policies` (see “OpenID Connect”).',
  },
  openid_cache_max_entries: { type: 'integer', default: 10000, min: 1, description: 'Verified OpenID tokens remembered per provider (least recently used dropped first).' },
  openid_http_timeout_seconds: { type: 'number', default: 10, min: 0.1, description: 'Time limit of each call to an OpenID provider (discovery, userinfo, keys, code exchange).' },
  openid_jwks_cache_seconds: { type: 'integer', default: 600, min: 0, description: 'How long a provider’s signing keys (JWKS) are reused before being fetched again.' },
  openid_max_token_length: { type: 'integer', default: 8192, min: 16, description: 'Longest bearer token checked; longer ones are ignored (anonymous).' },
  openid_callback_origins: { type: 'list', default: ['*'], description: 'Origins the OpenID login may redirect tokens to (`callback`); `*` allows any, as Kinto does.' },
} satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;

export interface Settings {
  host: string;
  port: number;
  storage_url: string | null;
  data_dir: string;
  /** `auto` is resolved to the number of cores. */
  workers: number;
  storage_pool_size: number;
  storage_cache_max_entries: number;
  storage_auto_migrate: boolean;
  storage_connect_timeout_seconds: number;
  storage_reconnect_max_delay_seconds: number;
  storage_max_fetch_size: number;
  paginate_by: number | null;
  batch_max_requests: number | null;
  batch_timeout_seconds: number;
  max_body_bytes: number;
  max_header_bytes: number;
  max_json_depth: number;
  max_json_keys: number;
  max_json_patch_operations: number;
  max_query_sort_fields: number;
  max_query_filters: number;
  pagination_token_validity_seconds: number;
  readonly: boolean;
  explicit_permissions: boolean;
  multiauth_policies: string[];
  userid_hmac_secret: string | null;
  bucket_create_principals: string[];
  bucket_read_principals: string[];
  bucket_write_principals: string[];
  collection_create_principals: string[];
  collection_read_principals: string[];
  collection_write_principals: string[];
  group_create_principals: string[];
  group_read_principals: string[];
  group_write_principals: string[];
  record_create_principals: string[];
  record_read_principals: string[];
  record_write_principals: string[];
  experimental_permissions_endpoint: boolean;
  permissions_read_principals: string[];
  default_bucket_enabled: boolean;
  default_bucket_hmac_secret: string | null;
  account_create_principals: string[];
  account_read_principals: string[];
  account_write_principals: string[];
  account_cache_ttl_seconds: number;
  account_login_max_failures: number;
  account_login_max_failures_per_ip: number;
  account_login_window_seconds: number;
  account_login_limiter_redis_url: string | null;
  account_validation: boolean;
  account_validation_email_regexp: string;
  account_validation_key_ttl_seconds: number;
  account_validation_link_template: string | null;
  account_validation_email_subject_template: string;
  account_validation_email_body_template: string;
  account_validation_confirmation_subject_template: string;
  account_validation_confirmation_body_template: string;
  account_reset_password_ttl_seconds: number;
  account_reset_password_subject_template: string;
  account_reset_password_body_template: string;
  mail_transport: string;
  mail_host: string;
  mail_port: number;
  mail_username: string | null;
  mail_password: string | null;
  mail_sender: string;
  mail_tls: boolean;
  mail_starttls: boolean;
  mail_timeout_seconds: number;
  retry_after_seconds: number;
  backoff: number | null;
  backoff_percentage: number | null;
  eos: string | null;
  eos_message: string | null;
  eos_url: string | null;
  cors_origins: string[];
  cors_max_age_seconds: number;
  root_cache_expires_seconds: number;
  bucket_cache_expires_seconds: number | null;
  group_cache_expires_seconds: number | null;
  collection_cache_expires_seconds: number | null;
  record_cache_expires_seconds: number | null;
  record_cache_expires_seconds_by_parent: Record<string, number>;
  trailing_slash_redirect_enabled: boolean;
  trailing_slash_redirect_ttl_seconds: number;
  version_prefix_redirect_enabled: boolean;
  version_prefix_redirect_ttl_seconds: number;
  http_scheme: string | null;
  http_host: string | null;
  http_allowed_hosts: string[];
  trust_proxy: boolean;
  project_name: string;
  project_docs: string;
  error_info_link: string;
  version_json_path: string | null;
  heartbeat_timeout_seconds: number;
  shutdown_timeout_seconds: number;
  log_level: string;
  log_format: 'auto' | 'json' | 'pretty';
  metrics_enabled: boolean;
  metrics_port: number | null;
  experimental_collection_schema_validation: boolean;
  schema_validator_cache_size: number;
  changes_enabled: boolean;
  changes_resources: string[];
  changes_stream_max_per_process: number;
  changes_stream_max_per_user: number;
  changes_stream_heartbeat_seconds: number;
  changes_stream_max_buffer_bytes: number;
  changes_stream_coalesce_ms: number;
  flush_endpoint_enabled: boolean;
  /** Turns `experimental_permissions_endpoint` on (validateSettings), as Kinto's admin plugin does. */
  admin: boolean;
  quotas_enabled: boolean;
  /** Validated by validateQuotaSettings (quotas/settings.ts). */
  quotas_bucket: unknown;
  quotas_buckets: unknown;
  quotas_collection: unknown;
  quotas_collections: unknown;
  /** Validated by listeners/config.ts when the server is built. */
  event_listeners: unknown[];
  history_enabled: boolean;
  history_exclude_resources: string[];
  history_exclude_user_ids: string[];
  history_auto_trim_max_count: number | null;
  history_auto_trim_user_ids: string[];
  history_paginate_by: number;
  history_drain_batch_size: number;
  history_drain_delay_ms: number;
  history_drain_interval_seconds: number;
  /** Validated by auth/openid/providers.ts when the server is built. */
  openid_providers: unknown[];
  openid_cache_max_entries: number;
  openid_http_timeout_seconds: number;
  openid_jwks_cache_seconds: number;
  openid_max_token_length: number;
  openid_callback_origins: string[];
}

const POLICIES = new Set(['basicauth', 'account']);
const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

function coerce(name: string, spec: SettingSpec, raw: unknown, source: string): unknown {
  const fail = (why: string): never => {
    throw new ConfigError(`Invalid setting ${name} (from ${source}): ${why}`);
  };
  if (raw === null || (typeof raw === 'string' && raw.trim() === '' && spec.type !== 'string')) {
    if (spec.nullable) return null;
    if (spec.type === 'list') return [];
    fail('a value is required');
  }
  switch (spec.type) {
    case 'string':
      if (typeof raw !== 'string') fail(`expected a string, got ${JSON.stringify(raw)}`);
      return raw === '' && spec.nullable ? null : raw;
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      const text = String(raw).trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(text)) return true;
      if (['false', '0', 'no', 'off'].includes(text)) return false;
      return fail(`expected true or false, got ${JSON.stringify(raw)}`);
    }
    case 'integer':
    case 'number': {
      if (spec.auto && typeof raw === 'string' && raw.trim().toLowerCase() === 'auto') return spec.auto();
      const expected = (what: string) => (spec.auto ? 'an integer or auto' : what);
      const value = typeof raw === 'number' ? raw : Number(String(raw).trim());
      if (!Number.isFinite(value)) fail(`expected ${expected('a number')}, got ${JSON.stringify(raw)}`);
      if (spec.type === 'integer' && !Number.isInteger(value)) fail(`expected ${expected('an integer')}, got ${JSON.stringify(raw)}`);
      if (spec.min !== undefined && value < spec.min) fail(`must be at least ${spec.min}`);
      if (spec.max !== undefined && value > spec.max) fail(`must be at most ${spec.max}`);
      return value;
    }
    case 'list': {
      if (Array.isArray(raw)) {
        if (!raw.every((item) => typeof item === 'string')) fail('expected a list of strings');
        return raw;
      }
      if (typeof raw !== 'string') return fail('expected a list of strings');
      // Kinto's ini files separate values with spaces or new lines; commas are accepted too.
      return raw.split(/[\s,]+/).filter(Boolean);
    }
    case 'json': {
      if (typeof raw !== 'string') return raw;
      // The raw text is not quoted back: json settings may hold secrets.
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        return fail('expected JSON');
      }
    }
  }
}

export interface LoadSettingsOptions {
  env?: NodeJS.ProcessEnv;
  /** Path of a JSON config file (else `QUIRE_CONFIG` from the environment, if set). */
  configFile?: string | null;
  /** Explicit values, taking precedence over everything (tests, embedding). */
  overrides?: Partial<Settings>;
}

/** Environment (`QUIRE_<NAME>`) > config file > defaults; overrides win over all. */
export function loadSettings(options: LoadSettingsOptions = {}): Settings {
  const env = options.env ?? process.env;
  const file = options.configFile === undefined ? env.QUIRE_CONFIG ?? null : options.configFile;
  let fromFile: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`Cannot read config file ${file}: ${(error as Error).message}`);
    }
    try {
      fromFile = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new ConfigError(`Config file ${file} is not valid JSON: ${(error as Error).message}`);
    }
    if (typeof fromFile !== 'object' || fromFile === null || Array.isArray(fromFile)) {
      throw new ConfigError(`Config file ${file} must hold a JSON object of settings`);
    }
    const unknown = Object.keys(fromFile).filter((key) => !Object.hasOwn(SETTINGS, key));
    if (unknown.length) {
      throw new ConfigError(`Unknown setting(s) in ${file}: ${unknown.map((key) => `${key}${suggestion(key, (name) => name)}`).join(', ')}`);
    }
  }
  refuseUnknownVariables(env);

  const settings: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(SETTINGS) as Array<[string, SettingSpec]>) {
    const envName = `QUIRE_${name.toUpperCase()}`;
    let raw: unknown = spec.default;
    let source = 'default';
    if (Object.hasOwn(fromFile, name)) {
      raw = fromFile[name];
      source = String(file);
    }
    const plainEnv = name === 'host' ? env.HOST : name === 'port' ? env.PORT : undefined;
    if (plainEnv !== undefined && plainEnv !== '') {
      raw = plainEnv;
      source = name.toUpperCase();
    }
    if (env[envName] !== undefined) {
      raw = env[envName];
      source = envName;
    }
    settings[name] = source === 'default' ? raw : coerce(name, spec, raw, source);
  }
  for (const [name, value] of Object.entries(options.overrides ?? {})) {
    if (!Object.hasOwn(SETTINGS, name)) throw new ConfigError(`Unknown setting ${name}`);
    settings[name] = coerce(name, SETTINGS[name as SettingName] as SettingSpec, value, 'overrides');
  }
  return validateSettings(settings as unknown as Settings);
}

/**
 * `QUIRE_*` variables that are not settings: read by the CLI, the version, the tests, the
 * conformance suite, the benches and the demo. Any other `QUIRE_*` name is a mistake, refused:
 * a typo such as QUIRE_STORAGE_URI would otherwise put production on the embedded store.
 */
const OTHER_VARIABLES = new Set(['QUIRE_CONFIG', 'QUIRE_COMMIT', 'QUIRE_URL', 'QUIRE_DEMO_PORT', 'QUIRE_CHROMIUM_PATH']);
const OTHER_PREFIXES = ['QUIRE_TEST_', 'QUIRE_CONFORMANCE_', 'QUIRE_BENCH_'];

function refuseUnknownVariables(env: NodeJS.ProcessEnv): void {
  const unknown = Object.keys(env).filter(
    (name) =>
      name.startsWith('QUIRE_') &&
      !OTHER_VARIABLES.has(name) &&
      !OTHER_PREFIXES.some((prefix) => name.startsWith(prefix)) &&
      !Object.hasOwn(SETTINGS, name.slice('QUIRE_'.length).toLowerCase()),
  );
  if (unknown.length === 0) return;
  const named = unknown.sort().map((name) => `${name}${suggestion(name.slice('QUIRE_'.length).toLowerCase(), (setting) => `QUIRE_${setting.toUpperCase()}`)}`);
  throw new ConfigError(`Unknown environment variable${unknown.length > 1 ? 's' : ''} ${named.join(', ')}: not a setting (see the README's settings table)`);
}

/** ` (did you mean X?)` for the closest setting name, if one is close enough to be a typo. */
function suggestion(name: string, show: (setting: string) => string): string {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const setting of Object.keys(SETTINGS)) {
    const distance = editDistance(name.toLowerCase(), setting);
    if (distance < bestDistance) [best, bestDistance] = [setting, distance];
  }
  return best !== null && bestDistance <= Math.max(2, Math.floor(name.length / 4)) ? ` (did you mean ${show(best)}?)` : '';
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

function validateSettings(settings: Settings): Settings {
  if (settings.storage_url && !/^postgres(ql)?:\/\//.test(settings.storage_url)) {
    throw new ConfigError('Invalid setting storage_url: only postgresql:// URLs are supported (leave it unset for the embedded store)');
  }
  if (settings.workers > 1 && !settings.storage_url) {
    throw new ConfigError(`workers = ${settings.workers} needs PostgreSQL (storage_url): the embedded store is one process; set workers to 1`);
  }
  if (!Array.isArray(settings.openid_providers)) throw new ConfigError('Invalid setting openid_providers: expected a JSON array');
  // Each OpenID provider is a policy of its own name (as `multiauth.policy.<name>` in Kinto).
  const openidNames = settings.openid_providers.map((provider) => (provider as { name?: unknown } | null)?.name);
  for (const policy of settings.multiauth_policies) {
    if (!POLICIES.has(policy) && !openidNames.includes(policy)) {
      throw new ConfigError(`Invalid setting multiauth_policies: unknown policy "${policy}" (known: ${[...POLICIES].join(', ')})`);
    }
  }
  if (!['auto', 'json', 'pretty'].includes(settings.log_format)) {
    throw new ConfigError(`Invalid setting log_format: "${settings.log_format}" (auto, json or pretty)`);
  }
  if (settings.metrics_enabled && settings.workers > 1 && settings.metrics_port === null) {
    throw new ConfigError(`metrics_enabled with workers = ${settings.workers} needs metrics_port: each worker counts its own requests, and the primary answers for all of them on that port`);
  }
  if (!LOG_LEVELS.has(settings.log_level)) {
    throw new ConfigError(`Invalid setting log_level: "${settings.log_level}" (one of ${[...LOG_LEVELS].join(', ')})`);
  }
  if (settings.eos !== null && Number.isNaN(Date.parse(settings.eos))) {
    throw new ConfigError(`Invalid setting eos: "${settings.eos}" is not a date (YYYY-MM-DD)`);
  }
  const byParent: unknown = settings.record_cache_expires_seconds_by_parent;
  const isUriMap =
    typeof byParent === 'object' && byParent !== null && !Array.isArray(byParent) &&
    Object.entries(byParent).every(([uri, seconds]) => /^\/buckets\/[^/]+(\/collections\/[^/]+)?$/.test(uri) && Number.isInteger(seconds) && (seconds as number) >= 0);
  if (!isUriMap) {
    throw new ConfigError('Invalid setting record_cache_expires_seconds_by_parent: expected a JSON object of bucket or collection URIs to whole seconds, e.g. {"/buckets/b/collections/c": 3600}');
  }
  if (settings.http_scheme !== null && !/^https?$/.test(settings.http_scheme)) {
    throw new ConfigError('Invalid setting http_scheme: http or https');
  }
  try {
    validateQuotaSettings(settings);
  } catch (error) {
    if (error instanceof QuotaSettingError) throw new ConfigError(error.message);
    throw error;
  }
  // The admin console needs GET /permissions (protocol-reference §13.7: the admin plugin enables it).
  if (settings.admin) settings.experimental_permissions_endpoint = true;
  return settings;
}

/** Settings as shown in logs: secrets masked. */
export function redactSettings(settings: Settings): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(settings)) {
    const spec = SETTINGS[name as SettingName] as SettingSpec;
    shown[name] = spec.secret && value ? '***' : value;
  }
  return shown;
}
