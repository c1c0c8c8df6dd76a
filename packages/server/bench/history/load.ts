/**
 * bench/history.ts's load: a timed run of one workload against one server (autocannon, or an
 * open-loop paced load), with the CPU and WAL it cost per request.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import type pg from 'pg';
import { childCpuMs, postgresCpuMs } from '../support.js';

export const AUTH = `Basic ${Buffer.from('bench:bench').toString('base64')}`;

/** Where PostgreSQL's write-ahead log ends now (null on the embedded store). */
async function walPosition(wal: pg.Client | null): Promise<string | null> {
  return wal ? (await wal.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn : null;
}

async function walBytesSince(wal: pg.Client | null, from: string | null): Promise<number> {
  if (!wal || from === null) return 0;
  return Number(
    (await wal.query<{ bytes: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS bytes', [from])).rows[0]!
      .bytes,
  );
}

export interface Measured extends Result {
  serverCpuMs: number;
  postgresCpuMs: number;
  /** WAL written per request: what the commits have to flush to disk. */
  walBytes: number;
}

/**
 * One run, with the CPU the server process and PostgreSQL spent per request, and the WAL
 * written: unlike throughput, these do not depend on what else the machine is doing.
 */
export async function measuredRun(
  child: ChildProcess,
  wal: pg.Client | null,
  ...args: Parameters<typeof run>
): Promise<Measured> {
  const [serverBefore, postgresBefore, walBefore] = [
    await childCpuMs(child),
    await postgresCpuMs(),
    await walPosition(wal),
  ];
  const result = await run(...args);
  const [serverAfter, postgresAfter, walBytes] = [
    await childCpuMs(child),
    await postgresCpuMs(),
    await walBytesSince(wal, walBefore),
  ];
  const requests = Math.max(1, result.rps * args[1]);
  return {
    ...result,
    serverCpuMs: (serverAfter - serverBefore) / requests,
    postgresCpuMs: (postgresAfter - postgresBefore) / requests,
    walBytes: walBytes / requests,
  };
}

export interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

export type RequestSpec = () => { method: string; path: string; body: string };

export async function run(
  port: number,
  duration: number,
  connections: number,
  rate: number | undefined,
  request: RequestSpec,
): Promise<Result> {
  if (rate) return pacedRun(port, duration, rate, request);
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    duration,
    connections,
    headers: { authorization: AUTH, 'content-type': 'application/json' },
    requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, ...request() }) }],
  } as never);
  const errors = result.errors + result.non2xx;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors };
}

/**
 * A fixed offered load, open loop: request i leaves at start + i/rate whether or not the
 * earlier ones were answered (a slower server faces a growing queue, as with real users),
 * each on a free keep-alive connection. autocannon's `overallRate` instead sends each
 * second's quota in a burst at the top of the second, which measures queueing in the burst.
 * Latency runs from the request's departure to the end of its response.
 */
async function pacedRun(port: number, duration: number, rate: number, request: RequestSpec): Promise<Result> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
  const latencies: number[] = [];
  let errors = 0;
  const send = (spec: ReturnType<RequestSpec>) =>
    new Promise<void>((resolve) => {
      const sent = performance.now();
      const outgoing = http.request(
        {
          host: '127.0.0.1',
          port,
          agent,
          method: spec.method,
          path: spec.path,
          headers: { authorization: AUTH, 'content-type': 'application/json' },
        },
        (response) => {
          response.resume();
          response.on('end', () => {
            if (response.statusCode! >= 400) errors++;
            else latencies.push(performance.now() - sent);
            resolve();
          });
        },
      );
      outgoing.on('error', () => {
        errors++;
        resolve();
      });
      outgoing.end(spec.body);
    });
  const pending: Array<Promise<void>> = [];
  const start = performance.now();
  const total = Math.round(rate * duration);
  for (let i = 0; i < total; i++) {
    const wait = start + (i * 1000) / rate - performance.now();
    if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait));
    pending.push(send(request()));
  }
  await Promise.all(pending);
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { rps: latencies.length / duration, p50: at(0.5), p99: at(0.99), errors };
}
