/** Helpers shared by the HTTP benchmarks (bench/http.ts, bench/throughput.ts). */
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import autocannon from 'autocannon';
import pg from 'pg';
import { loadSettings, type Settings } from '../src/config.js';
import { askChild } from './child-server.js';

/** Basic auth of the user every benchmark writes and reads as. */
export const AUTH = `Basic ${Buffer.from('bench:bench').toString('base64')}`;

/** The settings of a benchmarked Quire server: defaults, no logging. */
export function benchSettings(overrides: Partial<Settings> = {}) {
  return loadSettings({
    env: {},
    overrides: { userid_hmac_secret: 'bench-secret', log_level: 'silent', ...overrides },
  });
}

/**
 * The id of record number i (1-based): a UUID-shaped string, like the ids Quire generates.
 * bench/http.ts computes the same in SQL.
 */
export function recordId(i: number): string {
  const hex = createHash('md5').update(`bench-${i}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function formatNumber(value: number, digits = 0): string {
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export interface LoadResult {
  /** Answers with the expected status. */
  count: number;
  requestsPerSecond: number;
  /** Latency percentiles, in ms (autocannon's resolution: whole milliseconds). */
  p50: number;
  p99: number;
}

/** Runs autocannon (authenticated as the bench user) and fails unless every answer has the expected status. */
export async function load(name: string, options: autocannon.Options, expected: number): Promise<LoadResult> {
  const result = await autocannon({ ...options, headers: { authorization: AUTH, ...options.headers } });
  const counts = Object.entries(result.statusCodeStats ?? {}).map(([code, stat]) => [code, stat.count ?? 0] as const);
  const good = counts.find(([code]) => Number(code) === expected)?.[1] ?? 0;
  const bad = counts.filter(([code]) => Number(code) !== expected);
  if (bad.length > 0 || result.errors > 0 || good === 0) {
    throw new Error(
      `${name}: expected only ${expected}, got ${JSON.stringify(Object.fromEntries(counts))}, ` +
        `${result.errors} errors (timeouts included)`,
    );
  }
  return { count: good, requestsPerSecond: good / result.duration, p50: result.latency.p50, p99: result.latency.p99 };
}

export const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;

/** What a server child answers to 'cpu': its own CPU time so far (see `childCpuMs`). */
export const cpuReply = { cpu: () => ({ cpuMs: cpuMs(process.cpuUsage()) }) };

/** The CPU time the server child has used so far, in ms (it must serve `cpuReply`). */
export async function childCpuMs(child: ChildProcess): Promise<number> {
  return (await askChild<{ cpuMs: number }>(child, 'cpu')).cpuMs;
}

/** CPU time of every PostgreSQL process on this machine, in ms (Linux /proc; 0 elsewhere). */
export async function postgresCpuMs(): Promise<number> {
  let total = 0;
  const ticks = 100; // USER_HZ on Linux
  for (const pid of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const close = stat.lastIndexOf(')');
    if (!stat.slice(stat.indexOf('(') + 1, close).startsWith('postgres')) continue;
    const fields = stat.slice(close + 2).split(' ');
    // utime + stime, and cutime + cstime: the postmaster's reaped children, so that a backend
    // that exits during a run (idle connection closed) still counts.
    total += ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / ticks;
  }
  return total;
}

/** Why PostgreSQL at `url` cannot be used, or null when it answers. */
export async function postgresProblem(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {}); // PostgreSQL ended the session: the next query fails, no unhandled 'error' event
  try {
    await client.connect();
  } catch (error) {
    return `PostgreSQL at ${url} is unreachable: ${(error as Error).message}`;
  }
  await client.end();
  return null;
}

/** Runs one statement on a connection of its own (creating and dropping the benches' databases and schemas). */
export async function runSql(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // PostgreSQL ended the session: the query fails, no unhandled 'error' event
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * CPU time so far of each PostgreSQL backend whose `application_name` is `name` (one server's
 * connections, not the other postgres processes of the machine), in ms, with the last statement
 * it ran, asked through `client`. Linux /proc; a backend that exited is no longer listed.
 */
export async function backendsCpuMs(
  client: pg.Client,
  name: string,
): Promise<Map<number, { ms: number; query: string }>> {
  const { rows } = await client.query<{ pid: number; query: string }>(
    'SELECT pid, query FROM pg_stat_activity WHERE application_name = $1',
    [name],
  );
  const backends = new Map<number, { ms: number; query: string }>();
  for (const { pid, query } of rows) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    if (Number.isFinite(ms)) backends.set(pid, { ms, query });
  }
  return backends;
}
