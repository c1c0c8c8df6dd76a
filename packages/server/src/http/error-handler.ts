/**
 * The only place errors become responses: ApiError → its body; storage errors → 503 / 409 / 404;
 * Fastify's own errors → protocol errors; anything else → 500 errno 999, logged, never leaked.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import type { HttpSettings } from './settings.js';
import type { ServerSettings } from '../server-settings.js';
import type { StorageSettings } from '../storage/settings.js';
import { ApiError, ERRNO, invalidParameter, methodNotAllowed, objectNotFound } from '../errors.js';
import { BackendError, ObjectNotFoundError, StatementTimeoutError, UnicityError } from '../storage/errors.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = HttpSettings & ServerSettings & Pick<StorageSettings, 'storage_statement_timeout_ms'>;

export function toApiError(error: unknown, settings: ModuleSettings): ApiError {
  if (error instanceof ApiError) return error;
  const retryAfter = { 'Retry-After': String(settings.retry_after_seconds) };
  if (error instanceof UnicityError) {
    return new ApiError(409, ERRNO.CONSTRAINT_VIOLATED, {
      message: 'Integrity constraint violated, please retry.',
      headers: retryAfter,
    });
  }
  // The views check first; this is a concurrent deletion that got there in between.
  if (error instanceof ObjectNotFoundError) return objectNotFound(error.resourceName, error.id);
  if (error instanceof StatementTimeoutError) {
    // Not retried as it is: the same statement would run out of time again.
    return new ApiError(503, ERRNO.BACKEND, {
      message:
        'The request needed a database statement longer than storage_statement_timeout_ms ' +
        `(${settings.storage_statement_timeout_ms} ms), which was cancelled: ` +
        'narrow it (filters, _limit) or retry later.',
    });
  }
  if (error instanceof BackendError) {
    return new ApiError(503, ERRNO.BACKEND, {
      message: 'Service temporary unavailable due to overloading or maintenance, please retry later.',
      headers: retryAfter,
    });
  }
  const fastifyError = error as FastifyError;
  switch (fastifyError?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, ERRNO.REQUEST_TOO_LARGE, {
        message: `Request body is larger than ${settings.max_body_bytes} bytes.`,
      });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, ERRNO.INVALID_PARAMETERS, {
        error: 'Invalid parameters',
        message: "Content-Type header should be one of ['application/json']",
      });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidParameter('body', '', 'Invalid JSON: empty or truncated body');
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return new ApiError(400, ERRNO.INVALID_PARAMETERS, { error: 'Bad Request', message: 'Invalid URL path.' });
    case 'FST_ERR_NOT_FOUND':
      return new ApiError(404, ERRNO.MISSING_RESOURCE, {
        message: 'The resource you are looking for could not be found.',
      });
  }
  if (fastifyError?.statusCode === 405) return methodNotAllowed();
  if (typeof fastifyError?.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new ApiError(fastifyError.statusCode, ERRNO.INVALID_PARAMETERS, {
      error: 'Invalid parameters',
      message: fastifyError.message,
    });
  }
  return new ApiError(500, ERRNO.UNDEFINED, {
    message: 'A programmatic error occurred, developers have been informed.',
  });
}

/**
 * Whether a status is the server's fault, logged as an error with its stack. 507 is not: a
 * quota refusal (quotas/listener.ts) is the client's doing, like a 4xx — its request line
 * (observability/request-log.ts) is enough.
 */
export function isServerFault(status: number): boolean {
  return status >= 500 && status !== 507;
}

export function registerErrorHandler(app: FastifyInstance, settings: ModuleSettings): void {
  app.setErrorHandler(async (error, request, reply) => {
    const apiError = toApiError(error, settings);
    if (isServerFault(apiError.status)) request.log.error({ err: error }, 'request failed');
    const body = apiError.toBody();
    if (apiError.status === 500) body.info = settings.error_info_link;
    for (const [name, value] of Object.entries(apiError.headers)) reply.header(name, value);
    return reply.code(apiError.status).type('application/json').send(body);
  });
}
