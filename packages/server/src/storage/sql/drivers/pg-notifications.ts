/**
 * Notifications between the processes that share a PostgreSQL database, received two ways:
 *
 * - **LISTEN** (`listenConnection`) on a connection of its own, straight to PostgreSQL: pushed
 *   within a millisecond of the commit. It needs a session that stays put, which a transaction
 *   pooler does not give (a LISTEN through PgBouncer in transaction mode lands on whichever
 *   server connection it lent for that statement), hence `storage_listen_url`.
 * - **Polling** (`NotificationPoller`) the `notifications` table (migration 008), where the
 *   statement that sends a notification (`NOTIFY_STATEMENT`) also writes it, in the sender's
 *   transaction. One small indexed query per interval per process, through the pooler like any
 *   statement; the delay is the interval.
 *
 * Polling must neither miss a row nor read one twice, although transactions commit in another
 * order than they took their ids, and must not wait for anyone's long transaction. Rows are
 * keyed by their transaction's id (xid8) and a poller remembers the snapshot of its last poll
 * (`pg_current_snapshot()`: every xid below its xmax not listed as in progress had ended): it
 * has read every row that snapshot saw. The next poll reads the rows of the transactions that
 * snapshot did not see — those it listed in progress (a bounded list, one index probe each) and
 * those from its xmax on (an index range) — that the new snapshot sees, then keeps the new
 * snapshot. A transaction that stays open (a bulk import) delays only its own rows. (Keeping
 * just the xmin, as this once did, held back every notification of every process for as long
 * as any transaction on the server stayed open.)
 * Rows are deleted after `NOTIFICATION_RETENTION_MS` by every process (`pruneNotifications`),
 * which records the highest id deleted; they are written as their transaction commits (NOTIFY
 * is its last statement), so a poller misses nothing as long as it polls more often than that.
 * One that did not (stopped for minutes, or a row it had not read was deleted: the highest id
 * deleted is at or past its snapshot's xmax) tells its listeners the channel was down, which
 * then start over (the cache empties, the change feed re-reads every timestamp).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { backoffDelay, sleep } from '../../../retry.js';
import type { ChannelListener, DeferredStatement } from './types.js';

/** How long a notification stays in the table: far beyond any poller's interval. */
export const NOTIFICATION_RETENTION_MS = 120_000;
/** Rows read per poll at most (the next poll goes on from there). */
const POLL_BATCH = 500;

/**
 * Sends `$2` on channel `$1` and, when some process polls, logs it for them, in one statement.
 * Channels are per database: the schema goes with the pushed payload, and listeners keep their own.
 */
export function notifyStatement(channel: string, payload: string, logged: boolean): DeferredStatement {
  return {
    text: logged
      ? `WITH logged AS (INSERT INTO notifications (channel, payload) VALUES ($1, $2))
         SELECT pg_notify($1, current_schema() || ' ' || $2)`
      : `SELECT pg_notify($1, current_schema() || ' ' || $2)`,
    params: [channel, payload],
  };
}

/** How often a poller says it polls, how long that counts, and how often senders look. */
const POLLER_HEARTBEAT_MS = 10_000;
const POLLER_TTL_MS = 30_000;
const POLLERS_REFRESH_MS = 1_000;

/**
 * Whether notifications must be logged: while a process polls (`notification_pollers` holds a
 * recent row). Logging costs a sender a write — a notification sent on its own became a write
 * transaction, 40 → 260 µs of PostgreSQL CPU — so a deployment where every process listens
 * logs nothing. Asked at once, then every second (one indexed read of a tiny table); until the
 * first answer, it logs.
 */
export class PollersWatch {
  readonly #run: RunStatement;
  #polled = true;
  #timer: NodeJS.Timeout | null = null;

  constructor(run: RunStatement) {
    this.#run = run;
  }

  get polled(): boolean {
    this.#start();
    return this.#polled;
  }

