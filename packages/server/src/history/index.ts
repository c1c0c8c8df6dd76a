/**
 * The history plugin (protocol-reference §13.3), on when `history_enabled`: a change log per
 * bucket, enqueued in each change's transaction, drained into the history right after
 * commit, and served at `/buckets/<bid>/history`.
 */
import type { FastifyInstance } from 'fastify';
import { HistoryDrainer } from './drainer.js';
import { createHistoryListener, HISTORY_RESOURCES } from './listener.js';
import { registerResource } from '../engine/routes.js';
import { createHistoryResource } from './resource.js';

export function registerHistory(app: FastifyInstance): void {
  const { settings, events, capabilities, storage } = app.services;
  if (!settings.history_enabled) return;
  const trim =
    settings.history_auto_trim_max_count === null
      ? null
      : {
          keep: settings.history_auto_trim_max_count,
          resourceNames: HISTORY_RESOURCES,
          userIds: settings.history_auto_trim_user_ids,
        };
  const drainer = new HistoryDrainer(storage, {
    trim,
    batchSize: settings.history_drain_batch_size,
    delayMs: settings.history_drain_delay_ms,
    sweepIntervalMs: settings.history_drain_interval_seconds * 1000,
    log: () => app.log,
  });
  events.subscribe(createHistoryListener(settings, drainer));
  app.addHook('onReady', async () => drainer.start());
  capabilities.history = {
    description: 'Track changes on data.',
    url: 'https://kinto.readthedocs.io/en/latest/api/1.x/history.html',
    // As Kinto shows its trimming settings.
    ...(trim ? { auto_trim_max_count: trim.keep } : {}),
    ...(trim?.userIds.length ? { auto_trim_user_ids: trim.userIds } : {}),
  };
  registerResource(app, createHistoryResource(settings, drainer));
}
