/**
 * Protocol errors: the errno table of protocol-reference §1.2 and the one error body builder.
 * Every 4xx/5xx produced by the API goes through `ApiError` → `toErrorBody()`.
 */

export const ERRNO = {
  MISSING_AUTH_TOKEN: 104,
  INVALID_AUTH_TOKEN: 105,
  BADJSON: 106,
  INVALID_PARAMETERS: 107,
  MISSING_PARAMETERS: 108,
  INVALID_POSTED_DATA: 109,
  INVALID_RESOURCE_ID: 110,
  MISSING_RESOURCE: 111,
  MISSING_CONTENT_LENGTH: 112,
  REQUEST_TOO_LARGE: 113,
  MODIFIED_MEANWHILE: 114,
  METHOD_NOT_ALLOWED: 115,
  VERSION_NOT_AVAILABLE: 116,
  CLIENT_REACHED_CAPACITY: 117,
  FORBIDDEN: 121,
  CONSTRAINT_VIOLATED: 122,
  BACKEND: 201,
  SERVICE_DEPRECATED: 202,
  UNDEFINED: 999,
} as const;

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  417: 'Expectation Failed',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  499: 'Client Closed Request',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

export function reasonPhrase(status: number): string {
  return REASONS[status] ?? 'Error';
}

/** One entry of a validation error's `details`. */
export interface ValidationDetail {
  location: 'body' | 'querystring' | 'header' | 'path';
  name: string | null;
  description: string;
}

export interface ErrorBody {
  code: number;
  errno: number;
  error: string;
  message?: string;
  info?: string;
  details?: unknown;
}

/** Brand of ApiError, so that `instanceof` holds across duplicate copies of this package (undici's way). */
const API_ERROR = Symbol.for('quire.ApiError');

export class ApiError extends Error {
  override name = 'ApiError';
  readonly [API_ERROR] = true;

  /** True for an ApiError of any copy of this package (a listener module may bundle its own). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[API_ERROR] === true;
  }

  readonly status: number;
  readonly errno: number;
  readonly error: string;
  readonly details: unknown;
  /** Extra response headers (e.g. ETag on 412, Retry-After on 503, WWW-Authenticate on 401). */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    errno: number,
    options: { message?: string; error?: string; details?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(options.message ?? reasonPhrase(status));
    this.status = status;
    this.errno = errno;
    this.error = options.error ?? reasonPhrase(status);
    this.details = options.details;
    this.headers = options.headers ?? {};
    this.hasMessage = options.message !== undefined;
  }

  readonly hasMessage: boolean;

  toBody(): ErrorBody {
    const body: ErrorBody = { code: this.status, errno: this.errno, error: this.error };
    if (this.hasMessage && this.message) body.message = this.message;
    if (this.details !== undefined && this.details !== null) body.details = this.details;
    return body;
  }
}

/**
 * Validation failure (400 unless told otherwise, errno 107, error "Invalid parameters").
 * The message follows Kinto's rule: the description alone when it already names the field,
 * else "<name> in <location>: <description>", or "<location>: <description>" without a name.
 */
export function invalidParameters(details: ValidationDetail[], status = 400): ApiError {
  const sorted = [...details].sort((a, b) => (a.name ?? '').localeCompare(b.name ?? ''));
  const first = sorted[0];
  let message = 'Invalid parameters';
  if (first) {
    // Kinto's rule (errors.json_error_handler): the description alone when the name occurs in
    // it — always so for the name '' — e.g. "Number of requests is limited to 25".
    if (first.name !== null && first.description.includes(first.name)) message = first.description;
    else if (first.name) message = `${first.name} in ${first.location}: ${first.description}`;
    else message = `${first.location}: ${first.description}`;
  }
  return new ApiError(status, ERRNO.INVALID_PARAMETERS, { error: 'Invalid parameters', message, details: sorted });
}

export function invalidParameter(
  location: ValidationDetail['location'],
  name: string | null,
  description: string,
): ApiError {
  return invalidParameters([{ location, name, description }]);
}

/** 404 for a missing object (errno 110) or a missing parent (errno 111). */
export function objectNotFound(resourceName: string, id: string, errno: number = ERRNO.INVALID_RESOURCE_ID): ApiError {
  return new ApiError(404, errno, { details: { id, resource_name: resourceName } });
}

export function unknownUrl(): ApiError {
  return new ApiError(404, ERRNO.MISSING_RESOURCE, {
    message: 'The resource you are looking for could not be found.',
  });
}

export function methodNotAllowed(allow?: string[]): ApiError {
  return new ApiError(405, ERRNO.METHOD_NOT_ALLOWED, {
    message: 'Method not allowed on this endpoint.',
    headers: allow ? { Allow: allow.join(', ') } : {},
  });
}

/** 412: `existing` is the current object (without permissions) when there is one. */
export function preconditionFailed(currentTimestamp: number | undefined, existing?: Record<string, unknown>): ApiError {
  const headers: Record<string, string> = {};
  if (currentTimestamp !== undefined) {
    headers.ETag = `"${currentTimestamp}"`;
    headers['Last-Modified'] = new Date(currentTimestamp).toUTCString();
  }
  return new ApiError(412, ERRNO.MODIFIED_MEANWHILE, {
    message: 'Resource was modified meanwhile',
    details: existing ? { existing } : undefined,
    headers,
  });
}
