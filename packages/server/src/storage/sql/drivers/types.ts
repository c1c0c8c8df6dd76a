/**
 * The one primitive the SQL backend needs from a database client. Drivers stay thin: they
 * run SQL, open transactions and report every database or connection failure as a
 * `BackendError` whose `cause` is the client's error (with its SQLSTATE in `cause.code`).
 */

import { BackendError } from '../../errors.js';

export type Row = Record<string, unknown>;

export interface SqlConnection {
  /**
   * Runs one parameterised statement (`$1`, `$2`…) and returns its rows. Statements are never
   * kept prepared under a name: a named statement's generic plan, chosen while a table is
   * small, stays with the connection as the table grows (a sequential scan on every call
   * until an ANALYZE happens to invalidate it — never, where autovacuum is off).
   */
  query<R extends Row = Row>(text: string, params?: readonly unknown[]): Promise<R[]>;
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
}

export type IsolationLevel = 'read committed' | 'repeatable read' | 'serializable';

export interface TransactionOptions {
  isolation?: IsolationLevel;
  readOnly?: boolean;
}

export interface SqlDriver extends SqlConnection {
  /** `postgresql` or `pglite`. */
  readonly name: string;
  /**
   * Runs `fn` between BEGIN and COMMIT on one connection; rolls back and rethrows when `fn`
   * throws. Errors thrown by `fn` itself are rethrown unchanged.
   */
  transaction<T>(fn: (connection: SqlTransaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  close(): Promise<void>;
}

export interface DeferredStatement {
  text: string;
  params: readonly unknown[];
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
  return new BackendError(`${driver}: ${message}`, { cause: error });
}
