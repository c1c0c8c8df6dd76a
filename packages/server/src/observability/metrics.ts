/**
 * Prometheus metrics (prom-client), one registry per app: request counts and latencies by route
 * pattern, batch sizes, storage transaction time, `_since` polls answered 304 or 200, login
 * failures, and the process's own. Labels are bounded: a route *pattern* (`/v1/buckets/:bid`),
 * never a path, so no bucket or record id ever becomes a label value.
 *
 * Served at `/__metrics__` on the API's port, or only on `metrics_port` (so it needn't be
 * public). With several workers the primary answers on `metrics_port` for all of them
 * (workers.ts, prom-client's AggregatorRegistry).
 */
import cluster from 'node:cluster';
import { createServer, type Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ObservabilitySettings } from './settings.js';
import type { ServerSettings } from '../server-settings.js';
import { ERRNO } from '../errors.js';
import type { SessionOptions, Storage, StorageSession } from '../storage/types.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = ObservabilitySettings & ServerSettings;

export const METRICS_PATH = '/__metrics__';

/** Latency buckets (seconds): sub-millisecond reads to slow batches. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'quire_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status (batch sub-requests included).',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly requestDuration = new Histogram({
    name: 'quire_http_request_duration_seconds',
    help: 'Time from request to response, by method, route pattern and status class.',
    labelNames: ['method', 'route', 'status_class'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  readonly batchSize = new Histogram({
    name: 'quire_batch_requests',
    help: 'Sub-requests per POST /batch.',
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
    registers: [this.registry],
  });
  readonly sincePolls = new Counter({
    name: 'quire_since_polls_total',
    help: 'GETs of a list with _since, by answer: changed (200) or not_modified (304).',
    labelNames: ['answer'] as const,
    registers: [this.registry],
  });
  readonly storageDuration = new Histogram({
    name: 'quire_storage_session_duration_seconds',
    help: 'Time spent in a storage session (a transaction, a snapshot or a plain read), by kind.',
    labelNames: ['kind'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  readonly storageErrors = new Counter({
    name: 'quire_storage_session_errors_total',
    help: 'Storage sessions that failed (rolled back), by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly loginFailures = new Counter({
    name: 'quire_login_failures_total',
    help:
      'Requests whose credentials were refused (401: rejected) or not even checked after too many failures ' +
      '(429: throttled), by scheme.',
    labelNames: ['scheme', 'reason'] as const,
    registers: [this.registry],
  });

  /** Label children by method, status and route pattern (bounded: patterns are the app's routes). */
  readonly #requestChildren = new Map<string, { count: { inc(): void }; duration: { observe(value: number): void } }>();

  constructor(storage: Storage) {
    collectDefaultMetrics({ register: this.registry, prefix: 'quire_' });
    const stats = storage.stats?.bind(storage);
    if (stats) {
      // Read when scraped, not kept up to date on every checkout.
      new Gauge({
        name: 'quire_storage_pool_connections',
        help: 'Database connections of this process, by state (total, idle, waiting clients).',
        labelNames: ['state'] as const,
        registers: [this.registry],
        collect() {
          const pool = stats();
          if (!pool) return;
          this.set({ state: 'total' }, pool.total);
          this.set({ state: 'idle' }, pool.idle);
          this.set({ state: 'waiting' }, pool.waiting);
        },
      });
    }
    const lag = storage.replicaLagSeconds;
    if (lag) {
      new Gauge({
        name: 'quire_storage_replica_lag_seconds',
        aggregator: 'max', // workers: the most behind, not the sum
        help: 'A reader on a hot standby: how long WAL received from the primary has waited to be replayed (0: none).',
        registers: [this.registry],
        collect() {
          this.set(lag());
        },
      });
    }
  }

  /**
   * The storage with its sessions timed. A proxy, not a changed object: one store may serve
   * several apps (tests, embedding). Other members are the store's own, bound to it.
   */
  instrument(storage: Storage): Storage {
    const timed = new Map<PropertyKey, unknown>();
    for (const kind of ['transaction', 'snapshot', 'read'] as const) {
      const run = storage[kind].bind(storage) as Storage['read'];
      const duration = this.storageDuration.labels({ kind });
      const errors = this.storageErrors.labels({ kind });
      timed.set(kind, async <T>(fn: (session: StorageSession) => Promise<T>, options?: SessionOptions): Promise<T> => {
        const started = performance.now();
        try {
          return await run(fn, options);
        } catch (error) {
          errors.inc();
          throw error;
        } finally {
          duration.observe((performance.now() - started) / 1000);
        }
      });
    }
    return new Proxy(storage, {
      get(target, property) {
        if (timed.has(property)) return timed.get(property);
        const value: unknown = Reflect.get(target, property, target);
        if (typeof value !== 'function') return value;
        const bound = (value as (...args: unknown[]) => unknown).bind(target);
        timed.set(property, bound);
        return bound;
      },
    });
  }

  /** Counts one answered request. */
  observe(request: FastifyRequest, reply: FastifyReply): void {
    const subRequests = (request.body as { requests?: unknown } | undefined)?.requests;
    this.count({
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
      url: request.url,
      authorization: request.headers.authorization,
      batched: request.work.batch,
      batchRequests: Array.isArray(subRequests) ? subRequests.length : undefined,
    });
  }

  /** Counts one answered request (also a batch sub-request answered in-process: views/batch-direct.ts). */
  count(answer: AnsweredRequest): void {
    const { method, route, status } = answer;
    // prom-client hashes a label set on every call: each set's children are looked up once.
    const key = `${method} ${status} ${route}`;
    let children = this.#requestChildren.get(key);
    if (!children) {
      children = {
        count: this.requests.labels({ method, route, status: String(status) }),
        duration: this.requestDuration.labels({ method, route, status_class: `${Math.floor(status / 100)}xx` }),
      };
      this.#requestChildren.set(key, children);
    }
    children.count.inc();
    children.duration.observe(answer.seconds);
    if (method === 'GET' && (status === 200 || status === 304) && hasSince(answer.url)) {
      this.sincePolls.inc({ answer: status === 304 ? 'not_modified' : 'changed' });
    }
    if (route === '/v1/batch' && method === 'POST' && status === 200 && answer.batchRequests !== undefined) {
      this.batchSize.observe(answer.batchRequests);
    }
    // Credentials were sent and refused (401), or refused unread because of too many failures (429).
    const { authorization } = answer;
    if ((status === 401 || status === 429) && typeof authorization === 'string' && !answer.batched) {
      const scheme = /^(basic|bearer)\s/i.exec(authorization)?.[1]?.toLowerCase() ?? 'other';
      this.loginFailures.inc({ scheme, reason: status === 401 ? 'rejected' : 'throttled' });
    }
  }
}

