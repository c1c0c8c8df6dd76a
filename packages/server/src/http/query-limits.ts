/**
 * Every request's URL input read and bounded once, before its handler (engine/request-input.ts:
 * path length and segments, query parameters, filters, lists, field paths, `_fields`, `_sort`,
 * `like_`), for every route at once — records, history, accounts, permissions, the change
 * monitor and its stream, and a batch's sub-requests dispatched through the router. Handlers
 * read the parameters from `request.input`.
 */
import type { FastifyInstance } from 'fastify';
import { readInput } from '../engine/request-input.js';
import { splitUrl } from './url.js';

export function registerQueryLimits(app: FastifyInstance): void {
  const { settings } = app.services;
  app.decorateRequest('input', null as never);
  // A callback hook (a sync throw is an error all the same): an async one costs a promise per request.
  app.addHook('preHandler', (request, _reply, done) => {
    const { path, query } = splitUrl(request.raw.url);
    request.input = readInput(path, query, settings);
    done();
  });
}