  #start(): void {
    if (this.#timer) return;
    const look = () =>
      void this.#run<{ polled: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM notification_pollers
           WHERE seen > clock_timestamp() - $1 * interval '1 millisecond') AS polled`,
        [POLLER_TTL_MS],
      )
        .then(([row]) => {
          this.#polled = row?.polled ?? true;
        })
        .catch(() => {
          this.#polled = true; // unknown: log, to be safe
        });
    this.#timer = setInterval(look, POLLERS_REFRESH_MS);
    this.#timer.unref();
    look();
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
  }
}

/** Something that runs one statement (a driver's autocommit `query`). */
export type RunStatement = <R extends Record<string, unknown>>(
  text: string,
  params: readonly unknown[],
) => Promise<R[]>;

/** Deletes the notifications older than the retention, and remembers the highest id deleted. */
export async function pruneNotifications(run: RunStatement, retentionMs = NOTIFICATION_RETENTION_MS): Promise<void> {
  await run(
    `WITH gone AS (DELETE FROM notifications
                    WHERE created_at < clock_timestamp() - $1 * interval '1 millisecond' RETURNING xid),
          highest AS (SELECT max(xid) AS xid FROM gone)
     INSERT INTO notifications_pruned AS p (through) SELECT xid FROM highest WHERE xid IS NOT NULL
     ON CONFLICT (singleton) DO UPDATE SET through = greatest(p.through, excluded.through)`,
    [retentionMs],
  );
  await run("DELETE FROM notification_pollers WHERE seen < clock_timestamp() - $1 * interval '1 millisecond'", [
    retentionMs,
  ]);
}

export interface ListenConnectionOptions {
  /** The connection's configuration (`storage_listen_url`). */
  config: pg.ClientConfig;
  channel: string;
  listener: ChannelListener;
  maxRetryDelayMs: number;
  /** LISTEN itself was refused (the server is not PostgreSQL's own, or forbids it): give up on LISTEN. */
  refused(error: unknown): void;
}

/** SQLSTATE classes of a connection that failed, not of a refused LISTEN: 08 connection, 53 resources, 57 operator. */
const CONNECTION_CLASSES = new Set(['08', '53', '57']);

/** A LISTEN connection kept up (reopened with backoff) until the returned stop function is called. */
export function listenConnection({
  config,
  channel,
  listener,
  maxRetryDelayMs,
  refused,
}: ListenConnectionOptions): () => Promise<void> {
  let stopped = false;
  let current: pg.Client | null = null;
  const stopping = new AbortController();
  const run = async () => {
    for (let failures = 0; !stopped; ) {
      const client = new pg.Client(config);
      const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
      client.on('error', () => {}); // a dropped connection ends it: 'end' below reconnects
      try {
        await client.connect();
        if (stopped) throw new Error('stopped');
        const [{ schema: own }] = (await client.query<{ schema: string }>('SELECT current_schema() AS schema'))
          .rows as [{ schema: string }];
        client.on('notification', ({ channel: from, payload = '' }) => {
          const space = payload.indexOf(' ');
          if (from === channel && payload.slice(0, space) === own) listener.message(payload.slice(space + 1));
        });
        try {
          await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
        } catch (error) {
          const code = (error as { code?: unknown }).code;
          if (typeof code === 'string' && !CONNECTION_CLASSES.has(code.slice(0, 2))) {
            stopped = true;
            await client.end().catch(() => {});
            refused(error);
            return;
          }
          throw error;
        }
        if (stopped) throw new Error('stopped');
        current = client;
        failures = 0;
        listener.connected('pushed');
        await ended;
        current = null;
        listener.disconnected();
      } catch {
        failures++;
        await client.end().catch(() => {});
      }
      // 50 ms after a drop, doubled by each failed attempt.
      if (!stopped)
        await sleep(backoffDelay({ firstMs: 50, maxMs: maxRetryDelayMs }, failures), { signal: stopping.signal });
    }
  };
  const running = run();
  return async () => {
    stopped = true;
    stopping.abort();
    await current?.end().catch(() => {});
    await running;
  };
}

interface PollRow extends Record<string, unknown> {
  snapshot: string;
  at: number;
  pruned: string | null;
  xid: string | null;
  id: string | null;
  channel: string | null;
  payload: string | null;
}

/** A snapshot as `pg_current_snapshot()` gives it (`xmin:xmax:xip,…`), and the database's time when it was taken. */
interface Snapshot {
  text: string;
  xmax: bigint;
  /** Transactions in progress then (their rows, if they commit, come later). */
  inProgress: string[];
  at: number;
}

function parseSnapshot(text: string, at: number): Snapshot {
  const [, xmax = '0', list = ''] = text.split(':');
  return { text, xmax: BigInt(xmax), inProgress: list === '' ? [] : list.split(','), at };
}

/** The rows of transactions `$1` (a snapshot's in-progress list) or from `$2` (its xmax) on, as below. */
const UNSEEN_ROWS = (where: string) => `
  (SELECT xid, id, channel, payload FROM notifications WHERE xid = ANY($1::xid8[]) AND ${where})
  UNION ALL
  (SELECT xid, id, channel, payload FROM notifications WHERE xid >= $2::xid8 AND ${where} ORDER BY xid, id LIMIT $6)`;

/**
 * One poll: this statement's snapshot and time, the highest id pruned, and the rows the last
 * snapshot did not see ($1, $2) that this one sees, of channels $3, in a round only what the
 * round's snapshot ($4) sees, after ($5, $7) — in order, at most $6.
 */
const POLLED_ROWS = `channel = ANY($3::text[])
  AND ($4::pg_snapshot IS NULL OR pg_visible_in_snapshot(xid, $4::pg_snapshot)) AND (xid, id) > ($5::xid8, $7::bigint)`;
const POLL_STATEMENT = `
  WITH now AS MATERIALIZED (SELECT pg_current_snapshot()::text AS snapshot,
                                   (extract(epoch FROM statement_timestamp()) * 1000)::float8 AS at)
  SELECT now.snapshot, now.at, (SELECT through::text FROM notifications_pruned) AS pruned,
         n.xid::text AS xid, n.id::text AS id, n.channel, n.payload
    FROM now LEFT JOIN LATERAL (
      SELECT * FROM (${UNSEEN_ROWS(POLLED_ROWS)}) unseen
       ORDER BY xid, id LIMIT $6) n ON true`;

/**
 * Reads the notifications of every channel listened to, every `intervalMs`, through `run`
 * (a pooled connection). Started by the first `listen`, stopped by `close`.
 */
export class NotificationPoller {
  readonly #run: RunStatement;
  readonly #intervalMs: number;
  readonly #maxRetryDelayMs: number;
  readonly #id = randomUUID();
  /** When the senders have all seen this poller's registration (null: not registered yet). */
  #loggedFrom: number | null = null;
  #lastHeartbeat = 0;
  readonly #listeners = new Map<string, ChannelListener[]>();
  /** The snapshot of the last complete poll: every row it saw was read. Null until the first poll. */
  #seen: Snapshot | null = null;
  /**
   * A poll that found more than POLL_BATCH rows goes on in rounds: the rows of its snapshot,
   * after the last one read, until none are left; that snapshot then becomes `#seen`.
   */
  #round: { snapshot: Snapshot; after: { xid: string; id: string } } | null = null;
  #up = false;
  #stopped = false;
  #running: Promise<void> | null = null;
  readonly #stopping = new AbortController();

