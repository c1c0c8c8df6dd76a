import { createHash } from 'node:crypto';
import pg from 'pg';
import { FairShare, aborted } from './fair-share.js';
import { bulkTransaction } from './pg-bulk.js';
import { watchConnection } from './pg-cancel.js';
import { runTransaction, type TransactionContext } from './pg-transaction.js';
import { PgChannels } from './pg-channels.js';
import { SharedConnections } from './pg-shared.js';
import { StatementTimeoutError } from '../../errors.js';
import type { SessionOptions } from '../../types.js';
import { toBackendError, type QueryOptions, type Row, type SqlConnection, type SqlDriver } from './types.js';

export interface PgDriverOptions {
  /** `postgresql://user:password@host:port/database` */
  url: string;
  /** Maximum number of pooled connections (default 10). */
  poolSize?: number;
  /**
   * Schema holding Quire's tables (set as `search_path` at connection); tests use a fresh one
   * per file. Not with `pooled`: a pooler refuses the startup parameter, and a server
   * connection it lends may have another.
   */
  schema?: string;
  /**
   * Longest wait between attempts to reopen a broken connection that is kept open (the shared
   * ones, the LISTEN one); the waits start at 50 ms and double. Default 2 s.
   */
  reconnectMaxDelayMs?: number;
  /**
   * `url` leads to a transaction pooler (PgBouncer in transaction mode), which lends a server
   * connection per transaction: no startup `options` (a stock PgBouncer refuses the
   * connection), no named prepared statements (one would land on a server connection that
   * another client then uses, or miss the one it was prepared on), and what the direct path
   * sets per connection is set per transaction instead (`SET LOCAL jit = off`).
   */
  pooled?: boolean;
  /**
   * Where the LISTEN connection goes: straight to PostgreSQL. Default: `url`, except when
   * `pooled`, where LISTEN cannot work: notifications are then polled (pg-notifications.ts).
   */
  listenUrl?: string;
  /** How often notifications are polled when they are (default 250 ms). */
  pollIntervalMs?: number;
  /**
   * Longest a request's statement may run before PostgreSQL cancels it (0: no limit; default
   * 10 s). Set at connection (startup options: no statement, no round trip), per transaction
   * through a pooler; upkeep (migrations, index builds, imports) runs without it.
   */
  statementTimeoutMs?: number;
  /** The share of the pooled connections one owner (`SessionOptions.owner`) holds at most (default 0.25). */
  ownerShare?: number;
}

/** How long opening a connection may take before the attempt fails (the request answers 503). */
const CONNECTION_TIMEOUT_MS = 10_000;

const INT8_OID = 20;
// Our int8 columns hold millisecond timestamps, far below 2^53: read them as numbers. Scoped
// to this pool, so other users of `pg` in the process keep the default (string) parser.
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

// Lower-case identifiers only: the name goes unquoted into the startup `options` string.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Set by our startup `options` (a custom setting, which any PostgreSQL accepts): a connection
 * where it is missing got through something that dropped them, a pooler.
 */
const DIRECT_MARKER = 'quire.direct';

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

/**
 * The connections' startup `options`: those of the URL (`?options=...`), then ours. Prepared
 * statements may keep generic plans (see SqlConnection.query). No JIT: our statements are short,
 * and a row estimate off by much once made one spend 15 ms compiling a 50 µs insert. Tests pick
 * a schema.
 */
function startupOptions(url: string, schema: string | undefined, statementTimeoutMs = 0): string {
  let fromUrl = '';
  try {
    fromUrl = new URL(url).searchParams.get('options') ?? '';
  } catch {
    // Not a URL the WHATWG parser takes (node-postgres may still): no options from it.
  }
  return [
    fromUrl,
    '-c jit=off',
    statementTimeoutMs > 0 ? `-c statement_timeout=${Math.round(statementTimeoutMs)}` : '',
    schema === undefined ? '' : `-c search_path=${schema}`,
  ]
    .filter(Boolean)
    .join(' ');
}

