/**
 * Headers every response carries (protocol-reference §12): CORS, exposed headers, security
 * headers, Backoff, end-of-service Alert; plus the readonly and end-of-service refusals.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HttpSettings } from './settings.js';
import type { ServerSettings } from '../server-settings.js';
import { ApiError, ERRNO, methodNotAllowed } from '../errors.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = HttpSettings & ServerSettings;

const BASE_EXPOSED = ['Backoff', 'Retry-After', 'Alert', 'Content-Length', 'Content-Type'];
const READ_EXPOSED = ['Next-Page', 'Last-Modified', 'ETag', 'Cache-Control', 'Expires', 'Pragma'];
const COUNT_EXPOSED = ['Total-Objects', 'Total-Records'];

function globToRegExp(pattern: string): RegExp {
  const escaped = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`);
}

function allowedOrigin(settings: ModuleSettings, origin: string | undefined): string | null {
  if (!origin) return null;
  if (settings.cors_origins.includes('*')) return '*';
  return settings.cors_origins.some((pattern) => globToRegExp(pattern).test(origin)) ? origin : null;
}

/** soft-eol before the `eos` date, hard-eol after it. */
function endOfService(settings: ModuleSettings): { code: 'soft-eol' | 'hard-eol'; header: string } | null {
  if (!settings.eos) return null;
  const code = Date.now() >= Date.parse(settings.eos) ? 'hard-eol' : 'soft-eol';
  const header = JSON.stringify({
    code,
    message: settings.eos_message,
    url: settings.eos_url ?? settings.project_docs,
  });
  return { code, header };
}

export function registerHeaders(app: FastifyInstance, settings: ModuleSettings): void {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const origin = allowedOrigin(settings, request.headers.origin);
    // CORS preflight: answered here for every path, before routing (§12.4).
    if (request.method === 'OPTIONS') {
      const requestedMethod = request.headers['access-control-request-method'];
      if (!request.headers.origin || !requestedMethod) {
        throw new ApiError(400, ERRNO.INVALID_PARAMETERS, {
          error: 'Invalid parameters',
          message: 'CORS preflight needs the Origin and Access-Control-Request-Method headers',
        });
      }
      if (origin) {
        reply.header('Access-Control-Allow-Origin', origin);
        reply.header('Access-Control-Allow-Methods', 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
        const requestedHeaders = request.headers['access-control-request-headers'];
        if (requestedHeaders) reply.header('Access-Control-Allow-Headers', requestedHeaders);
        reply.header('Access-Control-Max-Age', String(settings.cors_max_age_seconds));
      }
      return reply.code(200).send();
    }
    checkServiceState(settings, request.method);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    for (const [name, value] of responseHeaders(settings, request.method, request.headers.origin))
      reply.header(name, value);
    return payload;
  });
}

/**
 * 410 once the service has ended (`eos`), 405 for a write on a read-only server (also for a
 * batch's sub-request answered in-process: views/batch-direct.ts).
 */
export function checkServiceState(settings: ModuleSettings, method: string): void {
  const eos = endOfService(settings);
  if (eos?.code === 'hard-eol') {
    throw new ApiError(410, ERRNO.SERVICE_DEPRECATED, {
      message: 'The service you are trying to connect no longer exists at this location.',
    });
  }
  if (settings.readonly && method !== 'GET' && method !== 'HEAD') throw methodNotAllowed();
}

/** The headers every answer carries, in order (also a batch entry's answered in-process, views/batch-direct.ts). */
export function responseHeaders(
  settings: ModuleSettings,
  method: string,
  originHeader: string | undefined,
): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  const origin = allowedOrigin(settings, originHeader);
  if (origin && method !== 'OPTIONS') headers.push(['Access-Control-Allow-Origin', origin]);
  const exposed = [...BASE_EXPOSED];
  if (method === 'GET' || method === 'HEAD') exposed.push(...READ_EXPOSED);
  if (method === 'HEAD') exposed.push(...COUNT_EXPOSED);
  headers.push(['Access-Control-Expose-Headers', exposed.join(', ')]);
  headers.push(['X-Content-Type-Options', 'nosniff']);
  headers.push(['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; "]);
  if (
    settings.backoff !== null &&
    (settings.backoff_percentage === null || Math.random() * 100 < settings.backoff_percentage)
  ) {
    headers.push(['Backoff', String(settings.backoff)]);
  }
  const eos = endOfService(settings);
  if (eos) headers.push(['Alert', eos.header]);
  return headers;
}
