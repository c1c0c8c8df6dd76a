/**
 * The SQLite store's plumbing: a connection that caches its prepared statements and reports
 * every failure as a storage error, and a FIFO pool of connections whose waits time out.
 *
 * better-sqlite3 is synchronous: a statement runs to completion before any other JavaScript,
 * so a connection can only be misused across `await`s (one transaction's statements mixed with
 * another's). The pool is what prevents that: a connection belongs to one holder at a time.
 */
import Database from 'better-sqlite3';
import { BackendError, UnicityError } from '../errors.js';

export type SqlValue = string | number | bigint | Buffer | null;
/** Positional (`?`) or named (`@name`) parameters. */
export type SqlParams = readonly SqlValue[] | Readonly<Record<string, SqlValue>>;
export type Row = Record<string, unknown>;

/** Prepared statements kept per connection: the distinct shapes of listings stay few. */
const STATEMENT_CACHE_SIZE = 256;
/**
 * A prepared statement takes about 12 bytes of memory per character of SQL. A listing with many
 * filters or sort fields is a statement of tens of kilobytes (each dotted field with number
 * segments is up to eight JSON paths), rarely asked twice: such statements are not kept, and
 * the SQL kept per connection is bounded too, so hostile listings cannot fill the caches
 * (RSS reached ~955 MB after fuzzing: issue 19.10). Preparing again costs little next to
 * running a statement that long.
 */
export const STATEMENT_CACHE_MAX_SQL_LENGTH = 8 * 1024;
export const STATEMENT_CACHE_MAX_TOTAL_SQL_LENGTH = 512 * 1024;

/** The open connections, for `statementCacheTotals()`. */
const openConnections = new Set<Connection>();

/** What the statement caches of every open connection hold (tests check they stay bounded). */
export function statementCacheTotals(): {
  connections: number;
  statements: number;
  sqlLength: number;
  longest: number;
} {
  const totals = { connections: openConnections.size, statements: 0, sqlLength: 0, longest: 0 };
  for (const connection of openConnections) {
    for (const sql of connection.cachedStatements()) {
      totals.statements++;
      totals.sqlLength += sql.length;
      totals.longest = Math.max(totals.longest, sql.length);
    }
  }
  return totals;
}

export interface ConnectionOptions {
  readonly?: boolean;
  /** PRAGMA busy_timeout: how long a statement waits for another process's lock. */
  busyTimeoutMs: number;
}

export class Connection {
  readonly db: Database.Database;
  /** Least recently used first (a Map keeps insertion order; a hit moves to the end). */
  readonly #statements = new Map<string, Database.Statement<unknown[], Row>>();
  /** Characters of SQL of the statements kept. */
  #cachedLength = 0;

  constructor(path: string, { readonly = false, busyTimeoutMs }: ConnectionOptions) {
    try {
      this.db = new Database(path, { readonly, timeout: busyTimeoutMs });
    } catch (error) {
      throw toStorageError(error);
    }
    openConnections.add(this);
  }

  /** Whether a transaction is open (SQLite may have rolled one back on its own after an error). */
  get inTransaction(): boolean {
    return this.db.open && this.db.inTransaction;
  }

  cachedStatements(): IterableIterator<string> {
    return this.#statements.keys();
  }

  all<R extends Row>(sql: string, params: SqlParams = []): R[] {
    try {
      return this.#prepare(sql).all(params) as R[];
    } catch (error) {
      throw toStorageError(error);
    }
  }

  get<R extends Row>(sql: string, params: SqlParams = []): R | undefined {
    try {
      return this.#prepare(sql).get(params) as R | undefined;
    } catch (error) {
      throw toStorageError(error);
    }
  }

  /** Runs a statement that returns no rows; returns the number of rows it changed. */
  run(sql: string, params: SqlParams = []): number {
    try {
      return this.#prepare(sql).run(params).changes;
    } catch (error) {
      throw toStorageError(error);
    }
  }

  /** Runs a script of statements without parameters (pragmas, migrations, BEGIN/COMMIT). */
  exec(script: string): void {
    try {
      this.db.exec(script);
    } catch (error) {
      throw toStorageError(error);
    }
  }

