/**
 * How far a hot standby is behind its primary, for the heartbeat (a reader too far behind says
 * so) and the metrics.
 *
 * Not `now() - pg_last_xact_replay_timestamp()`: that grows while the primary is idle, though
 * nothing is behind. The standby is behind only while it has received WAL it has not replayed
 * (`pg_last_wal_replay_lsn() < pg_last_wal_receive_lsn()`), and then by as long as the oldest
 * such WAL has waited. Each sample notes the received position and when it was first seen; the
 * lag is the age of the oldest noted position still ahead of replay (0 once replay reached what
 * was received). Sampled every `intervalMs` (one tiny statement), so it is known to that grain.
 * A standby cut off from its primary receives nothing and counts as caught up: it serves what
 * it has, as PostgreSQL's own `pg_stat_wal_receiver` would tell.
 */
import type { Row } from './drivers/types.js';

type Run = <R extends Row>(text: string, params: unknown[]) => Promise<R[]>;

const POSITIONS = `SELECT (pg_last_wal_receive_lsn() - '0/0'::pg_lsn)::text AS received,
                          (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::text AS replayed`;

interface PositionsRow extends Row {
  received: string | null;
  replayed: string | null;
}

export class ReplicaLag {
  readonly #run: Run;
  readonly #intervalMs: number;
  /** Received positions not yet replayed, oldest first, with when each was first seen. */
  #pending: Array<{ at: number; lsn: bigint }> = [];
  #lagMs = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(run: Run, { intervalMs }: { intervalMs: number }) {
    this.#run = run;
    this.#intervalMs = intervalMs;
  }

  /** Samples every `intervalMs` until `close`. */
  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.sample().catch(() => {}), this.#intervalMs);
    this.#timer.unref();
    void this.sample().catch(() => {});
  }

  /** The lag as last sampled, in seconds. */
  get seconds(): number {
    return this.#lagMs / 1000;
  }

  /** Reads the positions now; the lag in seconds (rejects when the standby cannot be read). */
  async sample(): Promise<number> {
    const [row] = await this.#run<PositionsRow>(POSITIONS, []);
    const at = Date.now();
    const received = row?.received == null ? null : BigInt(row.received.split('.')[0]!);
    const replayed = row?.replayed == null ? null : BigInt(row.replayed.split('.')[0]!);
    if (received === null || replayed === null || replayed >= received) {
      this.#pending = [];
      this.#lagMs = 0;
    } else {
      this.#pending = this.#pending.filter(({ lsn }) => lsn > replayed);
      const newest = this.#pending.at(-1);
      if (!newest || newest.lsn < received) this.#pending.push({ at, lsn: received });
      // Bounded: a standby far behind keeps its oldest sample and the newest few.
      if (this.#pending.length > 64) this.#pending.splice(1, this.#pending.length - 64);
      this.#lagMs = at - this.#pending[0]!.at;
    }
    return this.seconds;
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}
