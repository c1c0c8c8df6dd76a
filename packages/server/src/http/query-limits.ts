/**
 * Bounds on a listing's query string (settings `max_query_sort_fields`, `max_query_filters`,
 * `max_query_like_length`), for every endpoint at once (records, history, permissions,
 * accounts…, the change monitor and its stream, batch sub-requests).
 * Each sort field or filter is a condition of the statement, and a dotted field with number
 * segments is up to eight JSON paths: the embedded store runs statements synchronously, and
 * 800 sort fields took 3.4 s there, during which no other request was served.
 */
import type { FastifyInstance } from 'fastify';
import { invalidParameter } from '../errors.js';
import { likePatternTooLong } from '../engine/querystring.js';
import { splitUrl } from './url.js';

export function registerQueryLimits(app: FastifyInstance): void {
  const { settings } = app.services;
  app.addHook('preHandler', async (request) => {
    const { query } = splitUrl(request.raw.url);
    if (query === '') return;
    let filters = 0;
    for (const [name, value] of new URLSearchParams(query)) {
      if (name === '_sort') {
        if (value.split(',').length > settings.max_query_sort_fields) {
          throw invalidParameter(
            'querystring',
            '_sort',
            `_sort has more than max_query_sort_fields (${settings.max_query_sort_fields}) fields`,
          );
        }
      } else if (!name.startsWith('_')) {
        filters++;
        const tooLong = likePatternTooLong(name, value, settings.max_query_like_length);
        if (tooLong) throw tooLong;
      }
    }
    if (filters > settings.max_query_filters) {
      throw invalidParameter(
        'querystring',
        null,
        `more than max_query_filters (${settings.max_query_filters}) filters`,
      );
    }
  });
}