  /** Ends the transaction left open by a failure, if SQLite has not already rolled it back. */
  rollback(): void {
    if (this.db.open && this.db.inTransaction) this.exec('ROLLBACK');
  }

  close(): void {
    openConnections.delete(this);
    this.#statements.clear();
    this.#cachedLength = 0;
    if (this.db.open) this.db.close();
  }

  #prepare(sql: string): Database.Statement<unknown[], Row> {
    let statement = this.#statements.get(sql);
    if (statement) {
      this.#statements.delete(sql);
      this.#statements.set(sql, statement);
      return statement;
    }
    statement = this.db.prepare<unknown[], Row>(sql);
    if (sql.length > STATEMENT_CACHE_MAX_SQL_LENGTH) return statement;
    this.#cachedLength += sql.length;
    this.#statements.set(sql, statement);
    while (this.#statements.size > STATEMENT_CACHE_SIZE || this.#cachedLength > STATEMENT_CACHE_MAX_TOTAL_SQL_LENGTH) {
      const oldest = this.#statements.keys().next().value!;
      this.#statements.delete(oldest);
      this.#cachedLength -= oldest.length;
    }
    return statement;
  }
}

/** SQLite's constraint failures are unicity errors (PostgreSQL's 23505); the rest is the backend failing. */
export function toStorageError(error: unknown): Error {
  if (error instanceof BackendError || error instanceof UnicityError) return error;
  const code = error instanceof Database.SqliteError ? error.code : undefined;
  if (code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE') {
    return new UnicityError('integrity constraint violated', undefined, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new BackendError(`sqlite: ${message}`, { cause: error });
}

export interface PoolOptions {
  /** Connections open from the start. */
  connections?: Connection[];
  /** Opens another connection, up to `size`. */
  create?: () => Connection;
  size?: number;
  /** Why a wait timed out, for the error. */
  busyMessage: string;
}

interface Waiter {
  resolve: (connection: Connection) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Up to `size` connections, lent to one holder at a time in FIFO order; those not given at
 * construction are created on first need. A wait longer than `timeoutMs` fails with a
 * BackendError, so that a holder waiting for itself (a transaction opened inside a
 * transaction) fails instead of hanging.
 */
export class Pool {
  readonly #create: () => Connection;
  readonly #size: number;
  readonly #busyMessage: string;
  readonly #all: Connection[];
  readonly #idle: Connection[];
  readonly #waiters: Waiter[] = [];
  #closed = false;

  constructor({ connections = [], create, size = connections.length, busyMessage }: PoolOptions) {
    this.#all = [...connections];
    this.#idle = [...connections];
    this.#create =
      create ??
      (() => {
        throw new BackendError('sqlite: no connection can be added to this pool');
      });
    this.#size = size;
    this.#busyMessage = busyMessage;
  }

  acquire(timeoutMs: number): Promise<Connection> {
    if (this.#closed) return Promise.reject(new BackendError('sqlite: the store is closed'));
    const idle = this.#idle.pop();
    if (idle) return Promise.resolve(idle);
    if (this.#all.length < this.#size) {
      try {
        const connection = this.#create();
        this.#all.push(connection);
        return Promise.resolve(connection);
      } catch (error) {
        return Promise.reject(toStorageError(error));
      }
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          reject(new BackendError(`sqlite: ${this.#busyMessage} (waited ${timeoutMs} ms)`));
        }, timeoutMs),
      };
      this.#waiters.push(waiter);
    });
  }

  /** How many wait for a connection. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** Hands the connection to the longest waiter, or keeps it. */
  release(connection: Connection): void {
    const waiter = this.#waiters.shift();
    if (waiter) {
      clearTimeout(waiter.timer);
      waiter.resolve(connection);
    } else {
      this.#idle.push(connection);
    }
  }

  /** Refuses new holders, waits (up to `timeoutMs`) for the current ones, and closes every connection. */
  async close(timeoutMs: number): Promise<void> {
    if (this.#closed) return;
    const lent = this.#all.length - this.#idle.length;
    const returned = Array.from({ length: lent }, () => this.acquire(timeoutMs).catch(() => undefined));
    this.#closed = true;
    await Promise.all(returned);
    for (const connection of this.#all) connection.close();
  }
}
