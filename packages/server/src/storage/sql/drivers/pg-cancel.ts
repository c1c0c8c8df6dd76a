/**
 * Stopping a statement that runs for nobody (issue 36 item 4): when the work's signal aborts (its
 * client went away, its batch ran out of time) or, through a transaction pooler, when it runs past
 * the statement timeout, PostgreSQL is sent a cancel request for the connection's backend. A
 * cancel request is PostgreSQL's own (what psql's Ctrl-C sends): a short connection of its own
 * carrying the backend's key, so it needs no pooled connection (there may be none free) and
 * PgBouncer forwards it. The connection it stopped is then discarded, never lent again: the
 * request reaches the backend a little later, and must not stop the next borrower's statement.
 */
import pg from 'pg';

/** What a cancel request needs of the connection's settings. */
export type CancelConfig = pg.ClientConfig;

/** Sends PostgreSQL a cancel request for `client`'s backend (as node-postgres' own `Client.cancel`). */
export function sendCancel(config: CancelConfig, client: pg.PoolClient | pg.Client): void {
  const { processID, secretKey } = client as unknown as { processID: number | null; secretKey: number | null };
  if (processID === null || secretKey === null) return;
  const sender = new pg.Client(config);
  const { connection, host, port } = sender as unknown as {
    connection: pg.Connection & {
      connect(port: number | string, host?: string): void;
      cancel(pid: number, key: number): void;
    };
    host: string;
    port: number;
  };
  connection.on('error', () => {}); // best effort: the statement timeout still bounds it
  connection.once('connect', () => connection.cancel(processID, secretKey));
  if (host.startsWith('/')) connection.connect(`${host}/.s.PGSQL.${port}`);
  else connection.connect(port, host);
}

/**
 * Watches a checked-out connection while work runs on it: on `signal`'s abort, or after
 * `deadlineMs` (undefined: none), its statement is cancelled. `stop()` ends the watch and says
 * whether a cancel was sent (the connection must then be discarded).
 */
export function watchConnection(
  config: CancelConfig,
  client: pg.PoolClient,
  signal: AbortSignal | undefined,
  deadlineMs: number | undefined,
): { stop(): boolean; readonly timedOut: boolean } {
  let cancelled = false;
  let timedOut = false;
  const cancel = () => {
    if (cancelled) return;
    cancelled = true;
    sendCancel(config, client);
  };
  const timer =
    deadlineMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          cancel();
        }, deadlineMs);
  signal?.addEventListener('abort', cancel, { once: true });
  return {
    stop() {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', cancel);
      return cancelled;
    },
    get timedOut() {
      return timedOut;
    },
  };
}
