/**
 * The Redis queue listener (Kinto's `kinto_redis.listeners`, protocol-reference §10.4): each
 * event's payload, as JSON, is pushed onto a Redis list (`LPUSH`, so workers consume in order
 * with `BRPOP`). Unlike the in-transaction listeners it never delays nor fails a response:
 * events of committed requests go to a bounded in-memory buffer, flushed in the background.
 * While Redis is unreachable the buffer is kept (oldest events dropped beyond `max_buffer`,
 * with a log line) and the flush is retried with a growing delay.
 */
import { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';
import { backoffDelay, sleep, type BackoffOptions } from '../retry.js';
import type { EventSubscriber, ResourceEvent } from '../events/types.js';
import type { ListenerConfig } from './types.js';

export interface RedisListenerOptions {
  url: string;
  listname: string;
  /** Accepted for Kinto compatibility; one pipelined connection serves every push. */
  poolSize: number;
  maxBuffer: number;
  /** Events pushed per LPUSH command. */
  chunkSize: number;
  retryMinMs: number;
  retryMaxMs: number;
}

const DEFAULTS = {
  url: 'redis://localhost:6379/0',
  listname: 'kinto.core.events',
  pool_size: 25,
  max_buffer: 10000,
  chunk_size: 500,
  retry_min_ms: 250,
  retry_max_ms: 30000,
};

export const REDIS_LISTENER_KEYS = Object.keys(DEFAULTS);

/** The listener's own keys from its configuration, defaults applied, checked. */
export function redisListenerOptions(config: ListenerConfig, fail: (why: string) => never): RedisListenerOptions {
  const own = config.options;
  const text = (key: 'url' | 'listname'): string => {
    const value = own[key] ?? DEFAULTS[key];
    if (typeof value !== 'string' || value === '') fail(`${key} must be a non-empty string`);
    return value as string;
  };
  const integer = (
    key: 'pool_size' | 'max_buffer' | 'chunk_size' | 'retry_min_ms' | 'retry_max_ms',
    min: number,
  ): number => {
    const raw = own[key] ?? DEFAULTS[key];
    const value = typeof raw === 'string' ? Number(raw) : raw;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
      fail(`${key} must be an integer of at least ${min}`);
    return value as number;
  };
  const url = text('url');
  if (!/^rediss?:\/\//.test(url)) fail('url must be a redis:// or rediss:// URL');
  return {
    url,
    listname: text('listname'),
    poolSize: integer('pool_size', 1),
    maxBuffer: integer('max_buffer', 1),
    chunkSize: integer('chunk_size', 1),
    retryMinMs: integer('retry_min_ms', 1),
    retryMaxMs: integer('retry_max_ms', 1),
  };
}

/** Redis URL without its password, for logs. */
function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'redis://?';
  }
}

export class RedisQueueListener implements EventSubscriber {
  readonly name: string;
  readonly actions: EventSubscriber['actions'];
  readonly resources: EventSubscriber['resources'];
  readonly #options: RedisListenerOptions;
  readonly #log: () => FastifyBaseLogger | undefined;
  readonly #redis: Redis;
  /** Serialised payloads waiting to be pushed, oldest first. */
  #buffer: string[] = [];
  #flushing: Promise<void> | null = null;
  /** A flush is waiting to be retried. */
  #retrying = false;
  /** Pushes failed in a row (the retry's backoff step). */
  #failures = 0;
  readonly #backoff: BackoffOptions;
  /** Cuts the wait of a retry short when the listener closes. */
  readonly #closing = new AbortController();
  #failing = false;
  #dropped = 0;
  #closed = false;

  constructor(config: ListenerConfig, options: RedisListenerOptions, log: () => FastifyBaseLogger | undefined) {
    this.name = config.name;
    this.actions = new Set(config.actions);
    this.resources = config.resources ? new Set(config.resources) : null;
    this.#options = options;
    this.#log = log;
    this.#backoff = { firstMs: options.retryMinMs, maxMs: options.retryMaxMs };
    this.#redis = new Redis(options.url, {
      // Never queue commands while disconnected: the buffer here is the (bounded) queue.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      lazyConnect: true,
      connectTimeout: 5000,
      // A push that gets no answer fails (and is retried) rather than stalling the queue.
      commandTimeout: 5000,
      retryStrategy: (attempt) => backoffDelay({ ...this.#backoff, linear: true }, attempt - 1),
    });
    // ioredis reports connection errors as events; the flush loop logs what matters.
    this.#redis.on('error', () => {});
    this.#redis.connect().catch(() => {});
  }

  /** Events waiting in memory (tests, monitoring). */
  get pending(): number {
    return this.#buffer.length;
  }

  afterCommit(events: ResourceEvent[]): void {
    if (this.#closed) return;
    for (const event of events) this.#buffer.push(JSON.stringify(event.payload));
    const excess = this.#buffer.length - this.#options.maxBuffer;
    if (excess > 0) {
      this.#buffer.splice(0, excess);
      this.#dropped += excess;
      this.#log()?.warn(
        { listener: this.name, dropped: excess, droppedTotal: this.#dropped },
        'Redis queue listener buffer full: oldest events dropped',
      );
    }
    if (!this.#retrying) this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushing) return;
    this.#flushing = this.#flush().finally(() => {
      this.#flushing = null;
      // Events may have arrived between the end of the loop and now.
      if (this.#buffer.length > 0 && !this.#retrying && !this.#closed) this.#scheduleFlush();
    });
  }

  async #flush(): Promise<void> {
    while (this.#buffer.length > 0) {
      const chunk = this.#buffer.slice(0, this.#options.chunkSize);
      try {
        await this.#redis.lpush(this.#options.listname, ...chunk);
      } catch (error) {
        if (!this.#failing) {
          this.#failing = true;
          this.#log()?.error(
            {
              listener: this.name,
              url: safeUrl(this.#options.url),
              pending: this.#buffer.length,
              err: { message: (error as Error).message },
            },
            'Redis queue listener cannot push events; retrying',
          );
        }
        if (!this.#closed) this.#retryLater();
        return;
      }
      this.#buffer.splice(0, chunk.length);
      if (this.#failing) {
        this.#failing = false;
        this.#log()?.info({ listener: this.name }, 'Redis queue listener pushes events again');
      }
      this.#failures = 0;
    }
  }

  #retryLater(): void {
    if (this.#retrying) return;
    this.#retrying = true;
    // A pending retry must not keep the process alive.
    void sleep(backoffDelay(this.#backoff, this.#failures++), { signal: this.#closing.signal, unref: true }).then(
      () => {
        if (this.#closed) return; // close() took over
        this.#retrying = false;
        this.#scheduleFlush();
      },
    );
  }

  /** Waits until every buffered event is pushed (or one push attempt failed). */
  async drain(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    if (this.#buffer.length > 0 && !this.#retrying) {
      this.#scheduleFlush();
      await this.#flushing;
    }
  }

  /** Last attempt to push what is buffered (bounded by the connect timeout), then disconnect. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort();
    this.#retrying = false;
    await this.drain().catch(() => {});
    if (this.#buffer.length > 0) {
      this.#log()?.error(
        { listener: this.name, lost: this.#buffer.length },
        'Redis queue listener closed with events not pushed',
      );
    }
    this.#redis.disconnect();
  }
}
