import type { FastifyReply, FastifyRequest } from 'fastify';
import { nextPageUrl } from '../engine/pagination.js';
import { baseUrl } from './base-url.js';
import type { HttpSettings } from './settings.js';
import { splitUrl } from './url.js';

/**
 * Sets `Next-Page` on the answer of a view that pages in memory (`/permissions`, the change
 * monitor): the request's own URL and parameters, then `_limit` and the next page's token.
 */
export function setNextPage(
  reply: FastifyReply,
  request: FastifyRequest,
  settings: HttpSettings,
  page: { params: ReadonlyArray<readonly [string, string]>; limit: number; token: string },
): void {
  const url = nextPageUrl(
    baseUrl(settings, request),
    splitUrl(request.raw.url).path,
    page.params,
    page.limit,
    page.token,
  );
  reply.header('Next-Page', url);
}
