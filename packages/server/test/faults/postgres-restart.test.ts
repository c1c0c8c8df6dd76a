/**
 * PostgreSQL going away under load, on a PostgreSQL of the test's own (never the shared one):
 * a real `quire start` process takes a concurrent write load (and reads) over many connections
 * while its database restarts (`pg_ctl restart -m fast`: sessions end with 57P01), crashes
 * (`-m immediate`: sockets just close, WAL replayed at start), and stops for a while before
 * starting again. The server must live through it all, answer every request within a bound —
 * 2xx, or 503 errno 201 with Retry-After while the database is away, never a 500 — recover by
 * itself (its LISTEN connection too), and keep every write it acknowledged.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Pool } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { NOTIFY_CHANNEL } from '../../src/storage/sql/shared-cache.js';
import { useCli } from '../helpers/cli.js';
import { startPrivatePostgres } from '../helpers/private-postgres.js';

const FILE = 'postgres-restart.test.ts';
const db = await startPrivatePostgres(FILE);
const skip = typeof db === 'string';
const run = useCli();

const AUTH = `Basic ${Buffer.from('alice:secret').toString('base64')}`;
const COLLECTION = '/v1/buckets/faults/collections/c';
/** Concurrent requests in flight (one keep-alive connection each). */
const CONCURRENCY = 32;
/** Every request must be answered within this; past it, undici gives up and the test fails. */
const ANSWER_BOUND_MS = 10_000;
/** How long the server may take to serve writes again once PostgreSQL is back. */
const RECOVERY_BOUND_MS = 15_000;
/** How long PostgreSQL stays stopped. */
const OUTAGE_MS = 2_500;
/** Load between faults, once the server serves everything again. */
const STEADY_MS = 1_000;
/**
 * Once PostgreSQL is back, how long the server may still answer 503: its shared connections
 * retry with backoff, at most storage_reconnect_max_delay_seconds apart (default 2 s).
 */
const SETTLE_MS = 2_500;

interface Answer {
  sentAt: number;
  answeredAt: number;
  status: number;
  errno?: number;
  body: Record<string, unknown>;
  retryAfter?: string;
}

