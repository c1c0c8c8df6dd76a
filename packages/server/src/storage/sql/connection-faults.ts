/**
 * What a failure to reach PostgreSQL means for an operator: the database is away (worth
 * retrying: it may be starting, restarting, or not up yet beside us), or storage_url names a
 * database that does not exist or credentials it refuses (no retry helps). Used at start, where
 * the first is retried for `storage_connect_timeout_seconds` and each ends in a line that says
 * which setting to look at.
 */

export type ConnectionFault = 'unavailable' | 'no-database' | 'credentials';

/** Socket-level failures: nothing answers, or the connection was cut. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
/**
 * SQLSTATEs of a database that is there but not serving: shutting down or starting up (57P01-03),
 * out of connection slots or resources (class 53), connection exceptions (class 08).
 */
const UNAVAILABLE_STATE = /^(08|53|57P0[123])/;
/** node-postgres's own errors for a connection that dropped or did not open in time (they carry no code). */
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|no connection to PostgreSQL)/;

/** The errors of a cause chain (and of AggregateErrors: one per address tried), outermost first. */
function* chain(error: unknown, depth = 0): Generator<unknown> {
  if (depth > 8 || error === undefined || error === null) return;
  yield error;
  if (error instanceof AggregateError) for (const inner of error.errors) yield* chain(inner, depth + 1);
  if (error instanceof Error) yield* chain(error.cause, depth + 1);
}

export function connectionFault(error: unknown): ConnectionFault | undefined {
  let fault: ConnectionFault | undefined;
  for (const link of chain(error)) {
    const code = (link as { code?: unknown }).code;
    if (code === '3D000') return 'no-database';
    if (code === '28P01' || code === '28000') return 'credentials';
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || UNAVAILABLE_STATE.test(code)))
      fault = 'unavailable';
    if (link instanceof Error && UNAVAILABLE_MESSAGE.test(link.message)) fault = 'unavailable';
  }
  return fault;
}

/** The innermost message of a failure: what PostgreSQL or the socket said. */
export function rootMessage(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  for (const link of chain(error)) {
    if (link instanceof Error && link.message && !(link instanceof AggregateError)) message = link.message;
  }
  return message;
}

/** A storage_url parsed; an empty host (`postgresql://user@/db?host=/socket/dir`) is one the WHATWG parser refuses. */
function parse(url: string): URL | undefined {
  try {
    return new URL(url.replace(/^(postgres(?:ql)?:\/\/(?:[^@/]*@)?)(?=[/?]|$)/, '$1localhost'));
  } catch {
    return undefined;
  }
}

function database(parsed: URL): string {
  const raw = parsed.pathname.slice(1);
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // a malformed escape: shown as written
  }
}

/** `host:port/database` of a storage_url, never its password. */
export function describeTarget(url: string): string {
  const parsed = parse(url);
  if (!parsed) return 'storage_url';
  const host = parsed.searchParams.get('host') ?? parsed.hostname;
  return `${host}:${parsed.port || '5432'}/${database(parsed) || '(default database)'}`;
}

/** The database a storage_url names, if it names one. */
export function databaseName(url: string): string | undefined {
  const parsed = parse(url);
  return parsed ? database(parsed) || undefined : undefined;
}
