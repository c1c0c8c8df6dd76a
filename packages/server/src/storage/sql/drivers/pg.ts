import { createHash } from 'node:crypto';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import {
  listenConnection,
  NOTIFICATION_RETENTION_MS,
  NotificationPoller,
  notifyStatement,
  PollersWatch,
  pruneNotifications,
} from './pg-notifications.js';
import { SharedConnections } from './pg-shared.js';
import {
  toBackendError,
  transactionMode,
  type BulkConnection,
  type ChannelListener,
  type DeferredStatement,
  type QueryOptions,
  type Row,
  type SqlConnection,
  type SqlDriver,
  type SqlTransaction,
} from './types.js';

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
function startupOptions(url: string, schema: string | undefined): string {
  let fromUrl = '';
  try {
    fromUrl = new URL(url).searchParams.get('options') ?? '';
  } catch {
    // Not a URL the WHATWG parser takes (node-postgres may still): no options from it.
  }
  return [fromUrl, '-c jit=off', schema === undefined ? '' : `-c search_path=${schema}`].filter(Boolean).join(' ');
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
}: PgDriverOptions): SqlDriver {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new TypeError(`invalid PostgreSQL schema name ${JSON.stringify(schema)} (expected ${SCHEMA_NAME.source})`);
  }
  if (schema !== undefined && pooled)
    throw new TypeError(
      'a schema cannot be chosen through a transaction pooler: give Quire a database (or a role whose search_path names the schema)',
    );
  const settingsOf = (target: string) => (pooled ? {} : { options: startupOptions(target, schema) });
  const connection = {
    connectionString: pooled ? url : withoutUrlOptions(url),
    types,
    ...settingsOf(url),
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

  const listeners: Array<() => Promise<void>> = [];
  /** Whether some process polls: then notifications are logged for it (pg-notifications.ts). */
  const pollers = new PollersWatch((text, params) => wrap(pool).query(text, params));
  let poller: NotificationPoller | null = null;
  /** Where LISTEN is impossible (a pooler and no `listenUrl`, or LISTEN refused): polled. */
  const poll = (channel: string, listener: ChannelListener) => {
    poller ??= new NotificationPoller((text, params) => wrap(pool).query(text, params), {
      intervalMs: pollIntervalMs,
      maxRetryDelayMs: reconnectMaxDelayMs,
    });
    poller.listen(channel, listener);
  };
  let pruning: NodeJS.Timeout | null = null;
  /** Old notifications leave the table (every process that listens does its share). */
  const startPruning = () => {
    if (pruning) return;
    const every = NOTIFICATION_RETENTION_MS / 4;
    pruning = setInterval(
      () => void pruneNotifications((text, params) => wrap(pool).query(text, params)).catch(() => {}),
      every * (0.75 + Math.random() / 2),
    );
    pruning.unref();
  };

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

  const wrap = (client: pg.Pool | pg.PoolClient): SqlConnection => ({
    async query<R extends Row>(text: string, params?: readonly unknown[], options?: QueryOptions) {
      try {
        // Outside a transaction, a fixed statement (short by design) goes on a shared connection.
        const via = client === pool && !options?.dynamic ? shared : client;
        return (await send<R>(via, text, params, options)).rows;
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
        // Through a pooler, what the direct path sets at connection is set here, in the same message.
        state.begun = client.query(`BEGIN ${transactionMode(options)}${pooled ? '; SET LOCAL jit = off' : ''}`);
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
        exec: wrap(client).exec,
        beforeCommit: (text, params = []) => void deferred.push({ text, params }),
        atCommit: (build) => void builders.push(build),
      };
      let broken = false;
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
          await client.query('ROLLBACK').catch(() => (broken = true));
        }
        throw error;
      } finally {
        client.release(broken);
      }
    },
    // The schema in the name tells the imports of several schemas apart (tests share one database).
    bulkTransaction: (fn, name) =>
      bulkTransaction({ ...connection, application_name: schema ? `${name} (${schema})` : name }, fn),
    listen(channel, listener) {
      startPruning();
      if (pooled && listenUrl === undefined) return poll(channel, listener);
      const target = listenUrl ?? url;
      const config = {
        connectionString: pooled ? target : withoutUrlOptions(target),
        types,
        ...settingsOf(target),
        connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
      };
      listeners.push(
        listenConnection({
          config,
          channel,
          listener,
          maxRetryDelayMs: reconnectMaxDelayMs,
          refused: () => poll(channel, listener),
        }),
      );
    },
    notify: (channel, payload) => notifyStatement(channel, payload, pollers.polled),
    stats() {
      // The shared connections count as busy: they are always open, and shared by design.
      return { total: pool.totalCount + sharedCount, idle: pool.idleCount, waiting: pool.waitingCount };
    },
    async close() {
      if (pruning) clearInterval(pruning);
      pollers.close();
      await Promise.all([...listeners.map((stop) => stop()), poller?.close()]);
      await shared.close();
      await pool.end();
    },
  };
}

/**
 * `SqlDriver.bulkTransaction`: a plain client (no pipelining: pg refuses COPY streams on a pipelined
 * connection; pg-copy-streams, of node-postgres' own ecosystem, speaks COPY's sub-protocol on it).
 * A connection that dies mid-way (the process killed) rolls its transaction back on the server.
 */
async function bulkTransaction<T>(config: pg.ClientConfig, fn: (connection: BulkConnection) => Promise<T>): Promise<T> {
  const client = new pg.Client(config);
  client.on('error', () => {}); // a dropped connection fails the statement in flight instead
  const fail = (error: unknown) => toBackendError('postgresql', error);
  try {
    await client.connect();
  } catch (error) {
    throw fail(error);
  }
  const connection: BulkConnection = {
    query: async (text, params = []) =>
      (await client.query({ text, values: params as unknown[] }).catch((e) => Promise.reject(fail(e)))).rows,
    exec: async (script) => void (await client.query(script).catch((e) => Promise.reject(fail(e)))),
    copyFrom: (statement, text) =>
      new Promise<void>((resolve, reject) => {
        const stream = client.query(copyFrom(statement));
        stream.on('finish', resolve);
        stream.on('error', (error) => reject(fail(error)));
        stream.end(text);
      }),
  };
  try {
    await connection.exec('BEGIN');
    const result = await fn(connection);
    await connection.exec('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}
