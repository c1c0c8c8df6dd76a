/**
 * The hostile-input suite's frame (issue 36): one request a hostile caller sends, tried every
 * way in and measured the same way, so that each case is a few lines. Other engineers add their
 * cases with it; keep it small.
 *
 *   const target = await hostileTarget(backend, { settings: {...}, seed: async (storage) => {...} });
 *   const trial = await tryHostile(target, { method: 'GET', path: '/buckets/b/…?in_id=…' });
 *   expect(trial.http.status).toBe(400);           // the answer from the network
 *   expect(trial.batch.status).toBe(400);          // the same request as a batch's sub-request
 *   expect(trial.worstStallMs).toBeLessThan(100);  // the longest event-loop stall while they ran (confirmed)
 *   await target.close();
 *
 *   const load = await underLoad(target, request, { hostile: 12 });  // 12 at once, beside a bystander
 *   expect(load.bystander.p99Ms).toBeLessThanOrEqual(250);
 *   expect(load.bystander.failures).toBe(0);        // no 5xx, no error
 *
 * - `hostileTarget` starts a server on a backend of `describeOnBackends` (both stores), listening
 *   on 127.0.0.1, with a bucket `b` readable by everyone, collection `c`, and what `seed` writes.
 * - `tryHostile` sends the request over HTTP (anonymous unless `headers` say otherwise), then as
 *   the only sub-request of a `POST /v1/batch`, and records each answer (status, errno, message),
 *   the longest event-loop stall (helpers/event-loop.ts) and the RSS before and after.
 * - `underLoad` sends `hostile` copies of the request at once, each by HTTP or by batch in turn,
 *   while a bystander (another user) reads and writes a collection of its own, and gives the
 *   bystander's latencies and failures.
 */
import type { FastifyInstance } from 'fastify';
import { Agent, request } from 'undici';
import type { Settings } from '../../src/config.js';
import type { Storage } from '../../src/storage/types.js';
import type { Backend } from '../helpers/backends.js';
import { basicAuth } from '../helpers/embedded-server.js';
import { confirmedStalls } from '../helpers/event-loop.js';
import { listen } from './protocol.js';

export interface HostileTarget {
  app: FastifyInstance;
  /** `http://127.0.0.1:<port>` */
  base: string;
  storage: Storage;
  close(): Promise<void>;
}

export interface HostileRequest {
  method: 'GET' | 'HEAD' | 'DELETE' | 'POST' | 'PUT' | 'PATCH';
  /** Without `/v1`: `/buckets/b/collections/c/records?…`. */
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface Answer {
  status: number;
  errno?: number;
  message?: string;
  bytes: number;
}

export interface Trial {
  http: Answer;
  batch: Answer;
  worstStallMs: number;
  rssBeforeMb: number;
  rssAfterMb: number;
}

const agent = new Agent({ connections: 64, headersTimeout: 120_000, bodyTimeout: 120_000 });
const rssMb = () => Math.round(process.memoryUsage().rss / 1e6);

/** A listening server on `backend` with bucket `b` (read: everyone), collection `c`, and what `seed` adds. */
export async function hostileTarget(
  backend: Backend,
  options: { settings?: Partial<Settings>; seed?: (storage: Storage) => Promise<void> } = {},
): Promise<HostileTarget> {
  const app = await backend.serverWith(options.settings ?? {});
  const owner = basicAuth('owner');
  for (const [path, data] of [
    ['/v1/buckets/b', { permissions: { read: ['system.Everyone'] } }],
    ['/v1/buckets/b/collections/c', {}],
  ] as const) {
    const response = await app.inject({ method: 'PUT', url: path, headers: owner, payload: data as never });
    if (response.statusCode >= 300) throw new Error(`${path}: ${response.statusCode} ${response.body}`);
  }
  await options.seed?.(backend.storage);
  const base = `http://127.0.0.1:${await listen(app)}`;
  return { app, base, storage: backend.storage, close: () => app.close() };
}

async function send(target: HostileTarget, hostile: HostileRequest, viaBatch: boolean): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(viaBatch ? {} : hostile.headers) };
  const sub = { method: hostile.method, path: hostile.path, headers: hostile.headers, body: hostile.body };
  const response = await request(`${target.base}/v1${viaBatch ? '/batch' : hostile.path}`, {
    method: viaBatch ? 'POST' : hostile.method,
    headers,
    dispatcher: agent,
    ...(viaBatch
      ? { body: JSON.stringify({ requests: [sub] }) }
      : hostile.body === undefined
        ? {}
        : { body: JSON.stringify(hostile.body) }),
  });
  const text = await response.body.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // HEAD, or not JSON: the status says it.
  }
  if (viaBatch && response.statusCode === 200) {
    const entry = (parsed.responses as Array<{ status: number; body: Record<string, unknown> }>)[0]!;
    return { status: entry.status, ...errorOf(entry.body), bytes: text.length };
  }
  return { status: response.statusCode, ...errorOf(parsed), bytes: text.length };
}

