/**
 * A transaction on one checked-out PostgreSQL connection (pg.ts lends it, in its owner's share of
 * the pool, and takes it back): BEGIN leaves with the first statement, the deferred writes with
 * COMMIT, so that a transaction costs no round trip of its own.
 */
import type pg from 'pg';
import {
  toBackendError,
  transactionMode,
  type DeferredStatement,
  type QueryOptions,
  type Row,
  type SqlTransaction,
  type TransactionOptions,
} from './types.js';

export interface TransactionContext {
  /** Sends one statement (prepared under its name unless dynamic or pooled) without waiting. */
  send<R extends Row>(
    client: pg.PoolClient,
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<pg.QueryResult<R>>;
  /** Runs an upkeep script (migrations) in the transaction. */
  exec(client: pg.PoolClient, script: string): Promise<void>;
  /** What BEGIN sets beside the mode (through a pooler, what the direct path sets at connection). */
  beginSettings: string;
}

/**
 * Runs `fn` between BEGIN and COMMIT on `client`; rolls back and rethrows when it fails. Sets
 * `outcome.broken` when the connection cannot even roll back (it must then be destroyed).
 */
export async function runTransaction<T>(
  client: pg.PoolClient,
  fn: (connection: SqlTransaction) => Promise<T>,
  options: TransactionOptions | undefined,
  context: TransactionContext,
  outcome: { broken: boolean },
): Promise<T> {
  const { send } = context;
  const { stream } = (client as unknown as pg.Client).connection;
  /** Statements sent together, in one socket write (the pipeline takes them while corked). */
  const sendTogether = (statements: Array<() => Promise<unknown>>) => {
    stream.cork();
    try {
      return statements.map((statement) => statement());
    } finally {
      stream.uncork();
    }
  };
  // BEGIN leaves with the transaction's first statement, or with COMMIT: no round trip of
  // its own. Its failure (a broken connection) fails that statement too; it is awaited at the end.
  const state: { begun: Promise<unknown> | null } = { begun: null };
  const begin = () => {
    state.begun = client.query(`BEGIN ${transactionMode(options)}${context.beginSettings}`);
    // Awaited only when the transaction ends: until then, its failure (the connection
    // dropped) must not count as an unhandled rejection, which would end the process.
    state.begun.catch(() => {});
    return state.begun;
  };
  const deferred: DeferredStatement[] = [];
  const builders: Array<() => DeferredStatement[]> = [];
  const tx: SqlTransaction = {
    async query<R extends Row>(text: string, params?: readonly unknown[], queryOptions?: QueryOptions) {
      try {
        if (state.begun) return (await send<R>(client, text, params, queryOptions)).rows;
        const [, first] = sendTogether([begin, () => send<R>(client, text, params, queryOptions)]);
        return ((await first) as pg.QueryResult<R>).rows;
      } catch (error) {
        throw toBackendError('postgresql', error);
      }
    },
    exec: (script) => context.exec(client, script),
    beforeCommit: (text, params = []) => void deferred.push({ text, params }),
    atCommit: (build) => void builders.push(build),
  };
  try {
    const result = await fn(tx);
    for (const build of builders) deferred.push(...build());
    const { begun } = state;
    if (!begun && deferred.length === 0) return result; // nothing was sent: nothing to commit
    // One round trip: the deferred writes and COMMIT are sent together. If one of them
    // fails, PostgreSQL answers the COMMIT with a rollback; its error is what we report.
    const written = deferred.map((statement) => () => send(client, statement.text, statement.params));
    const answers = await Promise.allSettled([
      ...(begun ? [begun] : []),
      ...sendTogether([...(begun ? [] : [begin]), ...written, () => client.query('COMMIT')]),
    ]);
    const failed = answers.find((answer) => answer.status === 'rejected');
    if (failed) throw toBackendError('postgresql', failed.reason);
    const results = answers.slice(answers.length - 1 - deferred.length, -1);
    for (const [i, statement] of deferred.entries())
      statement.onRows?.((results[i] as PromiseFulfilledResult<pg.QueryResult>).value.rows);
    return result;
  } catch (error) {
    // A connection that cannot even roll back is destroyed rather than returned to the pool.
    const { begun } = state;
    if (begun) {
      await begun.catch(() => {});
      await client.query('ROLLBACK').catch(() => (outcome.broken = true));
    }
    throw error;
  }
}
