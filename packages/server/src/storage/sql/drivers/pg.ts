import pg from 'pg';
import { toBackendError, transactionMode, type DeferredStatement, type Row, type SqlConnection, type SqlDriver, type SqlTransaction } from './types.js';

export interface PgDriverOptions {
  /** `postgresql://user:password@host:port/database` */
  url: string;
  /** Maximum number of pooled connections (default 10). */
  poolSize?: number;
  /** Schema holding Quire's tables (set as `search_path`); tests use a fresh one per file. */
  schema?: string;
}

const INT8_OID = 20;
// Our int8 columns hold millisecond timestamps, far below 2^53: read them as numbers. Scoped
// to this pool, so other users of `pg` in the process keep the default (string) parser.
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

// Lower-case identifiers only: the name goes unquoted into the startup `options` string.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function createPgDriver({ url, poolSize = 10, schema }: PgDriverOptions): SqlDriver {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new TypeError(`invalid PostgreSQL schema name ${JSON.stringify(schema)} (expected ${SCHEMA_NAME.source})`);
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 10_000,
    types,
    // node-postgres's pipeline mode: a query is sent without waiting for the previous one's
    // answer. Awaited queries behave as before; `beforeCommit` statements travel with COMMIT.
    pipeline: true,
    ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
  });
  // An idle connection dropped by the server: the pool discards it and reconnects on the next
  // checkout. Without a listener the 'error' event would crash the process.
  pool.on('error', () => {});

  const wrap = (client: pg.Pool | pg.PoolClient): SqlConnection => ({
    async query<R extends Row>(text: string, params: readonly unknown[] = []) {
      try {
        return (await client.query<R>(text, params as unknown[])).rows;
      } catch (error) {
        throw toBackendError('postgresql', error);
      }
    },
    async exec(script: string) {
      try {
        await client.query(script); // no parameters: simple protocol, several statements allowed
      } catch (error) {
        throw toBackendError('postgresql', error);
      }
    },
  });

  return {
    name: 'postgresql',
    ...wrap(pool),
    async transaction(fn, options) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw toBackendError('postgresql', error);
      }
      const deferred: DeferredStatement[] = [];
      const tx: SqlTransaction = {
        ...wrap(client),
        beforeCommit: (text, params = []) => void deferred.push({ text, params }),
      };
      let broken = false;
      try {
        await tx.query(`BEGIN ${transactionMode(options)}`);
        const result = await fn(tx);
        // One round trip: the deferred writes and COMMIT are sent together (in one write: the
        // socket is corked while the pipeline takes them). If one of them fails, PostgreSQL
        // answers the COMMIT with a rollback; its error is what we report.
        const { stream } = (client as unknown as pg.Client).connection;
        stream.cork();
        let sent: Array<Promise<unknown>>;
        try {
          sent = [...deferred.map((statement) => client.query(statement.text, statement.params as unknown[])), client.query('COMMIT')];
        } finally {
          stream.uncork();
        }
        const answers = await Promise.allSettled(sent);
        const failed = answers.find((answer) => answer.status === 'rejected');
        if (failed) throw toBackendError('postgresql', failed.reason);
        return result;
      } catch (error) {
        // A connection that cannot even roll back is destroyed rather than returned to the pool.
        await client.query('ROLLBACK').catch(() => (broken = true));
        throw error;
      } finally {
        client.release(broken);
      }
    },
    async close() {
      await pool.end();
    },
  };
}
