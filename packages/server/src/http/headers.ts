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
/** `Access-Control-Expose-Headers` of writes, of GETs and of HEADs. */
const EXPOSED = BASE_EXPOSED.join(', ');
const GET_EXPOSED = [...BASE_EXPOSED, ...READ_EXPOSED].join(', ');
const HEAD_EXPOSED = [...BASE_EXPOSED, ...READ_EXPOSED, ...COUNT_EXPOSED].join(', ');

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

/**
 * The hooks take a callback rather than being async: they never wait, and an async hook costs a
 * promise and a turn of the microtask queue per request (a sync throw is an error all the same).
 */
export function registerHeaders(app: FastifyInstance, settings: ModuleSettings): void {
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
    // CORS preflight: answered here for every path, before routing (§12.4).
    if (request.method === 'OPTIONS') {
      answerPreflight(settings, request, reply);
      done();
      return;
    }
    checkServiceState(settings, request.method);
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    for (const [name, value] of responseHeaders(settings, request.method, request.headers.origin))
      reply.header(name, value);
    done(null, payload);
  });
}

function answerPreflight(settings: ModuleSettings, request: FastifyRequest, reply: FastifyReply): void {
  const requestedMethod = request.headers['access-control-request-method'];
  if (!request.headers.origin || !requestedMethod) {
    throw new ApiError(400, ERRNO.INVALID_PARAMETERS, {
      error: 'Invalid parameters',
      message: 'CORS preflight needs the Origin and Access-Control-Request-Method headers',
    });
  }
  const origin = allowedOrigin(settings, request.headers.origin);
  if (origin) {
    reply.header('Access-Control-Allow-Origin', origin);
    reply.header('Access-Control-Allow-Methods', 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
    const requestedHeaders = request.headers['access-control-request-headers'];
    if (requestedHeaders) reply.header('Access-Control-Allow-Headers', requestedHeaders);
    reply.header('Access-Control-Max-Age', String(settings.cors_max_age_seconds));
  }
  reply.code(200).send();
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
  headers.push(
    ['Access-Control-Expose-Headers', method === 'GET' ? GET_EXPOSED : method === 'HEAD' ? HEAD_EXPOSED : EXPOSED],
    ['X-Content-Type-Options', 'nosniff'],
    ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; "],
  );
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
