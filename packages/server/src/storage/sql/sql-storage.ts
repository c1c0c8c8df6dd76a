/**
 * The SQL storage backend: one implementation of `Storage` over PostgreSQL, and over PGlite
 * (embedded PostgreSQL) for the data directories of earlier versions, through the `SqlDriver`
 * primitive. This module opens sessions and looks after the store; what a session does is in
 * one module per facet (objects.ts, permissions.ts, outbox.ts, nonces.ts) over the state they
 * share (session-state.ts).
 */
import type { BulkImportOptions, BulkImportResult, BulkLoader } from '../bulk-import.js';
import { IndexKeeper } from '../declared-indexes.js';
import { backoffDelay, sleep } from '../../retry.js';
import { UnicityError } from '../errors.js';
import type { PoolStats, ScopeLog, SessionOptions, Storage, StorageSession, StoreChannels } from '../types.js';
import { withInitialisedScopes } from '../uninitialised-scopes.js';
import { sqlBulkImport } from './bulk-import.js';
import { sqlIndexStore } from './declared-indexes.js';
import { createPgDriver, detectPooler, type PgDriverOptions } from './drivers/pg.js';
import { createPgliteDriver, type PgliteDriverOptions } from './drivers/pglite.js';
import { DYNAMIC, sqlState, type SqlConnection, type SqlDriver } from './drivers/types.js';
import { EmbeddedMaintenance } from './maintenance.js';
import { checkMigrations, migrate } from './migrate.js';
import { ReplicaLag } from './replica-lag.js';
import { PRUNE_SCOPE_CHANGES, SCOPE_CHANGES_RETENTION_MS, ScopeCache } from './scope-cache.js';
import { SqlSession } from './session.js';
import { SqlSessionState, type SessionContext, type SessionMode } from './session-state.js';
import {
  decodeInvalidations,
  encodeInvalidations,
  type Invalidation,
  NOTIFY_CHANNEL,
  SharedCache,
} from './shared-cache.js';

const RETRYABLE_STATES = new Set(['40001', '40P01']); // serialization failure, deadlock
const MAX_TRANSACTION_ATTEMPTS = 4;
/** Up to 20, 40, 60 ms, jittered so that deadlocked peers do not collide again. */
const RETRY_BACKOFF = { firstMs: 20, maxMs: 60, linear: true, jitter: true };
/** How often a reader on a standby looks at which declared indexes its primary has built. */
const READER_INDEX_PASS_MS = 10_000;

export interface SqlStorageOptions {
  /** The embedded store's stand-in for autovacuum (maintenance.ts); PostgreSQL has its own. */
  maintenance?: EmbeddedMaintenance;
  /** Entries of each kind in the shared read cache (shared-cache.ts). */
  cacheMaxEntries?: number;
  /** The database is a hot standby (read only): reads store nothing, e.g. a scope's first timestamp. */
  replica?: boolean;
  /** The bound on a poll answered from memory (scope-cache.ts; 0: none is; default 200 on a replica, else 0). */
  pollCacheMaxStalenessMs?: number;
  /** On a replica: how often the change feed reads the scope log (scope-cache.ts `watch`). */
  watchIntervalMs?: number;
  /** On a replica: the lag past which `ping` fails (replica-lag.ts; default 30 s). */
  replicaMaxLagMs?: number;
  /** Fields with a declared index at most (declared-indexes.ts; 0: none). */
  maxDeclaredIndexes?: number;
  /**
   * Keep the declared indexes (build and drop them as collections declare them): what a serving
   * process does. Commands that open the store for a while (migrate, export, import) do not.
   */
  keepIndexes?: boolean;
  /** Build them with CREATE INDEX CONCURRENTLY (default), which writers do not wait for (sql/declared-indexes.ts). */
  concurrentIndexBuilds?: boolean;
}

