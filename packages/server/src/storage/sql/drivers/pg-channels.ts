/**
 * A PostgreSQL driver's notification channels between processes (`SqlDriver.listen`/`notify`):
 * LISTEN on a connection of its own per channel, or polling where LISTEN is impossible (through a
 * transaction pooler without `listenUrl`, or refused), and the upkeep of the notifications log
 * that pollers read (pg-notifications.ts).
 */
import type pg from 'pg';
import {
  listenConnection,
  NOTIFICATION_RETENTION_MS,
  NotificationPoller,
  notifyStatement,
  PollersWatch,
  pruneNotifications,
  type RunStatement,
} from './pg-notifications.js';
import type { ChannelListener, DeferredStatement } from './types.js';

export interface PgChannelsOptions {
  /** Runs a statement on the driver's pool. */
  run: RunStatement;
  /** The connection settings of a LISTEN connection to `url`. */
  configOf: (url: string) => pg.ClientConfig;
  url: string;
  listenUrl: string | undefined;
  pooled: boolean;
  pollIntervalMs: number;
  reconnectMaxDelayMs: number;
}

export class PgChannels {
  readonly #options: PgChannelsOptions;
  readonly #listeners: Array<() => Promise<void>> = [];
  /** Whether some process polls: then notifications are logged for it (pg-notifications.ts). */
  readonly #pollers: PollersWatch;
  #poller: NotificationPoller | null = null;
  #pruning: NodeJS.Timeout | null = null;

  constructor(options: PgChannelsOptions) {
    this.#options = options;
    this.#pollers = new PollersWatch(options.run);
  }

  listen(channel: string, listener: ChannelListener): void {
    this.#startPruning();
    const { pooled, listenUrl, url, configOf, reconnectMaxDelayMs } = this.#options;
    if (pooled && listenUrl === undefined) {
      this.#poll(channel, listener);
      return;
    }
    this.#listeners.push(
      listenConnection({
        config: configOf(listenUrl ?? url),
        channel,
        listener,
        maxRetryDelayMs: reconnectMaxDelayMs,
        refused: () => this.#poll(channel, listener),
      }),
    );
  }

  notify(channel: string, payload: string): DeferredStatement {
    return notifyStatement(channel, payload, this.#pollers.polled);
  }

  async close(): Promise<void> {
    if (this.#pruning) clearInterval(this.#pruning);
    this.#pollers.close();
    await Promise.all([...this.#listeners.map((stop) => stop()), this.#poller?.close()]);
  }

  /** Where LISTEN is impossible (a pooler and no `listenUrl`, or LISTEN refused): polled. */
  #poll(channel: string, listener: ChannelListener): void {
    this.#poller ??= new NotificationPoller(this.#options.run, {
      intervalMs: this.#options.pollIntervalMs,
      maxRetryDelayMs: this.#options.reconnectMaxDelayMs,
    });
    this.#poller.listen(channel, listener);
  }

  /** Old notifications leave the table (every process that listens does its share). */
  #startPruning(): void {
    if (this.#pruning) return;
    const every = NOTIFICATION_RETENTION_MS / 4;
    this.#pruning = setInterval(
      () => void pruneNotifications(this.#options.run).catch(() => {}),
      every * (0.75 + Math.random() / 2),
    );
    this.#pruning.unref();
  }
}