/**
 * The URL without its `options`, for a connection given them by `startupOptions` (which keeps
 * them): node-postgres takes the URL's over the configuration's, which lost ours (the pooler's
 * marker: a URL with `options` was taken for a pooler, so LISTEN and the read cache were off).
 */
function withoutUrlOptions(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.searchParams.has('options')) return url;
    parsed.searchParams.delete('options');
    return parsed.toString();
  } catch {
    return url;
  }
}

/**
 * Whether `url` leads to a pooler rather than to PostgreSQL itself: one connection with our
 * startup options, which a stock PgBouncer refuses ("unsupported startup parameter") and one
 * told to ignore them (`ignore_startup_parameters = options`) drops, so that their marker is
 * missing. A pooler that passed them on would be taken for PostgreSQL: `storage_pooler` then says
 * it. Connection failures are thrown as they are (the caller retries those that may pass).
 */
export async function detectPooler(url: string): Promise<boolean> {
  const client = new pg.Client({
    connectionString: withoutUrlOptions(url),
    options: `${startupOptions(url, undefined)} -c ${DIRECT_MARKER}=on`,
    connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    if (/unsupported startup parameter/i.test(error instanceof Error ? error.message : '')) return true;
    throw toBackendError('postgresql', error);
  }
  try {
    const { rows } = await client.query<{ marker: string | null }>('SELECT current_setting($1, true) AS marker', [
      DIRECT_MARKER,
    ]);
    return rows[0]?.marker !== 'on';
  } catch (error) {
    throw toBackendError('postgresql', error);
  } finally {
    await client.end().catch(() => {});
  }
}

export function createPgDriver({
  url,
  poolSize = 10,
  schema,
  reconnectMaxDelayMs = 2_000,
  pooled = false,
  listenUrl,
  pollIntervalMs = 250,
  statementTimeoutMs = 10_000,
  ownerShare = 0.25,
}: PgDriverOptions): SqlDriver {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new TypeError(`invalid PostgreSQL schema name ${JSON.stringify(schema)} (expected ${SCHEMA_NAME.source})`);
  }
  if (schema !== undefined && pooled)
    throw new TypeError(
      'a schema cannot be chosen through a transaction pooler: ' +
        'give Quire a database (or a role whose search_path names the schema)',
    );
  const settingsOf = (target: string, timeoutMs = 0) =>
    pooled ? {} : { options: startupOptions(target, schema, timeoutMs) };
  const connection = {
    connectionString: pooled ? url : withoutUrlOptions(url),
    types,
    ...settingsOf(url, statementTimeoutMs),
    connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
  };
  // A fifth of the connections (at least one) is shared by the short autocommit statements
  // (pg-shared.ts); transactions and statements built per request take one of the others.
  const sharedCount = Math.max(1, Math.round(poolSize / 5));
  const shared = new SharedConnections(connection, sharedCount, { maxRetryDelayMs: reconnectMaxDelayMs });
  const pool = new pg.Pool({
    ...connection,
    max: Math.max(1, poolSize - sharedCount),
    // node-postgres's pipeline mode: a query is sent without waiting for the previous one's
    // answer. Awaited queries behave as before; `beforeCommit` statements travel with COMMIT.
    pipeline: true,
  });
  // A connection that drops (PostgreSQL restarting: 57P01, or a socket closed) emits 'error',
  // and an 'error' event without a listener ends the process. The pool listens only while a
  // connection is idle (it then discards it, reconnecting on the next checkout): this one also
  // covers a checked-out connection, whose queries in flight fail instead (the transaction
  // rejects, the request answers 503) and which the pool discards when it is released.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const poolMax = Math.max(1, poolSize - sharedCount);
  const share = new FairShare(poolMax, Math.ceil(poolMax * ownerShare), CONNECTION_TIMEOUT_MS);
  /** Through a pooler the startup options are dropped: the timeout is set per transaction, or watched. */
  const pooledTimeout = pooled && statementTimeoutMs > 0 ? statementTimeoutMs : undefined;

  /** A pooled connection in `owner`'s share, watched for `signal`; `run` gets it, `done` gives it back. */
  const checkout = async (session: SessionOptions = {}) => {
    if (session.signal?.aborted) throw aborted(session.signal);
    const release = await share.acquire(session.owner, session.signal);
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      release();
      throw toBackendError('postgresql', error);
    }
    return { client, release };
  };

  const channels = new PgChannels({
    run: (text, params) => wrap(pool).query(text, params),
    configOf: (target) => ({
      connectionString: pooled ? target : withoutUrlOptions(target),
      types,
      ...settingsOf(target),
      connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
    }),
    url,
    listenUrl,
    pooled,
    pollIntervalMs,
    reconnectMaxDelayMs,
  });

  /** Sends one statement (prepared under its name unless dynamic or pooled) without waiting. */
  const send = <R extends Row>(
    client: pg.Pool | pg.PoolClient | SharedConnections,
    text: string,
    params: readonly unknown[] = [],
    options: QueryOptions = {},
  ) => {
    const name = options.dynamic || pooled ? undefined : statementName(text);
    const config: pg.QueryConfig = { text, values: params as unknown[], ...(name ? { name } : {}) };
    return client instanceof SharedConnections ? client.query<R>(config) : client.query<R>(config);
  };

  /** Runs `work` on a pooled connection in the owner's share, its statement cancelled when the request stops. */
  const onPooled = async <T>(
    session: SessionOptions | undefined,
    deadlineMs: number | undefined,
    work: (client: pg.PoolClient, outcome: { broken: boolean }) => Promise<T>,
  ): Promise<T> => {
    const { client, release } = await checkout(session);
    const watch = watchConnection(connection, client, session?.signal, deadlineMs);
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
  };

  /**
   * Upkeep scripts (migrations, index builds, ANALYZE) run without the requests' statement timeout:
   * in a transaction for it only (SET LOCAL), else on a connection of the pool for their time.
   */
  const exec = async (client: pg.Pool | pg.PoolClient, script: string) => {
    try {
      if (client !== pool) await client.query(`SET LOCAL statement_timeout = 0; ${script}`);
      else if (pooled || statementTimeoutMs === 0) await client.query(script);
      else {
        const own = await pool.connect();
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
  };

  const wrap = (client: pg.Pool | pg.PoolClient): SqlConnection => ({
    async query<R extends Row>(text: string, params?: readonly unknown[], options?: QueryOptions) {
      try {
        // Outside a transaction, a fixed statement (short by design) goes on a shared connection;
        // one built per request (filters, sorts) on a pooled one of its own, in its owner's share.
        if (client !== pool) return (await send<R>(client, text, params, options)).rows;
        if (!options?.dynamic) return (await send<R>(shared, text, params, options)).rows;
        return await onPooled(
          options.session,
          pooledTimeout,
          async (own) => (await send<R>(own, text, params, options)).rows,
        );
      } catch (error) {
        throw toBackendError('postgresql', error);
      }
    },
    exec: (script: string) => exec(client, script),
  });

  const transactionContext: TransactionContext = {
    send,
    exec,
    // Through a pooler, what the direct path sets at connection is set here, in the same message.
    beginSettings: pooled
      ? `; SET LOCAL jit = off; SET LOCAL statement_timeout = ${Math.round(statementTimeoutMs)}`
      : '',
  };

  return {
    name: 'postgresql',
    ...wrap(pool),
    transaction: (fn, options) =>
      onPooled(options?.session, undefined, (client, outcome) =>
        runTransaction(client, fn, options, transactionContext, outcome),
      ),
    // The schema in the name tells the imports of several schemas apart (tests share one database).
    bulkTransaction: (fn, name) =>
      bulkTransaction(
        { ...connection, ...settingsOf(url), application_name: schema ? `${name} (${schema})` : name },
        fn,
      ),
    listen: (channel, listener) => channels.listen(channel, listener),
    notify: (channel, payload) => channels.notify(channel, payload),
    stats() {
      // The shared connections count as busy: they are always open, and shared by design.
      return { total: pool.totalCount + sharedCount, idle: pool.idleCount, waiting: pool.waitingCount };
    },
    async close() {
      await channels.close();
      await shared.close();
      await pool.end();
    },
  };
}
