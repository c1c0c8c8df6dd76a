/**
 * The SQLite storage backend: the embedded store (in process, persistent, no setup) through
 * better-sqlite3, an order of magnitude faster than PGlite per statement (a lookup by id in
 * ~15 µs instead of 150-600 µs). Same contract and semantics as the SQL backend
 * (sql/), which it mirrors module for module.
 *
 * Connections. better-sqlite3 is synchronous: a statement runs whole before any other
 * JavaScript. A file store has one WRITER connection, in WAL mode: `transaction(fn)` waits its
 * turn for it (an async FIFO mutex, since `fn` awaits between statements and two transactions
 * must never mix on one connection) and runs BEGIN IMMEDIATE … COMMIT, holding SQLite's write
 * lock from its first statement, against other processes too. Reads outside a transaction run
 * on a read-only connection of their own (WAL lets them read while the writer writes; as each
 * runs whole, one connection serves them all), and a snapshot holds a read-only connection of a
 * small pool between BEGIN and COMMIT for the duration of its `fn`. So a long transaction (a big
 * batch) never makes a read wait, but the first read of a scope that has no timestamp yet
 * stores one, a write, which does. An in-memory store (no path: tests) has one connection, and
 * everything takes turns on it.
 *
 * This module opens sessions and looks after the store; what a session does is in one module
 * per facet (objects.ts, permissions.ts, outbox.ts, nonces.ts) over the state they share
 * (session-state.ts).
 */
import type { BulkImportOptions, BulkImportResult, BulkLoader } from '../bulk-import.js';
import { IndexKeeper } from '../declared-indexes.js';
import { BackendError, MigrationRequiredError, StorageError } from '../errors.js';
import type { Scope, Storage, StorageSession } from '../types.js';
import { withInitialisedScopes } from '../uninitialised-scopes.js';
import { CommitGroups } from './commit-groups.js';
import { Connection, Pool } from './connection.js';
import { sqliteBulkImport } from './bulk-import.js';
import { sqliteIndexStore } from './declared-indexes.js';
import { registerFilterFunctions } from './jsonb.js';
import { MIGRATIONS } from './migrations.js';
import { SqliteObjects } from './objects.js';
import { SqliteReadCache } from './read-cache.js';
import { SqliteSession } from './session.js';
import { SqliteSessionState } from './session-state.js';

export interface SqliteStorageOptions {
  /** The database file (created if missing); a private in-memory database when omitted. */
  path?: string;
  /**
   * PRAGMA synchronous. FULL (default) syncs the WAL at every commit, so that an acknowledged
   * write survives a power loss; NORMAL syncs at checkpoints only, and a power loss (not a crash
   * of the process) may undo the last commits, never corrupting the database. Measured here
   * (bench/storage.ts): a one-object write transaction takes ~0.7-1.0 ms with FULL, ~0.17-0.2 ms
   * with NORMAL: the fsync of each commit.
   */
  synchronous?: 'FULL' | 'NORMAL';
  /** How long a transaction, a snapshot or (in memory) a read waits for its connection, then fails with BackendError
   * (10 000). */
  lockTimeoutMs?: number;
  /**
   * How long a statement waits for another process's lock on the file (PRAGMA busy_timeout).
   * better-sqlite3 waits synchronously: only another process sharing the file can make it wait (5 000).
   */
  busyTimeoutMs?: number;
  /** Read-only connections for concurrent snapshots, opened as needed (file stores; 4). */
  snapshotConnections?: number;
  /** Fields with a declared index at most (../declared-indexes.ts; default 16, 0: none). */
  maxDeclaredIndexes?: number;
  /** Build and drop the declared indexes as collections declare them (default: yes; a serving process). */
  keepIndexes?: boolean;
  /** Entries of each kind the plain reads keep between sessions (read-cache.ts; default 10 000, 0: none). */
  cacheMaxEntries?: number;
  /** Transactions committed together at most, when they wait for the writer (commit-groups.ts; default 32). */
  groupCommitMax?: number;
}

/** Pages of cache per connection (negative: KiB), grown as used. SQLite's default is 2 MiB. */
const CACHE_SIZE = -32_768;

