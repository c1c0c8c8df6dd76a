/**
 * How a PostgreSQL driver runs statements (pg.ts builds it): fixed autocommit statements on the
 * shared connections (pg-shared.ts), the others and transactions on a connection of the pool
 * lent in the work's owner's share (fair-share.ts) and watched for its signal (pg-cancel.ts),
 * upkeep scripts without the requests' statement timeout. A statement whose cost the caller
 * chooses (a listing's filters and sorts on data) also runs in its owner's share of the costly
 * statements: the database's CPU is shared by every caller's statements,
 * and one caller's back-to-back listings on several connections took most of it.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { StatementTimeoutError } from '../../errors.js';
import type { SessionOptions } from '../../types.js';
import { aborted, FairShare } from './fair-share.js';
import { watchConnection } from './pg-cancel.js';
import { SharedConnections } from './pg-shared.js';
import { runTransaction, type TransactionContext } from './pg-transaction.js';
import {
  toBackendError,
  type QueryOptions,
  type Row,
  type SqlConnection,
  type SqlTransaction,
  type TransactionOptions,
} from './types.js';

/** How long opening a connection, or waiting for one of the pool, may take before the attempt fails (503). */
export const CONNECTION_TIMEOUT_MS = 10_000;

/** Names of the prepared statements, by text: the same name on every connection. */
const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `quire_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    statementNames.set(text, name);
  }
  return name;
}

export interface PgStatementsOptions {
  /** What a connection is opened with (a cancel request too). */
  connection: pg.ClientConfig;
  poolSize: number;
  reconnectMaxDelayMs: number;
  /** Through a transaction pooler (see PgDriverOptions.pooled). */
  pooled: boolean;
  statementTimeoutMs: number;
  /** The shares of the pooled connections one owner, and the owners of one address, hold at most. */
  ownerShare: number;
  addressShare: number;
  /** Costly statements (`QueryOptions.costly`) one owner, and one address, runs at once. */
  costlyPerOwner: number;
  costlyPerAddress: number;
}

export class PgStatements {
  readonly pool: pg.Pool;
  readonly shared: SharedConnections;
  readonly sharedCount: number;
  readonly #share: FairShare;
  readonly #costly: FairShare;
  readonly #options: PgStatementsOptions;
  readonly #transactions: TransactionContext;

  constructor(options: PgStatementsOptions) {
    const { connection, poolSize, reconnectMaxDelayMs, pooled, statementTimeoutMs } = options;
    this.#options = options;
    // A fifth of the connections (at least one) is shared by the short autocommit statements
    // (pg-shared.ts); transactions and statements built per request take one of the others.
    this.sharedCount = Math.max(1, Math.round(poolSize / 5));
    this.shared = new SharedConnections(connection, this.sharedCount, { maxRetryDelayMs: reconnectMaxDelayMs });
    const max = Math.max(1, poolSize - this.sharedCount);
    // node-postgres's pipeline mode: a query is sent without waiting for the previous one's
    // answer. Awaited queries behave as before; `beforeCommit` statements travel with COMMIT.
    this.pool = new pg.Pool({ ...connection, max, pipeline: true } as pg.PoolConfig);
    // A connection that drops (PostgreSQL restarting: 57P01, or a socket closed) emits 'error',
    // and an 'error' event without a listener ends the process. The pool listens only while a
    // connection is idle (it then discards it, reconnecting on the next checkout): this one also
    // covers a checked-out connection, whose queries in flight fail instead (the transaction
    // rejects, the request answers 503) and which the pool discards when it is released.
    this.pool.on('error', () => {});
    this.pool.on('connect', (client) => client.on('error', () => {}));
    const share = (part: number) => Math.ceil(max * part);
    this.#share = new FairShare({
      slots: max,
      perOwner: share(options.ownerShare),
      perAddress: share(options.addressShare),
      waitMs: CONNECTION_TIMEOUT_MS,
      what: 'database connection',
    });
    // Held while its connection is: taken after it, in a transaction as outside one (one order, no deadlock).
    this.#costly = new FairShare({
      slots: max,
      perOwner: options.costlyPerOwner,
      perAddress: options.costlyPerAddress,
      waitMs: CONNECTION_TIMEOUT_MS,
      what: 'turn for a costly statement',
    });
    this.#transactions = {
      send: (client, text, params, queryOptions) => this.#send(client, text, params, queryOptions),
      exec: (client, script) => this.#exec(client, script),
      // Through a pooler, what the direct path sets at connection is set here, in the same message.
      beginSettings: pooled
        ? `; SET LOCAL jit = off; SET LOCAL statement_timeout = ${Math.round(statementTimeoutMs)}`
        : '',
    };
  }

  /** Statements on `client`, or outside a transaction on the pool's. */
  connection(client: pg.Pool | pg.PoolClient = this.pool): SqlConnection {
    return {
      query: async <R extends Row>(text: string, params?: readonly unknown[], options?: QueryOptions) => {
        try {
          // Outside a transaction, a fixed statement (short by design) goes on a shared connection;
          // one built per request (filters, sorts) on a pooled one of its own, in its owner's share.
          if (client !== this.pool) return (await this.#send<R>(client, text, params, options)).rows;
          if (!options?.dynamic) return (await this.#send<R>(this.shared, text, params, options)).rows;
          return await this.#onPooled(options.session, this.#pooledTimeout, async (own) => {
            const run = () => this.#send<R>(own, text, params, options);
            return (await (options.costly ? this.#costlyTurn(options.session, run) : run())).rows;
          });
        } catch (error) {
          throw toBackendError('postgresql', error);
        }
      },
      exec: (script: string) => this.#exec(client, script),
    };
  }

  transaction<T>(fn: (connection: SqlTransaction) => Promise<T>, options?: TransactionOptions): Promise<T> {
    const session = options?.session;
    const context: TransactionContext = {
      ...this.#transactions,
      send: (client, text, params, queryOptions) =>
        queryOptions?.costly
          ? this.#costlyTurn(session, () => this.#send(client, text, params, queryOptions))
          : this.#send(client, text, params, queryOptions),
    };
    return this.#onPooled(session, undefined, (client, outcome) =>
      runTransaction(client, fn, options, context, outcome),
    );
  }

  /** Runs a costly statement in its owner's turn (the caller holds its connection already). */
  async #costlyTurn<T>(session: SessionOptions | undefined, run: () => Promise<T>): Promise<T> {
    const release = await this.#costly.acquire(session, session?.signal);
    const started = performance.now();
    try {
      return await run();
    } finally {
      release();
      session?.spent?.(performance.now() - started);
    }
  }

  /** Through a pooler the startup options are dropped: the timeout is set per transaction, or watched. */
  get #pooledTimeout(): number | undefined {
    const { pooled, statementTimeoutMs } = this.#options;
    return pooled && statementTimeoutMs > 0 ? statementTimeoutMs : undefined;
  }

  /** Sends one statement (prepared under its name unless dynamic or pooled) without waiting. */
  #send<R extends Row>(
    client: pg.Pool | pg.PoolClient | SharedConnections,
    text: string,
    params: readonly unknown[] = [],
    options: QueryOptions = {},
  ): Promise<pg.QueryResult<R>> {
    const name = options.dynamic || this.#options.pooled ? undefined : statementName(text);
    const config: pg.QueryConfig = { text, values: params as unknown[], ...(name ? { name } : {}) };
    return client instanceof SharedConnections ? client.query<R>(config) : client.query<R>(config);
  }

  /** Runs `work` on a pooled connection in the owner's share, its statement cancelled when the request stops. */
  async #onPooled<T>(
    session: SessionOptions | undefined,
    deadlineMs: number | undefined,
    work: (client: pg.PoolClient, outcome: { broken: boolean }) => Promise<T>,
  ): Promise<T> {
    if (session?.signal?.aborted) throw aborted(session.signal);
    const release = await this.#share.acquire(session, session?.signal);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      release();
      throw toBackendError('postgresql', error);
    }
    const watch = watchConnection(this.#options.connection, client, session?.signal, deadlineMs);
    const outcome = { broken: false };
    try {
      return await work(client, outcome);
    } catch (error) {
      if (watch.timedOut) throw new StatementTimeoutError({ cause: error });
      throw error;
    } finally {
      // A connection whose statement was cancelled is not lent again: the cancel may still be on its way.
      const cancelled = watch.stop();
      client.release(outcome.broken || cancelled);
      release();
    }
  }

  /**
   * Upkeep scripts (migrations, index builds, ANALYZE) run without the requests' statement timeout:
   * in a transaction for it only (SET LOCAL), else on a connection of the pool for their time.
   */
  async #exec(client: pg.Pool | pg.PoolClient, script: string): Promise<void> {
    try {
      if (client !== this.pool) await client.query(`SET LOCAL statement_timeout = 0; ${script}`);
      else if (this.#options.pooled || this.#options.statementTimeoutMs === 0) await client.query(script);
      else {
        const own = await this.pool.connect();
        let broken = true;
        try {
          await own.query('SET statement_timeout = 0');
          await own.query(script).finally(() => own.query('RESET statement_timeout').then(() => (broken = false)));
        } finally {
          own.release(broken);
        }
      }
    } catch (error) {
      throw toBackendError('postgresql', error);
    }
  }

  /** The pool's connections, for metrics: the shared ones count as busy (always open, shared by design). */
  stats(): { total: number; idle: number; waiting: number } {
    const { pool } = this;
    return { total: pool.totalCount + this.sharedCount, idle: pool.idleCount, waiting: pool.waitingCount };
  }

  async close(): Promise<void> {
    await this.shared.close();
    await this.pool.end();
  }
}
