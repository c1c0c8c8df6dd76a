/**
 * The quotas plugin (protocol-reference §13.6), on when `quotas_enabled`: limits on the size and
 * number of objects per bucket and per collection (settings in settings.ts), counted in each
 * write's transaction (listener.ts); capability `quotas`, as Kinto shows it.
 */
import type { FastifyInstance } from 'fastify';
import { createQuotaListener } from './listener.js';
import { QuotaLimits } from './settings.js';

export function registerQuotas(app: FastifyInstance): void {
  const { settings, events, capabilities } = app.services;
  if (!settings.quotas_enabled) return;
  events.subscribe(createQuotaListener(new QuotaLimits(settings), { countAttachments: settings.attachment_enabled }));
  capabilities.quotas = {
    description: 'Quotas Management on buckets and collections.',
    url: 'https://kinto.readthedocs.io',
  };
}
