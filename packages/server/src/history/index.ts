/**
 * The history plugin (protocol-reference §13.3), on when `history_enabled`: a change log per
 * bucket, written in each change's transaction and served at `/buckets/<bid>/history`.
 */
import type { FastifyInstance } from 'fastify';
import { createHistoryListener } from './listener.js';
import { registerHistoryRoutes } from './views.js';

export function registerHistory(app: FastifyInstance): void {
  const { settings, events, capabilities } = app.services;
  if (!settings.history_enabled) return;
  events.subscribe(createHistoryListener(settings));
  capabilities.history = { description: 'Track changes on data.', url: 'https://kinto.readthedocs.io/en/latest/api/1.x/history.html' };
  registerHistoryRoutes(app);
}