  constructor(run: RunStatement, { intervalMs, maxRetryDelayMs }: { intervalMs: number; maxRetryDelayMs: number }) {
    this.#run = run;
    this.#intervalMs = intervalMs;
    this.#maxRetryDelayMs = maxRetryDelayMs;
  }

  listen(channel: string, listener: ChannelListener): void {
    const listeners = this.#listeners.get(channel) ?? [];
    listeners.push(listener);
    this.#listeners.set(channel, listeners);
    if (this.#up) listener.connected('polled');
    else listener.disconnected(); // connected once the senders log for it: its listeners then start over
    this.#running ??= this.#loop();
  }

  /**
   * Tells the senders this process polls (every POLLER_HEARTBEAT_MS). The first time, the
   * notifications are logged only once every sender has looked again (PollersWatch): until
   * then this poller is not `connected`, and its listeners start over when it is.
   */
  async #register(): Promise<void> {
    const now = Date.now();
    if (this.#loggedFrom !== null && now - this.#lastHeartbeat < POLLER_HEARTBEAT_MS) return;
    await this.#run(
      `INSERT INTO notification_pollers (poller, seen) VALUES ($1, clock_timestamp())
       ON CONFLICT (poller) DO UPDATE SET seen = clock_timestamp()`,
      [this.#id],
    );
    this.#lastHeartbeat = now;
    this.#loggedFrom ??= now + 2 * POLLERS_REFRESH_MS + 500;
  }

  async #loop(): Promise<void> {
    for (let failures = 0; !this.#stopped; ) {
      let more = false;
      try {
        more = await this.#poll();
        failures = 0;
      } catch {
        // The database is away: keep the cursor, nothing committed meanwhile is lost.
        failures++;
      }
      if (this.#stopped) break;
      const delay =
        failures > 0
          ? Math.max(this.#intervalMs, backoffDelay({ firstMs: 50, maxMs: this.#maxRetryDelayMs }, failures - 1))
          : more
            ? 0
            : this.#intervalMs;
      await sleep(delay, { signal: this.#stopping.signal });
    }
  }

  /** One poll; true when it stopped at POLL_BATCH rows (more are waiting). */
  async #poll(): Promise<boolean> {
    await this.#register();
    const channels = [...this.#listeners.keys()];
    const seen = this.#seen;
    const round = this.#round;
    const rows = await this.#run<PollRow>(POLL_STATEMENT, [
      seen?.inProgress ?? [],
      String(seen?.xmax ?? 0n),
      channels,
      round?.snapshot.text ?? null,
      round?.after.xid ?? '0',
      seen ? POLL_BATCH : 0,
      round?.after.id ?? '0',
    ]);
    const first = rows[0];
    if (!first) return false;
    const now = parseSnapshot(first.snapshot, Number(first.at));
    if (!seen) {
      // The first poll: what commits from now on.
      this.#seen = now;
      return false;
    }
    if (!this.#up && Date.now() >= this.#loggedFrom!) {
      // Every sender logs now: from here on nothing is missed.
      this.#up = true;
      for (const listener of this.#allListeners()) listener.connected('polled');
    }
    if (
      now.at - seen.at > NOTIFICATION_RETENTION_MS / 2 ||
      (first.pruned !== null && BigInt(first.pruned) >= seen.xmax)
    ) {
      // Rows this poller had not read may be gone: its listeners start over, from now.
      this.#seen = now;
      this.#round = null;
      for (const listener of this.#allListeners()) {
        listener.disconnected();
        listener.connected('polled');
      }
      return false;
    }
    const found = rows.filter(
      (row): row is PollRow & { xid: string; id: string; channel: string; payload: string } => row.xid !== null,
    );
    for (const row of found) {
      for (const listener of this.#listeners.get(row.channel) ?? []) listener.message(row.payload);
    }
    const last = found.at(-1);
    if (found.length === POLL_BATCH && last) {
      this.#round = { snapshot: round?.snapshot ?? now, after: { xid: last.xid, id: last.id } };
      return true;
    }
    this.#seen = round?.snapshot ?? now;
    this.#round = null;
    return false;
  }

  #allListeners(): ChannelListener[] {
    return [...this.#listeners.values()].flat();
  }

  async close(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    await this.#running;
    await this.#run('DELETE FROM notification_pollers WHERE poller = $1', [this.#id]).catch(() => {});
  }
}
