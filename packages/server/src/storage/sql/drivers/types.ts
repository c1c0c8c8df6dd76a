/**
 * The one primitive the SQL backend needs from a database client. Drivers stay thin: they
 * run SQL, open transactions and report every database or connection failure as a
 * `BackendError` whose `cause` is the client's error (with its SQLSTATE in `cause.code`).
 */

import { BackendError, StatementTimeoutError } from '../../errors.js';
import type { PoolStats, SessionOptions } from '../../types.js';

export type Row = Record<string, unknown>;

export interface QueryOptions {
  /**
   * The text is built per request (filters, sorting): never keep it prepared, there would be no
   * end to them. Other statements come from a fixed set and are prepared once per connection.
   */
  dynamic?: boolean;
  /**
   * Its cost is the caller's to choose (a filter or a sort on data fields, which no index serves):
   * it runs in its owner's share of the costly statements (pg-statements.ts).
   */
  costly?: boolean;
  /** The request's budget (signal, owner): a statement outside a transaction that takes a pooled connection. */
  session?: SessionOptions;
}

/** For statements whose text is built per call (filters, sorting): not kept prepared. */
export const DYNAMIC: QueryOptions = { dynamic: true };
/** For a statement built per call whose cost the caller chooses (see QueryOptions.costly). */
export const COSTLY: QueryOptions = { dynamic: true, costly: true };

export interface SqlConnection {
  /**
   * Runs one parameterised statement (`$1`, `$2`…) and returns its rows. On PostgreSQL the
   * fixed statements are prepared under a name once per connection: an unnamed statement cost
   * 250 µs per call against 110 µs named (a primary-key lookup, this 2-vCPU VM). Their plans
   * use PostgreSQL's default plan cache: after five custom plans a statement may keep a generic
   * one, which PostgreSQL throws away whenever the table's statistics change (autoanalyze as it
   * grows). Planning was most of a primary-key lookup's cost: forcing custom plans made a
   * single-record GET cost 0.31 ms of PostgreSQL CPU, against 0.17 ms with generic plans.
   */
  query<R extends Row = Row>(text: string, params?: readonly unknown[], options?: QueryOptions): Promise<R[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>;
}

/** A transaction's connection. */
export interface SqlTransaction extends SqlConnection {
  /**
   * Runs a write whose result nobody reads just before COMMIT, in the same round trip where the
   * driver can (PostgreSQL pipelines it with the COMMIT). If it fails, the transaction rolls
   * back and `transaction()` rejects with its error.
   */
  beforeCommit(text: string, params?: readonly unknown[]): void;
  /**
   * The same for statements decided only when the transaction ends (what is still pending
   * then): `build` runs once fn has returned, its statements go after the `beforeCommit` ones.
   */
  atCommit(build: () => DeferredStatement[]): void;
}

/** A connection of its own for one long bulk transaction (`quire import`: sql/bulk-import.ts). */
export interface BulkConnection extends SqlConnection {
  /** Runs `statement` (`COPY … FROM STDIN`) fed with `chunks` (COPY text format); resolves once PostgreSQL took it. */
  copyFrom(statement: string, chunks: readonly Buffer[]): Promise<void>;
}

export type IsolationLevel = 'read committed' | 'repeatable read' | 'serializable';

export interface TransactionOptions {
  isolation?: IsolationLevel;
  readOnly?: boolean;
  /** The request's budget: its statements cancelled when `signal` aborts, the pool shared by `owner`. */
  session?: SessionOptions;
}

/** What a notification channel tells its listener (see `SqlDriver.listen`). */
export interface ChannelListener {
  /** A notification on the channel, sent by a transaction of this schema that committed. */
  message(payload: string): void;
  /**
   * Listening (again): notifications from now on will arrive, `pushed` within a millisecond of
   * the commit (LISTEN), or `polled` within the polling interval (see pg-notifications.ts).
   */
  connected(delivery: 'pushed' | 'polled'): void;
  /** The channel is down: notifications may be lost until `connected` is called again. */
  disconnected(): void;
}

export interface SqlDriver extends SqlConnection {
  /** `postgresql` or `pglite`. */
  readonly name: string;
  /**
   * Runs `fn` between BEGIN and COMMIT on one connection; rolls back and rethrows when `fn`
   * throws. Errors thrown by `fn` itself are rethrown unchanged.
   */
  transaction<T>(fn: (connection: SqlTransaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Runs `fn` in one transaction on a connection opened for it outside the pool and closed after
   * (COPY needs one without pipelining), its startup settings plus `application_name`; rolls back
   * when `fn` throws. Absent where COPY … FROM STDIN is not offered (PGlite): `transaction` then.
   */
  bulkTransaction?<T>(fn: (connection: BulkConnection) => Promise<T>, applicationName: string): Promise<T>;
  /**
   * Where several processes share the database: listens to `channel` (LISTEN on a connection of
   * its own, reconnecting with backoff whenever it drops, or polling where LISTEN is impossible),
   * until `close`. `notify(channel)` is the statement that sends to it from a transaction, as it
   * commits.
   */
  listen?(channel: string, listener: ChannelListener): void;
  /** The pool's connections, for metrics (where there is a pool). */
  stats?(): PoolStats;
  notify?(channel: string, payload: string): DeferredStatement;
  close(): Promise<void>;
}

export interface DeferredStatement {
  text: string;
  params: readonly unknown[];
  /** Given the statement's rows once the transaction has committed. */
  onRows?: (rows: Row[]) => void;
}

/** The SQLSTATE of a driver failure (`40001`, `23505`…), if the database reported one. */
export function sqlState(error: unknown): string | undefined {
  const cause = error instanceof Error ? error.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The transaction mode clause for `BEGIN …` or `SET TRANSACTION …`. */
export function transactionMode({ isolation = 'read committed', readOnly = false }: TransactionOptions = {}): string {
  return `ISOLATION LEVEL ${isolation.toUpperCase()}${readOnly ? ' READ ONLY' : ' READ WRITE'}`;
}

/** Wraps a client failure so that callers only ever see storage errors. */
export function toBackendError(driver: string, error: unknown): BackendError {
  if (error instanceof BackendError) return error;
  const message = error instanceof Error ? error.message : String(error);
  // 57014 query_canceled, by the statement timeout (not by our cancel request: "user request").
  if ((error as { code?: unknown } | null)?.code === '57014' && /statement timeout/.test(message))
    return new StatementTimeoutError({ cause: error });
  return new BackendError(`${driver}: ${message}`, { cause: error });
}