/** What the metrics count of an answered request. */
export interface AnsweredRequest {
  method: string;
  /** The route pattern, never the path (bounded labels). */
  route: string;
  status: number;
  seconds: number;
  /** The path and query string as sent. */
  url: string;
  authorization: string | string[] | undefined;
  /** A batch's sub-request (its login failures are the batch's). */
  batched: boolean;
  /** A batch's number of sub-requests. */
  batchRequests?: number | undefined;
}

function hasSince(url: string): boolean {
  const query = url.indexOf('?');
  return query >= 0 && /(?:^|&)_since=/.test(url.slice(query + 1));
}

/**
 * Counts every answered request of the app and serves the registry, on the API's port or on
 * `metrics_port`. (The app's storage was wrapped by `instrument` when services were made.)
 */
export function registerMetrics(app: FastifyInstance, settings: ModuleSettings, metrics: Metrics | null): void {
  if (!metrics) return;
  app.addHook('onResponse', async (request, reply) => metrics.observe(request, reply));

  if (settings.metrics_port === null) {
    app.get(METRICS_PATH, async (_request, reply) =>
      reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
    );
  } else if (cluster.isWorker) {
    // The primary serves metrics_port and asks each worker for its registry over IPC; a
    // worker answers once an AggregatorRegistry exists in it (prom-client adds its listener then).
    AggregatorRegistry.setRegistries([metrics.registry]);
    new AggregatorRegistry();
  } else {
    let server: Server | undefined;
    app.addHook('onListen', async () => {
      server = await serveMetrics(metrics.registry, settings.host, settings.metrics_port!);
    });
    app.addHook('onClose', async () => {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    });
  }
}

/** A bare HTTP server answering the registry's metrics at `/__metrics__` (and 404 elsewhere). */
export async function serveMetrics(
  registry: { metrics(): Promise<string>; contentType: string },
  host: string,
  port: number,
): Promise<Server> {
  const server = createServer((request, response) => {
    const fail = (code: number, errno: number, error: string, message: string) =>
      response
        .writeHead(code, { 'content-type': 'application/json' })
        .end(JSON.stringify({ code, errno, error, message }));
    if (request.method !== 'GET' || request.url?.split('?')[0] !== METRICS_PATH) {
      fail(404, ERRNO.MISSING_RESOURCE, 'Not Found', `Metrics are at ${METRICS_PATH}`);
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      // E.g. a worker that did not answer the primary in time: try again.
      (error: Error) => fail(503, ERRNO.BACKEND, 'Service Unavailable', `Metrics unavailable: ${error.message}`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

/** In the primary of `workers`: answers on `metrics_port` with the sum of every worker's metrics. */
export function serveClusterMetrics(host: string, port: number): Promise<Server> {
  const aggregator = new AggregatorRegistry();
  return serveMetrics({ metrics: () => aggregator.clusterMetrics(), contentType: aggregator.contentType }, host, port);
}
