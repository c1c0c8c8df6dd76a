/**
 * One log line per request (Fastify's own two lines are off): method, route pattern, status,
 * duration, a hash of the user id (never the id: it may be an e-mail address) and the request
 * id, which is taken from `X-Request-Id` when a proxy sends one and returned in that header.
 * Health checks, 304 polls and batch sub-requests log at debug level: a client polling every
 * few seconds must not fill the log. Failures (5xx) log at error level, but a quota refusal
 * (507: the client's doing) at warn.
 */
import { createHash } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isServerFault } from '../http/error-handler.js';
import type { ObservabilitySettings } from './settings.js';

const QUIET_ROUTES = new Set(['/v1/__heartbeat__', '/v1/__lbheartbeat__', '/v1/__version__']);

export const REQUEST_ID_HEADER = 'x-request-id';

/** Pino options for the app's logger: level from settings; pretty lines on a terminal. */
export function loggerOptions(
  settings: ObservabilitySettings,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const pretty = settings.log_format === 'pretty' || (settings.log_format === 'auto' && process.stdout.isTTY === true);
  return {
    level: settings.log_level,
    // Credentials never reach the log, whatever logs a request.
    redact: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'],
    ...(pretty
      ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } }
      : {}),
    ...overrides,
  };
}

export function registerRequestLog(app: FastifyInstance): void {
  // Callback hooks: an async one costs a promise and a microtask turn per request for nothing.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    logRequest(request, reply);
    done();
  });
}

function logRequest(request: FastifyRequest, reply: FastifyReply): void {
  if (!writes(request.log, 'error')) return; // no line at any level: nothing to build
  const route = request.routeOptions.url ?? 'unmatched';
  logRequestLine(request.log, {
    method: request.method,
    route,
    status: reply.statusCode,
    ms: reply.elapsedTime,
    userId: request.identity?.userId ?? null,
    quiet: QUIET_ROUTES.has(route) || request.work.batch,
  });
}

/** What one request's log line says. */
export interface RequestLine {
  method: string;
  /** The route pattern (`/v1/buckets/:bucket_id`), never the path. */
  route: string;
  status: number;
  ms: number;
  userId: string | null;
  /** Logged at debug level unless it failed: health checks, batch sub-requests. */
  quiet: boolean;
}

/** The line of one answered request (also a batch sub-request answered in-process: views/batch-direct.ts). */
export function logRequestLine(log: FastifyBaseLogger, line: RequestLine): void {
  const { method, route, status, userId } = line;
  const quiet = status === 304 || line.quiet;
  // A quota refusal (507) is the client's doing: a warning, not an error.
  const level = isServerFault(status) ? 'error' : status === 507 ? 'warn' : quiet ? 'debug' : 'info';
  // Nothing built for a line that is not written (a 304 at `info`; no logger at all, Fastify's
  // null logger, which has no levels): the user's hash is a SHA-256 per request.
  if (!writes(log, level)) return;
  log[level](
    { method, route, status, ms: Math.round(line.ms * 10) / 10, ...(userId ? { user: userHash(userId) } : {}) },
    `${method} ${route} ${status}`,
  );
}

/**
 * Whether `log` writes lines of `level`: a pino logger says; Fastify's null logger (`logger:
 * false`) has no levels and writes nothing.
 */
function writes(log: FastifyBaseLogger, level: string): boolean {
  const { isLevelEnabled } = log as { isLevelEnabled?: (level: string) => boolean };
  return isLevelEnabled ? isLevelEnabled.call(log, level) : false;
}

/** A short, stable pseudonym of a user id: enough to follow one user through the log. */
function userHash(userid: string): string {
  return createHash('sha256').update(userid).digest('base64url').slice(0, 12);
}