function errorOf(body: unknown): Pick<Answer, 'errno' | 'message'> {
  if (body === null || typeof body !== 'object') return {};
  const { errno, message } = body as Record<string, unknown>;
  return {
    ...(typeof errno === 'number' ? { errno } : {}),
    ...(typeof message === 'string' ? { message } : {}),
  };
}

/**
 * The request over HTTP, then as a batch's sub-request: both answers, the worst stall, RSS
 * around. A stall past `confirmAboveMs` is confirmed by sending both again (`confirmedStalls`).
 */
export async function tryHostile(
  target: HostileTarget,
  hostile: HostileRequest,
  { confirmAboveMs = 50 } = {},
): Promise<Trial> {
  const rssBeforeMb = rssMb();
  const both = async () => ({ http: await send(target, hostile, false), batch: await send(target, hostile, true) });
  const { result, worstMs: worstStallMs } = await confirmedStalls(both, confirmAboveMs);
  return { ...result, worstStallMs, rssBeforeMb, rssAfterMb: rssMb() };
}

export interface Load {
  bystander: { requests: number; p99Ms: number; failures: number };
  hostile: Answer[];
}

/**
 * `hostile` copies of the request at once (by HTTP and by batch in turn) while a bystander,
 * another user, reads and writes its own collection one request after the other.
 */
export async function underLoad(
  target: HostileTarget,
  hostile: HostileRequest,
  options: { hostile?: number } = {},
): Promise<Load> {
  const bystander = basicAuth('bystander');
  const own = `${target.base}/v1/buckets/bystander`;
  await request(own, { method: 'PUT', headers: bystander, dispatcher: agent }).then((r) => r.body.text());
  await request(`${own}/collections/mine`, { method: 'PUT', headers: bystander, dispatcher: agent }).then((r) =>
    r.body.text(),
  );
  let done = false;
  const latencies: number[] = [];
  let failures = 0;
  const loop = (async () => {
    for (let index = 0; !done; index++) {
      const started = performance.now();
      const write = index % 2 === 0;
      const response = await request(`${own}/collections/mine/records${write ? `/r${index % 50}` : ''}`, {
        method: write ? 'PUT' : 'GET',
        headers: { ...bystander, 'content-type': 'application/json' },
        dispatcher: agent,
        ...(write ? { body: JSON.stringify({ data: { index } }) } : {}),
      }).catch(() => null);
      if (response) await response.body.text();
      latencies.push(performance.now() - started);
      if (!response || response.statusCode >= 500) failures++;
    }
  })();
  const answers = await Promise.all(
    Array.from({ length: options.hostile ?? 12 }, (_, index) => send(target, hostile, index % 2 === 1)),
  );
  done = true;
  await loop;
  latencies.sort((a, b) => a - b);
  const p99Ms = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0;
  return { bystander: { requests: latencies.length, p99Ms, failures }, hostile: answers };
}