describe.skipIf(skip)('PostgreSQL restarting under load', () => {
  afterAll(async () => {
    if (typeof db !== 'string') await db.destroy();
  });

  it('the server lives, answers 503 + Retry-After while away, recovers and loses no acknowledged write', async () => {
    if (typeof db === 'string') return;
    const server = run(['start'], {
      QUIRE_HOST: '127.0.0.1',
      QUIRE_PORT: '0',
      QUIRE_STORAGE_URL: db.url(),
      QUIRE_STORAGE_AUTO_MIGRATE: 'true',
      QUIRE_USERID_HMAC_SECRET: 'faults-secret',
      QUIRE_LOG_LEVEL: 'fatal', // a 503 logs its cause: thousands of lines during an outage
    });
    const url = new URL(await server.listening);
    const http = new Pool(url.origin, {
      connections: CONCURRENCY,
      headersTimeout: ANSWER_BOUND_MS,
      bodyTimeout: ANSWER_BOUND_MS,
    });
    const alive = () => server.child.exitCode === null && server.child.signalCode === null;

    const request = async (method: 'GET' | 'PUT', path: string, body?: unknown): Promise<Answer> => {
      const sentAt = Date.now();
      const res = await http.request({
        method,
        path,
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.body.text();
      const parsed = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
      const retryAfter = res.headers['retry-after'];
      return {
        sentAt,
        answeredAt: Date.now(),
        status: res.statusCode,
        body: parsed,
        ...(typeof parsed.errno === 'number' ? { errno: parsed.errno } : {}),
        ...(typeof retryAfter === 'string' ? { retryAfter } : {}),
      };
    };

    expect((await request('PUT', '/v1/buckets/faults')).status).toBe(201);
    expect((await request('PUT', COLLECTION)).status).toBe(201);

    // The load: writes of new records, and reads of acknowledged ones, until told to stop.
    const answers: Answer[] = [];
    const failures: string[] = []; // no answer within the bound, a broken connection…
    const acknowledged = new Map<string, number>();
    const acknowledgedIds: string[] = [];
    let sequence = 0;
    let loading = true;
    const worker = async () => {
      while (loading) {
        const n = sequence++;
        const readBack = n % 3 === 2 && acknowledgedIds.length > 0;
        try {
          let answer: Answer;
          if (readBack) {
            answer = await request('GET', `${COLLECTION}/records/${acknowledgedIds[n % acknowledgedIds.length]!}`);
          } else {
            const id = `r${n}`;
            answer = await request('PUT', `${COLLECTION}/records/${id}`, { data: { n } });
            if (answer.status === 201) {
              acknowledged.set(id, n);
              acknowledgedIds.push(id);
            }
          }
          answers.push(answer);
          if (answer.status === 503) await sleep(50); // a polite client; also spares the shared CPU
        } catch (error) {
          failures.push(`${readBack ? 'GET' : 'PUT'} #${n}: ${(error as Error).message}`);
          await sleep(10);
        }
      }
    };
    const workers = Array.from({ length: CONCURRENCY }, worker);

    /** Waits for the first write acknowledged after `since`; returns how long after `since` it came. */
    const recovery = async (since: number): Promise<number> => {
      const deadline = since + RECOVERY_BOUND_MS;
      for (;;) {
        const first = answers.find((answer) => answer.sentAt >= since && answer.status === 201);
        if (first) return first.answeredAt - since;
        if (!alive()) throw new Error(`the server died:\n${server.output().slice(-4_000)}`);
        if (Date.now() > deadline)
          throw new Error(`no write acknowledged within ${RECOVERY_BOUND_MS} ms of PostgreSQL being back`);
        await sleep(50);
      }
    };

    /**
     * The faults, one after the other, each followed by steady load. `from`…`back`: while
     * pg_ctl works; then the server has until `back` + SETTLE_MS to serve everything again.
     */
    const faults: Array<{ what: string; from: number; back: number; writesAgainMs: number }> = [];
    const fault = async (what: string, act: () => Promise<void>) => {
      const from = Date.now();
      await act();
      const back = Date.now();
      faults.push({ what, from, back, writesAgainMs: await recovery(back) });
      await sleep(SETTLE_MS + STEADY_MS);
    };
    let outageFrom = 0;
    let outageTo = 0;
    try {
      await sleep(STEADY_MS);
      await fault('restart -m fast', () => db.restart('fast'));
      await fault('restart -m immediate (a crash)', () => db.restart('immediate'));
      await fault(`stop -m fast, ${OUTAGE_MS} ms away, start`, async () => {
        await db.stop('fast');
        outageFrom = Date.now();
        await sleep(OUTAGE_MS);
        outageTo = Date.now();
        await db.start();
      });
    } finally {
      loading = false;
      await Promise.all(workers);
    }

    // The LISTEN connection of the shared cache came back by itself (its last statement is the LISTEN).
    const admin = new pg.Client({ connectionString: db.url() });
    admin.on('error', () => {}); // its queries fail instead
    await admin.connect();
    let listening = 0;
    for (const deadline = Date.now() + RECOVERY_BOUND_MS; listening === 0 && Date.now() < deadline; await sleep(100)) {
      const { rows } = await admin.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = $1',
        [`LISTEN "${NOTIFY_CHANNEL}"`],
      );
      listening = rows[0]!.n;
    }
    await admin.end();

    // Every acknowledged write is there.
    const ids = [...acknowledged];
    const lost: string[] = [];
    for (let i = 0; i < ids.length; i += CONCURRENCY) {
      await Promise.all(
        ids.slice(i, i + CONCURRENCY).map(async ([id, n]) => {
          const answer = await request('GET', `${COLLECTION}/records/${id}`);
          if (answer.status !== 200 || (answer.body.data as { n?: number } | undefined)?.n !== n)
            lost.push(`${id}: ${answer.status}`);
        }),
      );
    }
    await http.close();

    const byStatus = new Map<number, number>();
    for (const { status } of answers) byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    const unavailable = answers.filter((answer) => answer.status === 503);
    const malformed = unavailable.filter(
      (answer) =>
        answer.errno !== 201 ||
        answer.body.code !== 503 ||
        typeof answer.body.error !== 'string' ||
        typeof answer.body.message !== 'string' ||
        !/^\d+$/.test(answer.retryAfter ?? ''),
    );
    const unexpected = answers.filter(
      (answer) => answer.status !== 200 && answer.status !== 201 && answer.status !== 503,
    );
    // Sent once PostgreSQL was stopped and answered before it was started: nothing but 503.
    const duringOutage = answers.filter((answer) => answer.sentAt >= outageFrom && answer.answeredAt <= outageTo);
    // Once recovered, no more 503: a 503 must have been in flight at some time of a fault's
    // window [from, back + SETTLE_MS] (a request sent just before pg_ctl may meet the restart).
    const settled = unavailable.filter(
      (answer) => !faults.some(({ from, back }) => answer.answeredAt >= from && answer.sentAt <= back + SETTLE_MS),
    );
    const slowest = Math.max(...answers.map((answer) => answer.answeredAt - answer.sentAt));
    const restarts = faults
      .map(({ what, writesAgainMs }) => `${what}: writes again ${writesAgainMs} ms after it was back`)
      .join('; ');
    const outage503 = duringOutage.filter((a) => a.status === 503).length;

    console.log(
      [
        `${FILE}: ${sequence} requests sent, ${answers.length} answered (${[...byStatus]
          .sort(([a], [b]) => a - b)
          .map(([status, count]) => `${status}×${count}`)
          .join(', ')}), ${failures.length} unanswered`,
        `  restarts survived: ${faults.length} (${restarts})`,
        `  during the ${OUTAGE_MS} ms outage: ${duringOutage.length} answers, ` +
          `${outage503} of them 503 with Retry-After; slowest answer overall ${slowest} ms`,
        `  acknowledged writes: ${acknowledged.size}, lost: ${lost.length}; ` +
          `cache's LISTEN connection back: ${listening === 1}; server alive: ${alive()}`,
      ].join('\n'),
    );

    expect(alive(), server.output()).toBe(true);
    expect(failures.slice(0, 5)).toEqual([]);
    expect(unexpected.slice(0, 5).map(({ status, body }) => ({ status, body }))).toEqual([]);
    expect(malformed.slice(0, 5).map(({ status, body, retryAfter }) => ({ status, body, retryAfter }))).toEqual([]);
    expect(
      settled.slice(0, 5).map(({ sentAt, body }) => ({ sentAt, body })),
      'a 503 once the server had recovered',
    ).toEqual([]);
    expect(duringOutage.length).toBeGreaterThan(0);
    expect(duringOutage.filter((answer) => answer.status !== 503)).toEqual([]);
    expect(slowest).toBeLessThan(ANSWER_BOUND_MS);
    expect(listening).toBe(1);
    expect(acknowledged.size).toBeGreaterThan(0);
    expect(lost).toEqual([]);

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 90_000);
});
