/**
 * Not-found handling (protocol-reference §0): paths without a version prefix → 307 to `/v1...`;
 * another version → 404 errno 116; a trailing slash on a missing route → 307 without it;
 * everything else → 404 errno 111.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HttpSettings } from './settings.js';
import { ApiError, ERRNO, unknownUrl } from '../errors.js';
import { splitUrl } from './url.js';

function redirect(reply: FastifyReply, location: string, ttl: number) {
  if (ttl >= 0) {
    reply.header('Cache-Control', `max-age=${ttl}`);
    reply.header('Expires', new Date(Date.now() + ttl * 1000).toUTCString());
  }
  return reply.code(307).header('Location', location).send();
}

export type NotFoundHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export function createNotFoundHandler(
  settings: HttpSettings,
  baseUrl: (request: FastifyRequest) => string,
): NotFoundHandler {
  return async (request, reply) => {
    const { path, query: rawQuery } = splitUrl(request.raw.url);
    const query = rawQuery ? `?${rawQuery}` : '';
    const base = baseUrl(request);

    if (!/^\/v\d+(\/|$)/.test(path)) {
      if (settings.version_prefix_redirect_enabled) {
        return redirect(
          reply,
          `${base}/v1${path === '/' ? '/' : path}${query}`,
          settings.version_prefix_redirect_ttl_seconds,
        );
      }
      throw unknownUrl();
    }
    if (!/^\/v1(\/|$)/.test(path)) {
      throw new ApiError(404, ERRNO.VERSION_NOT_AVAILABLE, {
        message: 'The requested API version is not available on this server.',
      });
    }
    if (path === '/v1') return redirect(reply, `${base}/v1/${query}`, settings.trailing_slash_redirect_ttl_seconds);
    if (settings.trailing_slash_redirect_enabled && path.length > 4 && path.endsWith('/')) {
      return redirect(
        reply,
        `${base}${path.replace(/\/+$/, '')}${query}`,
        settings.trailing_slash_redirect_ttl_seconds,
      );
    }
    throw unknownUrl();
  };
}
