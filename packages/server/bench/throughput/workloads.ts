/** The throughput bench's five workloads, the set-up of a Quire server, and single checked requests. */
import type autocannon from 'autocannon';
import { AUTH } from '../support.js';
import {
  BATCH_SIZE,
  BATCHES_SUBPATH,
  BUCKET_PATH,
  COLLECTIONS,
  ITEMS_PATH,
  JSON_HEADERS,
  PAGE_SIZE,
  RECORD_IDS,
  RECORDS,
  recordData,
  WRITES_PATH,
  type WorkloadKey,
} from './config.js';

export interface Workload {
  key: WorkloadKey;
  method: 'GET' | 'POST';
  /** A function for a different path per request. */
  path: string | (() => string);
  headers?: Record<string, string>;
  body?: string;
  expected: number;
  /** Records written per request, for records/s. */
  recordsPerRequest?: number;
  /** Checks the body of the single answer that precedes the runs. */
  check?: (body: string) => void;
}

/** The workloads; `etag` is the current ETag of `items` (quoted). */
export function workloads(etag: string): Workload[] {
  const batch = {
    defaults: { method: 'POST', path: BATCHES_SUBPATH },
    requests: Array.from({ length: BATCH_SIZE }, (_, i) => ({ body: { data: { title: 'x', n: i } } })),
  };
  return [
    {
      key: 'get',
      method: 'GET',
      path: () => `${ITEMS_PATH}/${RECORD_IDS[Math.floor(Math.random() * RECORDS)]}`,
      expected: 200,
    },
    {
      key: 'page',
      method: 'GET',
      path: `${ITEMS_PATH}?_limit=${PAGE_SIZE}`,
      expected: 200,
      check: (body) => {
        const count = (JSON.parse(body) as { data: unknown[] }).data.length;
        if (count !== PAGE_SIZE) throw new Error(`page of ${PAGE_SIZE}: got ${count} records`);
      },
    },
    {
      key: 'poll',
      method: 'GET',
      path: `${ITEMS_PATH}?_since=${etag.replaceAll('"', '')}`,
      headers: { 'if-none-match': etag },
      expected: 304,
    },
    {
      key: 'post',
      method: 'POST',
      path: WRITES_PATH,
      headers: JSON_HEADERS,
      body: JSON.stringify({ data: { title: 'x', n: 1 } }),
      expected: 201,
    },
    {
      key: 'batch',
      method: 'POST',
      path: '/v1/batch',
      headers: JSON_HEADERS,
      body: JSON.stringify(batch),
      expected: 200,
      recordsPerRequest: BATCH_SIZE,
      check: (body) => expectSubStatuses(`batch of ${BATCH_SIZE}`, body, BATCH_SIZE, 201),
    },
  ];
}

/** Fails unless a /batch answer holds `count` sub-responses, all with `status`. */
function expectSubStatuses(name: string, body: string, count: number, status: number): void {
  const { responses } = JSON.parse(body) as { responses: Array<{ status: number }> };
  const statuses = responses.map((response) => response.status);
  if (statuses.length !== count || statuses.some((s) => s !== status)) {
    throw new Error(`${name}: expected ${count} sub-responses ${status}, got ${JSON.stringify(statuses)}`);
  }
}

/** One request; fails unless it has the expected status; returns the body. */
export async function send(
  origin: string,
  method: string,
  path: string,
  expected: number,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ body: string; headers: Headers }> {
  const response = await fetch(`${origin}${path}`, { method, headers: { authorization: AUTH, ...headers }, body });
  const text = await response.text();
  if (response.status !== expected)
    throw new Error(`${method} ${path}: expected ${expected}, got ${response.status} ${text.slice(0, 300)}`);
  return { body: text, headers: response.headers };
}

/** The bucket, the three collections, and the records of `items`, through the API. */
export async function setUp(origin: string): Promise<void> {
  const shared = { permissions: { read: ['system.Authenticated'], write: ['system.Authenticated'] } };
  await send(origin, 'PUT', BUCKET_PATH, 201, JSON_HEADERS, JSON.stringify(shared));
  for (const collection of COLLECTIONS)
    await send(origin, 'PUT', `${BUCKET_PATH}/collections/${collection}`, 201, JSON_HEADERS, '{}');
  for (let from = 0; from < RECORDS; from += BATCH_SIZE) {
    const requests = RECORD_IDS.slice(from, from + BATCH_SIZE).map((id, i) => ({
      method: 'PUT',
      path: `${ITEMS_PATH.slice('/v1'.length)}/${id}`,
      body: { data: recordData(from + i + 1) },
    }));
    const { body } = await send(origin, 'POST', '/v1/batch', 200, JSON_HEADERS, JSON.stringify({ requests }));
    expectSubStatuses('set-up', body, requests.length, 201);
  }
}

/**
 * The workload as autocannon runs it: each request from the next of `CLIENTS` users in turn, as
 * many devices would send them (one user's requests past its fair share would wait their turn:
 * max_requests_in_progress_per_identity, storage_pool_max_share).
 */
export function cannonOptions(
  origin: string,
  workload: Workload,
  connections: number,
  duration: number,
): autocannon.Options {
  const { method, headers, body, path } = workload;
  let sent = 0;
  const setupRequest = (request: autocannon.Request) => ({
    ...request,
    path: typeof path === 'string' ? path : path(),
    headers: { ...request.headers, authorization: CLIENT_AUTH[sent++ % CLIENTS]! },
  });
  return { url: origin, connections, duration, method, headers, body, requests: [{ setupRequest }] };
}

/** Users the workloads' requests come from, in turn (the bucket lets every authenticated user read and write). */
const CLIENTS = 16;
const CLIENT_AUTH = Array.from(
  { length: CLIENTS },
  (_, i) => `Basic ${Buffer.from(`client${i}:bench`).toString('base64')}`,
);