const SYNCHRONOUS = { FULL: 'FULL', NORMAL: 'NORMAL' } as const;

export class SqliteStorage implements Storage {
  readonly backend = 'sqlite';
  migrationsApplied: readonly string[] = [];
  /** The writer connection, one holder at a time. */
  readonly #writer: Pool;
  /** Transactions on the writer, committed together when they queue (commit-groups.ts). */
  readonly #commits: CommitGroups;
  /** Connections for snapshots: a read-only pool, or (in memory) the writer. */
  readonly #snapshots: Pool;
  /** Autocommit reads: on a read-only connection of their own, or (in memory) on the writer. */
  readonly #readerConnection: Connection;
  /** In memory, reads take turns with transactions on the one connection. */
  readonly #readerLock: Pool | null;
  readonly #lockTimeoutMs: number;
  readonly #indexes: IndexKeeper;
  /** What plain reads keep between sessions (read-cache.ts). */
  readonly #cache: SqliteReadCache;
  /** The writer connection itself: its data version moves when another process commits. */
  readonly #writerConnection: Connection;
  #dataVersion: number;
  #closing: Promise<void> | undefined;

  constructor(
    writer: Connection,
    options: {
      lockTimeoutMs: number;
      busyTimeoutMs: number;
      snapshotConnections: number;
      path: string | undefined;
      maxDeclaredIndexes: number;
      cacheMaxEntries: number;
      groupCommitMax: number;
    },
  ) {
    this.#lockTimeoutMs = options.lockTimeoutMs;
    this.#writerConnection = writer;
    this.#cache = new SqliteReadCache(options.cacheMaxEntries);
    this.#dataVersion = dataVersion(writer);
    const busy =
      'the store was busy: no connection became free in time (a transaction waiting for itself? use the session ' +
      'given to fn)';
    this.#writer = new Pool({ connections: [writer], busyMessage: busy });
    const path = options.path;
    if (path === undefined) {
      this.#snapshots = this.#writer;
      this.#readerConnection = writer;
      this.#readerLock = this.#writer;
    } else {
      const openReader = () =>
        configure(new Connection(path, { readonly: true, busyTimeoutMs: options.busyTimeoutMs }));
      this.#snapshots = new Pool({ create: openReader, size: options.snapshotConnections, busyMessage: busy });
      this.#readerConnection = openReader();
      this.#readerLock = null;
    }
    this.#commits = new CommitGroups(this.#writer, {
      lockTimeoutMs: this.#lockTimeoutMs,
      // In memory, reads and snapshots share the writer: they must never meet an open group.
      maxTurns: path === undefined ? 1 : options.groupCommitMax,
      onCommit: () => this.#cache.clear(),
    });
    const store = sqliteIndexStore(
      () => this.#readerConnection,
      (fn) => this.#write(async (connection) => fn(connection)),
    );
    this.#indexes = new IndexKeeper(store, {
      max: options.maxDeclaredIndexes,
      warn: (message, error) => console.warn(`quire: ${message}:`, error),
    });
  }

  /** Starts keeping the declared indexes (a first pass now, then after collection writes and every minute). */
  startIndexing(): void {
    this.#indexes.start();
  }

  /** A pass over the declared indexes, now; resolves once it is done (tests, benchmarks). */
  updateIndexes(): Promise<ReadonlySet<string>> {
    return this.#indexes.update().then(() => this.#indexes.indexed);
  }

  #state(
    connection: Connection,
    mode: 'write' | 'read' | 'snapshot',
    storeTimestamp?: (scope: Scope) => Promise<number>,
  ): SqliteSessionState {
    return new SqliteSessionState(connection, mode, {
      indexed: this.#indexes.indexed,
      ...(storeTimestamp ? { storeTimestamp } : {}),
      ...(mode === 'read' ? { cache: this.#cache } : {}),
    });
  }

  /**
   * Runs `fn` between BEGIN IMMEDIATE and COMMIT on the writer, once the transactions queued
   * before it are done. Use the given session only: a `storage.transaction()` inside `fn`
   * waits for `fn` to end, and fails after `lockTimeoutMs`.
   */
  async transaction<T>(fn: (session: StorageSession) => Promise<T>): Promise<T> {
    let changed = false;
    const result = await this.#write((connection) => {
      const state = this.#state(connection, 'write');
      return fn(new SqliteSession(state))
        .then((result) => {
          if (state.failure) throw state.failure;
          state.flushOutbox();
          changed = state.collectionsChanged;
          return result;
        })
        .finally(() => state.end());
    });
    // Committed: a collection's declared indexes may have changed.
    if (changed) void this.#indexes.update();
    return result;
  }

  /**
   * BEGIN … COMMIT on a read-only connection: every read of `fn` sees the database as it was
   * when the snapshot started. A scope without a timestamp gets one stored in a transaction,
   * then `fn` runs again on a new snapshot that sees it (`fn` must only read).
   */
  async snapshot<T>(fn: (session: StorageSession) => Promise<T>): Promise<T> {
    return withInitialisedScopes(
      () => this.#snapshot(fn),
      (scope) => this.transaction((session) => session.objects.timestamp(scope)),
    );
  }

  async #snapshot<T>(fn: (session: StorageSession) => Promise<T>): Promise<T> {
    const connection = await this.#snapshots.acquire(this.#lockTimeoutMs);
    const state = this.#state(connection, 'snapshot');
    try {
      connection.exec('BEGIN');
      // A deferred transaction takes its snapshot at its first read: take it now.
      connection.get('SELECT 1 AS started FROM schema_migrations LIMIT 1');
      const result = await fn(new SqliteSession(state));
      connection.exec('COMMIT');
      return result;
    } catch (error) {
      rollbackQuietly(connection);
      throw error;
    } finally {
      state.end();
      this.#snapshots.release(connection);
    }
  }

  /** `fn` in a transaction on the writer, resolved once committed; undone, `fn`'s error unchanged, if it throws. */
  #write<T>(fn: (connection: Connection) => Promise<T>): Promise<T> {
    return this.#commits.run(fn);
  }

  /** `quire import`'s bulk path (bulk-import.ts): the whole import in one transaction on the writer. */
  bulkImport(options: BulkImportOptions, fill: (loader: BulkLoader) => Promise<void>): Promise<BulkImportResult> {
    return sqliteBulkImport((fn) => this.#write(fn), options, fill);
  }

  /**
   * Plain reads outside a transaction (each statement sees what is committed), with an ACL memo
   * of their own: at once on the reader, or (in memory) when the connection is free.
   */
  async read<T>(fn: (session: StorageSession) => Promise<T>): Promise<T> {
    if (!this.#readerLock) return fn(this.#readSession());
    const connection = await this.#readerLock.acquire(this.#lockTimeoutMs);
    try {
      return await fn(this.#readSession());
    } finally {
      this.#readerLock.release(connection);
    }
  }

  /**
   * A session of autocommit reads. A scope without a timestamp gets `now` stored: by a
   * transaction on a file (the reader is read only), or directly on the in-memory store's one
   * connection, which the caller holds (read).
   */
  #readSession(): SqliteSession {
    // Another process committed since the last look: what the cache holds may be stale.
    const version = dataVersion(this.#writerConnection);
    if (version !== this.#dataVersion) {
      this.#dataVersion = version;
      this.#cache.clear();
    }
    const storeTimestamp = this.#readerLock
      ? async (scope: Scope) => new SqliteObjects(this.#state(this.#readerConnection, 'write')).timestamp(scope)
      : (scope: Scope) => this.transaction((session) => session.objects.timestamp(scope));
    return new SqliteSession(this.#state(this.#readerConnection, 'read', storeTimestamp));
  }

  /** A read of the store (harmless on the in-memory store's connection even mid-transaction). */
  async ping(): Promise<boolean> {
    try {
      this.#readerConnection.get('SELECT count(*) AS migrations FROM schema_migrations');
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Empties every table but the migration registry, so tables added by later migrations are
   * flushed too. Names come from the catalog and are quoted, never user input.
   */
  async flush(): Promise<void> {
    await this.#write(async (connection) => {
      const tables = connection.all<{ name: string }>(
        `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name ` +
          `<> 'schema_migrations'`,
      );
      for (const { name } of tables) connection.run(`DELETE FROM "${name.replace(/"/g, '""')}"`);
    });
  }

  /** Waits (up to `lockTimeoutMs`) for the transactions and snapshots under way, then closes every connection. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    await this.#indexes.close();
    if (this.#snapshots !== this.#writer) {
      await this.#snapshots.close(this.#lockTimeoutMs);
      this.#readerConnection.close();
    }
    await this.#writer.close(this.#lockTimeoutMs);
  }
}

/** `PRAGMA data_version`: moves when a connection other than this one commits. */
function dataVersion(connection: Connection): number {
  return connection.get<{ data_version: number }>('PRAGMA data_version')!.data_version;
}

/** Opens (creating it if needed) and migrates a SQLite store. */
export async function createSqliteStorage(options: SqliteStorageOptions = {}): Promise<SqliteStorage> {
  const {
    path,
    synchronous = 'FULL',
    lockTimeoutMs = 10_000,
    busyTimeoutMs = 5_000,
    snapshotConnections = 4,
    maxDeclaredIndexes = 16,
    keepIndexes = true,
    cacheMaxEntries = 10_000,
    groupCommitMax = 32,
  } = options;
  if (!Object.hasOwn(SYNCHRONOUS, synchronous))
    throw new StorageError(`synchronous must be FULL or NORMAL, not ${String(synchronous)}`);
  const writer = new Connection(path ?? ':memory:', { busyTimeoutMs });
  let applied: string[];
  try {
    if (path !== undefined) {
      // WAL: readers read while the writer writes, and a commit appends to one file.
      const mode = writer.get<{ journal_mode: string }>('PRAGMA journal_mode = WAL');
      if (mode?.journal_mode !== 'wal')
        throw new BackendError(`sqlite: ${path} cannot be put in WAL mode (got ${mode?.journal_mode})`);
    }
    writer.exec(`PRAGMA synchronous = ${SYNCHRONOUS[synchronous]}; PRAGMA foreign_keys = OFF`);
    configure(writer);
    applied = migrate(writer);
  } catch (error) {
    writer.close();
    throw error;
  }
  const storage = new SqliteStorage(writer, {
    lockTimeoutMs,
    busyTimeoutMs,
    snapshotConnections,
    path,
    maxDeclaredIndexes,
    cacheMaxEntries,
    groupCommitMax,
  });
  storage.migrationsApplied = applied;
  if (keepIndexes) storage.startIndexing();
  return storage;
}

/** Settings of every connection (they are per connection, not stored in the file). */
function configure(connection: Connection): Connection {
  connection.exec(`PRAGMA cache_size = ${CACHE_SIZE}; PRAGMA temp_store = MEMORY`);
  registerFilterFunctions(connection.db);
  return connection;
}

/**
 * Applies the pending migrations, each in its own BEGIN IMMEDIATE transaction (another process
 * opening the same file waits, then finds it applied). Refuses a schema newer than this code.
 */
function migrate(connection: Connection): string[] {
  const names: string[] = [];
  const known = new Set(MIGRATIONS.map((migration) => migration.version));
  for (const migration of MIGRATIONS) {
    connection.exec('BEGIN IMMEDIATE');
    try {
      connection.exec(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, ' +
          'applied_at TEXT NOT NULL) STRICT',
      );
      const applied = connection.all<{ version: number }>('SELECT version FROM schema_migrations');
      const unknown = applied.filter(({ version }) => !known.has(version)).map(({ version }) => version);
      if (unknown.length > 0) {
        throw new MigrationRequiredError(
          `The database schema has migrations this version of Quire does not know (${unknown.join(', ')}): ` +
            'upgrade Quire.',
        );
      }
      if (!applied.some(({ version }) => version === migration.version)) {
        connection.exec(migration.sql);
        connection.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
          migration.version,
          migration.name,
          new Date().toISOString(),
        ]);
        names.push(migration.name);
      }
      connection.exec('COMMIT');
    } catch (error) {
      rollbackQuietly(connection);
      throw error;
    }
  }
  return names;
}

/** Ends a failed transaction without hiding the failure that ended it. */
function rollbackQuietly(connection: Connection): void {
  try {
    connection.rollback();
  } catch {
    // The connection is broken; the original error says why.
  }
}
