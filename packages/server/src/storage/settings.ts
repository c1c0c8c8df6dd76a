/**
 * Storage settings: which backend (storage/factory.ts), its connections, and how many objects one
 * read may return.
 */
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../settings/config-error.js';
import type { SERVER_SETTINGS } from '../server-settings.js';
import { Choice, Nullable, type SettingSchemas, type SettingValues } from '../settings/schema.js';

export const STORAGE_SETTINGS = {
  storage_url: Nullable(Type.String({ pattern: '^postgres(ql)?://' }), {
    default: null,
    secret: true,
    invalid: () => 'only postgresql:// URLs are supported (leave it unset for the embedded store)',
    description: 'A `postgresql://` URL selects PostgreSQL; unset, the embedded store (SQLite) lives in `data_dir`.',
  }),
  data_dir: Type.String({
    default: '.quire-data',
    description: 'Directory of the embedded store (relative to the working directory).',
  }),
  storage_pooler: Choice(['detect', 'none', 'transaction'], {
    default: 'detect',
    description:
      'PostgreSQL: whether `storage_url` leads to a transaction pooler (PgBouncer in transaction mode), through ' +
      'which Quire sends no startup options and no named prepared statements. `detect`: one connection at start ' +
      'tells (a stock PgBouncer refuses the startup options Quire sends PostgreSQL, or drops them); `none`: ' +
      'PostgreSQL itself, or a session pooler; `transaction`: a transaction pooler that passes startup options ' +
      'on.',
  }),
  storage_listen_url: Nullable(Type.String({ pattern: '^postgres(ql)?://' }), {
    default: null,
    secret: true,
    invalid: () => 'only postgresql:// URLs are supported',
    description:
      'PostgreSQL: a direct connection (not through a transaction pooler) for the LISTEN that tells this process ' +
      'what other processes changed. Unset: `storage_url`, unless that leads to a transaction pooler: ' +
      'notifications are then polled every `storage_poll_interval_seconds`, and the shared read cache stays off.',
  }),
  storage_poll_interval_seconds: Type.Number({
    default: 0.25,
    minimum: 0.01,
    maximum: 60,
    description:
      'PostgreSQL without LISTEN (see `storage_listen_url`): how often notifications from other processes are ' +
      'read; the change feed’s live entries from other processes lag by up to this. On a hot standby: how often ' +
      'the change feed reads the replicated log of changes.',
  }),
  storage_replica_max_lag_seconds: Type.Number({
    default: 30,
    exclusiveMinimum: 0,
    maximum: 86400,
    description:
      'PostgreSQL hot standby (a `readonly` reader): the heartbeat’s `storage` check fails (503) while the ' +
      'standby has WAL it received more than this many seconds ago and has not replayed yet. The lag is in the ' +
      'metrics (`quire_storage_replica_lag_seconds`).',
  }),
  storage_pool_size: Type.Integer({
    default: 10,
    minimum: 1,
    maximum: 1000,
    description: 'PostgreSQL connection pool size per process.',
  }),
  storage_statement_timeout_ms: Type.Integer({
    default: 10000,
    minimum: 0,
    description:
      'PostgreSQL: longest a request’s statement may run; PostgreSQL then cancels it and the request answers 503 ' +
      '(errno 201) naming this setting. A statement is also cancelled as soon as its client goes away or its ' +
      'batch runs past `batch_timeout_seconds`. Upkeep (migrations, index builds, imports) is not bounded. 0: no ' +
      'limit.',
  }),
  storage_import_sort_memory_mb: Type.Integer({
    default: 1024,
    minimum: 64,
    maximum: 65536,
    description:
      'PostgreSQL: memory for the sorts of `quire import`’s index builds (its own session’s ' +
      '`maintenance_work_mem`), in MB; taken as the sorts need it. Less makes the builds of a large import spill ' +
      'to temporary files (1.11M records with their ACLs: 214 MB for the largest one).',
  }),
  storage_pool_max_share: Type.Number({
    default: 0.25,
    exclusiveMinimum: 0,
    maximum: 1,
    description:
      'PostgreSQL: the share of the pooled connections (`storage_pool_size` less the shared fifth) that one ' +
      'identity — one address for anonymous callers — holds at once (at least 1); its other requests wait their ' +
      'turn, and waiting callers are served in turn, one connection each.',
  }),
  storage_pool_max_share_per_address: Type.Number({
    default: 0.5,
    exclusiveMinimum: 0,
    maximum: 1,
    description:
      'PostgreSQL: the share of the pooled connections that the identities of one client address (its /64 for ' +
      'IPv6) hold together (at least `storage_pool_max_share`), so that many identities from one address do not ' +
      'take the pool; waiting addresses are served in turn, one connection each.',
  }),
  storage_costly_statements_per_identity: Type.Integer({
    default: 1,
    minimum: 1,
    description:
      'PostgreSQL: statements built per request (listings and counts with filters or a sort) that one identity — ' +
      'one address for anonymous callers — runs at once, per process; its others wait their turn. PostgreSQL’s ' +
      'CPU is shared with every other caller’s statements: one user’s worst allowed listings on two connections ' +
      'left another user’s GETs a third of their throughput.',
  }),
  storage_costly_statements_per_address: Type.Integer({
    default: 2,
    minimum: 1,
    description:
      'PostgreSQL: statements built per request that the identities of one client address run at once, per ' +
      'process (at least `storage_costly_statements_per_identity`).',
  }),
  storage_cache_max_entries: Type.Integer({
    default: 10000,
    minimum: 0,
    description:
      'Users’ groups, ACLs of buckets, collections and groups, and buckets and collections (and, on the embedded ' +
      'store, scope timestamps) kept in memory per process, of each kind (0: none). Other processes’ changes ' +
      'reach it through NOTIFY (PostgreSQL) or the database file’s data version (embedded).',
  }),
  storage_group_commit_max: Type.Integer({
    default: 32,
    minimum: 1,
    maximum: 1000,
    description:
      'Embedded store: transactions that wait for the writer are committed together, up to this many per ' +
      'COMMIT (one disk sync for all; each still fails alone). 1: every transaction commits alone.',
  }),
  storage_poll_cache_max_staleness_ms: Nullable(Type.Integer({ minimum: 0, maximum: 60000 }), {
    default: null,
    description:
      'PostgreSQL: scope timestamps are kept in memory per process, so that a poll (`If-None-Match`, `_since`) ' +
      'that finds nothing new makes no database call; such an answer misses no change committed, by any process, ' +
      'more than this many milliseconds before it (while polls come, the log of changed scopes is read every ' +
      'quarter of it: one statement, whatever the number of polls). 0: off. Default (null): 200 on a hot ' +
      'standby, whose reads lag anyway; off on a primary, where a client that writes through one process and ' +
      'reads through another must see its write at once.',
  }),
  storage_auto_migrate: Type.Boolean({
    default: false,
    description:
      'Apply pending PostgreSQL migrations at start (otherwise `quire migrate` must be run first). The embedded ' +
      'store always migrates.',
  }),
  storage_connect_timeout_seconds: Type.Number({
    default: 30,
    minimum: 0,
    description:
      'PostgreSQL: how long `quire start` and `quire migrate` keep trying to reach an unavailable database ' +
      'before giving up (exit code 69), with a line on stderr per attempt (0: one attempt).',
  }),
  storage_reconnect_max_delay_seconds: Type.Number({
    default: 2,
    minimum: 0.05,
    description:
      'PostgreSQL: longest wait between attempts to reopen a dropped connection that the server keeps open ' +
      '(shared statement connections, the cache’s LISTEN connection); waits start at 50 ms and double. Meanwhile ' +
      'requests that need one answer 503.',
  }),
  storage_max_declared_indexes: Type.Integer({
    default: 16,
    minimum: 0,
    maximum: 256,
    description:
      'Data fields indexed at most for the whole store, from the `indexes` collections declare (a Quire ' +
      'extension, see the server README): the fields declared by most collections first. Every write pays for ' +
      'each of these indexes. 0: none (those that exist are dropped).',
  }),
  storage_max_fetch_size: Type.Integer({
    default: 10000,
    minimum: 1,
    description: 'Hard cap on objects read per page.',
  }),
} satisfies SettingSchemas;

export function checkStorageSettings(
  settings: SettingValues<typeof STORAGE_SETTINGS> & Pick<SettingValues<typeof SERVER_SETTINGS>, 'workers'>,
): void {
  if (settings.storage_listen_url && !settings.storage_url) {
    throw new ConfigError(
      'storage_listen_url is set but storage_url is not: it is where PostgreSQL processes LISTEN, and the ' +
        'embedded store has no other process to hear',
    );
  }
  if (settings.workers > 1 && !settings.storage_url) {
    throw new ConfigError(
      `workers = ${settings.workers} needs PostgreSQL (storage_url): ` +
        'the embedded store is one process; set workers to 1',
    );
  }
}

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type StorageSettings = SettingValues<typeof STORAGE_SETTINGS>;
