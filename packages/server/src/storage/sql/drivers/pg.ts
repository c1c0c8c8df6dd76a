import pg from 'pg';
import { bulkTransaction } from './pg-bulk.js';
import { PgChannels } from './pg-channels.js';
import { CONNECTION_TIMEOUT_MS, PgStatements } from './pg-statements.js';
import { toBackendError, type SqlDriver } from './types.js';

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
  /** The share of them the owners of one address (`SessionOptions.address`) hold together (default 0.5). */
  addressShare?: number;
  /** Statements built per request one owner runs at once (default 1), and one address (default 2). */
  costlyPerOwner?: number;
  costlyPerAddress?: number;
}

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
  addressShare = 0.5,
  costlyPerOwner = 1,
  costlyPerAddress = 2,
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
  const configOf = (target: string, timeoutMs = 0): pg.ClientConfig => ({
    connectionString: pooled ? target : withoutUrlOptions(target),
    types,
    ...settingsOf(target, timeoutMs),
    connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
  });
  const statements = new PgStatements({
    connection: configOf(url, statementTimeoutMs),
    poolSize,
    reconnectMaxDelayMs,
    pooled,
    statementTimeoutMs,
    ownerShare,
    addressShare,
    costlyPerOwner,
    costlyPerAddress,
  });
  const channels = new PgChannels({
    run: (text, params) => statements.connection().query(text, params),
    configOf,
    url,
    listenUrl,
    pooled,
    pollIntervalMs,
    reconnectMaxDelayMs,
  });
  return {
    name: 'postgresql',
    ...statements.connection(),
    transaction: (fn, options) => statements.transaction(fn, options),
    // The schema in the name tells the imports of several schemas apart (tests share one database).
    bulkTransaction: (fn, name) =>
      bulkTransaction({ ...configOf(url), application_name: schema ? `${name} (${schema})` : name }, fn),
    listen: (channel, listener) => channels.listen(channel, listener),
    notify: (channel, payload) => channels.notify(channel, payload),
    stats: () => statements.stats(),
    async close() {
      await channels.close();
      await statements.close();
    },
  };
}