export class SqlStorage implements Storage {
  readonly backend: string;
  migrationsApplied: readonly string[] = [];
  readonly #driver: SqlDriver;
  readonly #maintenance: EmbeddedMaintenance | undefined;
  readonly #cache: SharedCache;
  readonly #scopes: ScopeCache;
  #pruning: NodeJS.Timeout | undefined;
  readonly #context: SessionContext;
  readonly #indexes: IndexKeeper;
  readonly channels?: StoreChannels;
  readonly scopeLog?: ScopeLog;
  /** On a hot standby, the lag as last sampled (replica-lag.ts). */
  readonly replicaLagSeconds?: () => number;
  readonly #lag: { sampler: ReplicaLag; maxMs: number } | undefined;
  constructor(
    driver: SqlDriver,
    {
      maintenance,
      cacheMaxEntries = 10_000,
      replica = false,
      // Off on a primary: read-your-writes across processes (a client writes through one, reads
      // through another); on a standby reads lag by replication anyway.
      pollCacheMaxStalenessMs = replica ? 200 : 0,
      maxDeclaredIndexes = 16,
      concurrentIndexBuilds = true,
      watchIntervalMs = 250,
      replicaMaxLagMs = 30_000,
    }: SqlStorageOptions = {},
  ) {
    this.#driver = driver;
    this.backend = driver.name;
    this.#maintenance = maintenance;
    this.#indexes = new IndexKeeper(sqlIndexStore(driver, { concurrent: concurrentIndexBuilds }), {
      max: maxDeclaredIndexes,
      // A reader uses the indexes its primary's writer builds; it learns of them sooner than a
      // writer's keeper is asked, since nothing tells it when a build ends.
      ...(replica ? { observeOnly: true, intervalMs: READER_INDEX_PASS_MS } : {}),
      warn: (message, error) => console.warn(`quire: ${message}:`, error),
    });
    // Several processes may share the database: the cache waits for the channel that tells
    // it what they change. Alone in the process (PGlite), it has nothing to wait for.
    const shared = driver.listen !== undefined && driver.notify !== undefined;
    // On a standby NOTIFY never comes: the shared cache follows the log of scope changes
    // instead, answering only while it is read within the poll cache's bound (scope-cache.ts).
    this.#cache = new SharedCache({
      maxEntries: cacheMaxEntries,
      enabled: !shared || replica,
      ...(replica ? { gate: () => this.#scopes.fresh() } : {}),
    });
    this.#scopes = this.#scopeCache(shared ? cacheMaxEntries : 0, pollCacheMaxStalenessMs, replica, watchIntervalMs);
    this.#context = {
      cache: this.#cache,
      scopes: this.#scopes,
      replica,
      indexed: () => this.#indexes.indexed,
      ...(shared ? { notify: (payload: string) => driver.notify!(NOTIFY_CHANNEL, payload) } : {}),
    };
    if (replica) {
      // The change feed follows the replicated log; the lag is sampled for the heartbeat and metrics.
      this.scopeLog = { watch: (listener) => this.#scopes.watch(listener) };
      const sampler = new ReplicaLag((text, params) => driver.query(text, params), {
        intervalMs: Math.min(1_000, Math.max(50, replicaMaxLagMs / 4)),
      });
      sampler.start();
      this.#lag = { sampler, maxMs: replicaMaxLagMs };
      this.replicaLagSeconds = () => sampler.seconds;
    } else this.#listenForInvalidations();
    if (shared && !replica) {
      this.channels = {
        listen: (channel, listener) => driver.listen!(channel, listener),
        notify: async (channel, payload) => {
          const statement = driver.notify!(channel, payload);
          await driver.query(statement.text, statement.params);
        },
      };
    }
  }

  /** What other processes change of the shared cache, told by NOTIFY (not on a standby). */
  #listenForInvalidations(): void {
    this.#driver.listen?.(NOTIFY_CHANNEL, {
      message: (payload) => {
        const invalidations = decodeInvalidations(payload);
        this.#cache.invalidate(invalidations);
        // Another process wrote a collection: its declared indexes may have changed.
        if (touchesCollections(invalidations)) void this.#indexes.update();
      },
      // Polled notifications arrive up to an interval late: entries would be stale that long.
      connected: (delivery) => this.#cache.setEnabled(delivery === 'pushed'),
      disconnected: () => this.#cache.setEnabled(false),
    });
  }

  /**
   * The scope timestamps of polls (scope-cache.ts), told by the log of migration 012, which
   * every process prunes (a statement refused on a standby: its primary's processes do it).
   */
  #scopeCache(maxEntries: number, maxStalenessMs: number, replica: boolean, watchIntervalMs: number): ScopeCache {
    const driver = this.#driver;
    const prune = () => void driver.query(PRUNE_SCOPE_CHANGES, [SCOPE_CHANGES_RETENTION_MS]).catch(() => {});
    this.#pruning = setInterval(prune, SCOPE_CHANGES_RETENTION_MS / 10 + Math.random() * 10_000);
    this.#pruning.unref();
    return new ScopeCache({
      maxEntries,
      maxStalenessMs,
      run: (text, params) => driver.query(text, params),
      watchIntervalMs,
      ...(replica ? { containersChanged: () => this.#containersChanged() } : {}),
    });
  }

  /** On a standby, a bucket, collection or group moved: the cache forgets, the indexes are looked at again. */
  #containersChanged(): void {
    this.#cache.invalidate([{ kind: 'all' }]);
    void this.#indexes.update();
  }

  /**
   * READ COMMITTED is enough: the scope locks serialise writers, and each statement after a
   * lock sees what the previous holder committed. Deadlocks and serialization failures are
   * retried (`fn` runs again). Use the given session only: on PGlite a call to the storage
   * itself inside `fn` waits for the transaction to end.
   */
  async transaction<T>(fn: (session: StorageSession) => Promise<T>, options?: SessionOptions): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let state: SqlSessionState | undefined;
      try {
        const result = await this.#driver.transaction(
          (connection) => {
            state = this.#state(connection, 'write');
            return fn(new SqlSession(state));
          },
          { isolation: 'read committed', ...(options ? { session: options } : {}) },
        );
        this.#maintenance?.written(state?.writes ?? 0);
        if (state && touchesCollections(state.invalidations)) void this.#indexes.update();
        return result;
      } catch (error) {
        // A queued write that met a taken key failed the COMMIT's round trip.
        if (sqlState(error) === '23505' && !(error instanceof UnicityError))
          throw new UnicityError('integrity constraint violated', undefined, { cause: error });
        if (attempt >= MAX_TRANSACTION_ATTEMPTS || !RETRYABLE_STATES.has(sqlState(error) ?? '')) throw error;
        await sleep(backoffDelay(RETRY_BACKOFF, attempt - 1));
      } finally {
        // Committed or not (a failed COMMIT may still have committed): forget what it touched.
        if (state) this.#cache.invalidate(state.invalidations);
        this.#scopes.forgetAll();
      }
    }
  }

  /**
   * One REPEATABLE READ READ ONLY transaction: the timestamp and the objects read belong to
   * the same snapshot. A scope without a timestamp gets one stored outside the snapshot,
   * then `fn` runs again on a new snapshot that sees it (`fn` must only read).
   */
  async snapshot<T>(fn: (session: StorageSession) => Promise<T>, options?: SessionOptions): Promise<T> {
    return withInitialisedScopes(
      () =>
        this.#driver.transaction((connection) => fn(new SqlSession(this.#state(connection, 'snapshot'))), {
          isolation: 'repeatable read',
          readOnly: true,
          ...(options ? { session: options } : {}),
        }),
      (scope) => new SqlSession(this.#state(this.#driver, 'read')).objects.timestamp(scope),
    );
  }

  /** Autocommit reads, with the session's own ACL memo: no transaction, no round trip for it. */
  async read<T>(fn: (session: StorageSession) => Promise<T>, options?: SessionOptions): Promise<T> {
    return fn(new SqlSession(this.#state(options ? withSession(this.#driver, options) : this.#driver, 'read')));
  }

  #state(db: SqlConnection, mode: SessionMode): SqlSessionState {
    return new SqlSessionState(db, mode, this.#context);
  }

  stats(): PoolStats | null {
    return this.#driver.stats?.() ?? null;
  }

  /** The database answers (on a hot standby: and is at most `replicaMaxLagMs` behind its primary). */
  async ping(): Promise<boolean> {
    try {
      if (this.#lag) return (await this.#lag.sampler.sample()) * 1000 <= this.#lag.maxMs;
      await this.#driver.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Empties every table of Quire's schema but the migration registry, so tables added by later
   * migrations are flushed too. Names come from the catalog and are quoted, never user input.
   */
  async flush(): Promise<void> {
    const tables = await this.#driver.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables
       WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'`,
    );
    if (tables.length === 0) return;
    const list = tables.map(({ name }) => `"${name.replace(/"/g, '""')}"`).join(', ');
    const everything = encodeInvalidations([{ kind: 'all' }]);
    await this.#driver.transaction(async (tx) => {
      await tx.query(`TRUNCATE ${list}`, [], DYNAMIC);
      const notify = this.#driver.notify?.(NOTIFY_CHANNEL, everything);
      if (notify) tx.beforeCommit(notify.text, notify.params);
    });
    this.#cache.invalidate([{ kind: 'all' }]);
    this.#scopes.forgetAll();
  }

  /** `quire import`'s bulk path (bulk-import.ts): the whole import in one transaction of its own. */
  async bulkImport(options: BulkImportOptions, fill: (loader: BulkLoader) => Promise<void>): Promise<BulkImportResult> {
    const notify = this.#context.notify;
    const everything = () => notify!(encodeInvalidations([{ kind: 'all' }]));
    try {
      return await sqlBulkImport(this.#driver, notify && everything, options, fill);
    } finally {
      this.#cache.invalidate([{ kind: 'all' }]);
      this.#scopes.forgetAll();
    }
  }

  /** Starts keeping the declared indexes (a first pass now, then after collection writes and every minute). */
  startIndexing(): void {
    this.#indexes.start();
  }

  /** A pass over the declared indexes, now; resolves once it is done (tests, benchmarks). */
  updateIndexes(): Promise<ReadonlySet<string>> {
    return this.#indexes.update().then(() => this.#indexes.indexed);
  }

  async close(): Promise<void> {
    this.#lag?.sampler.close();
    this.#scopes.close();
    clearInterval(this.#pruning);
    await this.#indexes.close();
    await this.#maintenance?.idle();
    await this.#driver.close();
  }
}

/** The driver's statements for one request: those that take a pooled connection take it in the request's budget. */
function withSession(driver: SqlDriver, session: SessionOptions): SqlConnection {
  return {
    query: (text, params, options) => driver.query(text, params, options ? { ...options, session } : { session }),
    exec: (script) => driver.exec(script),
  };
}

/** Whether committed changes may have changed a collection (its `indexes` among them). */
function touchesCollections(invalidations: readonly Invalidation[]): boolean {
  return invalidations.some(
    (invalidation) =>
      invalidation.kind === 'tree' ||
      invalidation.kind === 'all' ||
      (invalidation.kind === 'object' && invalidation.key.includes('\u0000collection\u0000')),
  );
}

export interface PostgresStorageOptions
  extends Omit<PgDriverOptions, 'pooled'>,
    Pick<
      SqlStorageOptions,
      'cacheMaxEntries' | 'pollCacheMaxStalenessMs' | 'maxDeclaredIndexes' | 'keepIndexes' | 'concurrentIndexBuilds'
    > {
  /** Apply pending migrations at start (else only check, and fail when some are pending). */
  autoMigrate?: boolean;
  /** On a hot standby: the lag past which the heartbeat's storage check fails. */
  replicaMaxLagMs?: number;
  /**
   * Whether `url` leads to a transaction pooler (see PgDriverOptions.pooled): `detect` (the
   * default) asks with one connection first (`detectPooler`).
   */
  pooler?: 'detect' | 'none' | 'transaction';
}

/** PostgreSQL storage. Without `autoMigrate`, fails with MigrationRequiredError when the schema is behind. */
export async function createPostgresStorage({
  autoMigrate = false,
  cacheMaxEntries,
  pollCacheMaxStalenessMs,
  maxDeclaredIndexes,
  keepIndexes = true,
  concurrentIndexBuilds,
  pooler = 'detect',
  replicaMaxLagMs,
  ...options
}: PostgresStorageOptions): Promise<SqlStorage> {
  const pooled = pooler === 'transaction' || (pooler === 'detect' && (await detectPooler(options.url)));
  const driver = createPgDriver({ ...options, pooled }); // validates the schema name used below
  let applied: string[] = [];
  let replica = false;
  try {
    // A hot standby (a reader's store): nothing to migrate, no index to build, no write on reads.
    const [recovery] = await driver.query<{ replica: boolean }>('SELECT pg_is_in_recovery() AS replica');
    replica = recovery?.replica === true;
    if (autoMigrate && !replica) {
      if (options.schema !== undefined) {
        const schema = options.schema;
        await driver.transaction(async (tx) => {
          // Concurrent CREATE SCHEMA IF NOT EXISTS can still collide: serialise them.
          await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`quire.schema:${schema}`]);
          await tx.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
        });
      }
      applied = await migrate(driver);
    } else {
      await checkMigrations(driver);
    }
  } catch (error) {
    await driver.close();
    throw error;
  }
  const storage = new SqlStorage(driver, {
    cacheMaxEntries,
    replica,
    ...(pollCacheMaxStalenessMs === undefined ? {} : { pollCacheMaxStalenessMs }),
    ...(maxDeclaredIndexes === undefined ? {} : { maxDeclaredIndexes }),
    ...(concurrentIndexBuilds === undefined ? {} : { concurrentIndexBuilds }),
    ...(options.pollIntervalMs === undefined ? {} : { watchIntervalMs: options.pollIntervalMs }),
    ...(replicaMaxLagMs === undefined ? {} : { replicaMaxLagMs }),
  });
  storage.migrationsApplied = applied;
  if (keepIndexes) storage.startIndexing(); // on a standby: only learns which indexes exist
  return storage;
}

/** Embedded storage (PGlite), in memory or persisted in `dataDir`; always migrated at start. */
export async function createPgliteStorage({
  maxDeclaredIndexes,
  keepIndexes = true,
  ...options
}: PgliteDriverOptions & Pick<SqlStorageOptions, 'maxDeclaredIndexes' | 'keepIndexes'> = {}): Promise<SqlStorage> {
  const driver = createPgliteDriver(options);
  const maintenance = new EmbeddedMaintenance(driver);
  let applied: string[];
  try {
    applied = await migrate(driver);
    await maintenance.start();
  } catch (error) {
    await driver.close();
    throw error;
  }
  const storage = new SqlStorage(driver, {
    maintenance,
    ...(maxDeclaredIndexes === undefined ? {} : { maxDeclaredIndexes }),
  });
  storage.migrationsApplied = applied;
  if (keepIndexes) storage.startIndexing();
  return storage;
}
