/** The throughput bench's servers, workloads, fixed data and result types (bench/throughput.ts). */
import type { LoadResult } from '../support.js';
import { formatNumber, recordId } from '../support.js';

export const SERVERS = [
  'ceiling',
  'postgresql',
  'embedded',
  'pglite',
  'observed',
  'pooled',
  'pgbouncer',
  'polled',
] as const;
/** Servers on a database of their own (a schema cannot be chosen through a pooler). */
export const ON_A_DATABASE = new Set<ServerName>(['pooled', 'pgbouncer', 'polled']);
/** Run unless `--only` says otherwise; `pglite` (the embedded store before SQLite) only on demand. */
export const DEFAULT_SERVERS = 'ceiling,postgresql,embedded';
export type ServerName = (typeof SERVERS)[number];
export const WORKLOAD_KEYS = ['get', 'page', 'poll', 'post', 'batch'] as const;
export type WorkloadKey = (typeof WORKLOAD_KEYS)[number];
/**
 * Issue 31's targets, as shares of the ceiling's throughput: PostgreSQL at least this, the
 * embedded store at least the PostgreSQL figure. Printed with the table, each met or not.
 */
export const TARGETS: Record<WorkloadKey, number> = { get: 0.25, page: 0.25, poll: 0.4, post: 0.1, batch: 0.05 };

/** What the child needs to open its server. */
export interface ChildConfig {
  server: ServerName;
  url: string;
  /** Where the pooled servers LISTEN (their database, straight to PostgreSQL); none: they poll. */
  listenUrl?: string;
  schema: string;
  dataDir: string;
  /** Server processes (above 1: a cluster, PostgreSQL only). */
  workers: number;
}

export const RECORDS = 1_000;
export const PAGE_SIZE = 100;
export const BATCH_SIZE = 25;
export const WARM_UP_SECONDS = 1;
export const COLLECTIONS = ['items', 'writes', 'batches'];
export const BUCKET_PATH = '/v1/buckets/bench';
export const ITEMS_PATH = `${BUCKET_PATH}/collections/items/records`;
export const WRITES_PATH = `${BUCKET_PATH}/collections/writes/records`;
/** Sub-request paths of /batch have no `/v1` prefix. */
export const BATCHES_SUBPATH = '/buckets/bench/collections/batches/records';
export const JSON_HEADERS = { 'content-type': 'application/json' };
/** Precomputed, so that the load generator does not hash an id per request. */
export const RECORD_IDS = Array.from({ length: RECORDS }, (_, i) => recordId(i + 1));

export function recordData(i: number) {
  return { title: `Record ${i}`, n: i % 100, done: i % 2 === 0, tags: ['t1', 't2'], body: 'lorem ipsum '.repeat(8) };
}

export const WORKLOAD_NAMES: Record<WorkloadKey, string> = {
  get: 'GET one',
  page: `page of ${PAGE_SIZE}`,
  poll: '304 poll',
  post: 'POST one',
  batch: `batch of ${BATCH_SIZE}`,
};

export interface Options {
  connections: number;
  duration: number;
  url: string;
  keys: WorkloadKey[];
  /** Server processes of the PostgreSQL server. */
  workers: number;
  /** Where the Quire children write CPU profiles, if profiling. */
  profileDir: string | null;
}

export interface Measure extends LoadResult {
  recordsPerSecond?: number;
  /** CPU time per request of the server process, and of every PostgreSQL process (ms). */
  serverCpuMs?: number;
  postgresCpuMs?: number;
}

/** A ratio as a percentage, with a decimal below 10% (Quire's writes are a small fraction of the ceiling). */
export function percent(part: number, whole: number): string {
  const value = (100 * part) / whole;
  return `${formatNumber(value, value < 10 ? 1 : 0)}%`;
}
