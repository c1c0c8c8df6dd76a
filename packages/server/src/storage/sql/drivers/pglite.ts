import { PGlite, type Transaction } from '@electric-sql/pglite';
import {
  toBackendError,
  transactionMode,
  type DeferredStatement,
  type Row,
  type SqlConnection,
  type SqlDriver,
  type SqlTransaction,
} from './types.js';

export interface PgliteDriverOptions {
  /** Directory holding the database; in memory when omitted. */
  dataDir?: string;
}

/**
 * Embedded PostgreSQL (WebAssembly). PGlite has a single connection and runs transactions
 * one at a time: a query issued outside `fn` while a transaction is open waits for it.
 */
export function createPgliteDriver({ dataDir }: PgliteDriverOptions = {}): SqlDriver {
  const db = new PGlite(dataDir);

  const wrap = (client: Pick<Transaction, 'query' | 'exec'>): SqlConnection => ({
    async query<R extends Row>(text: string, params: readonly unknown[] = []) {
      try {
        return (await client.query<R>(text, params as unknown[])).rows;
      } catch (error) {
        throw toBackendError('pglite', error);
      }
    },
    async exec(script: string) {
      try {
        await client.exec(script);
      } catch (error) {
        throw toBackendError('pglite', error);
      }
    },
  });

  return {
    name: 'pglite',
    ...wrap(db),
    async transaction(fn, options) {
      // PGlite issues BEGIN/COMMIT/ROLLBACK itself; errors of `fn` must come back unchanged.
      let fromFn = false;
      const committed: Array<() => void> = [];
      try {
        const value = await db.transaction(async (tx) => {
          const deferred: DeferredStatement[] = [];
          const builders: Array<() => DeferredStatement[]> = [];
          const connection: SqlTransaction = {
            ...wrap(tx),
            beforeCommit: (text, params = []) => void deferred.push({ text, params }),
            atCommit: (build) => void builders.push(build),
          };
          await connection.query(`SET TRANSACTION ${transactionMode(options)}`);
          let result: Awaited<ReturnType<typeof fn>>;
          try {
            result = await fn(connection);
          } catch (error) {
            fromFn = true;
            throw error;
          }
          // In process there is no round trip to save: the deferred writes simply run last.
          for (const build of builders) deferred.push(...build());
          for (const statement of deferred) {
            const rows = await connection.query(statement.text, statement.params);
            committed.push(() => statement.onRows?.(rows));
          }
          return result;
        });
        for (const inform of committed) inform();
        return value;
      } catch (error) {
        throw fromFn ? error : toBackendError('pglite', error);
      }
    },
    async close() {
      await db.close();
    },
  };
}
