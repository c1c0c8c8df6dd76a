/**
 * The client's error hierarchy (undici style): every error has a stable `code`, never match on
 * messages. Classes are branded with `Symbol.for()` so `instanceof` works even when the SDK is
 * loaded twice (ESM + CJS copies).
 */

function brand(code: string): symbol {
  return Symbol.for(`quire.error.${code}`);
}

const BASE = brand('QUIRE_ERR');

export class QuireError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    // From a static field, not `new.target.name`: minifiers rename classes.
    this.name = (new.target as unknown as { errorName?: string }).errorName ?? 'QuireError';
    this.code = code;
    // Brand every instance with its own class's symbol and all its ancestors'.
    const marks = this as unknown as Record<symbol, boolean>;
    marks[BASE] = true;
    for (let proto: unknown = new.target; proto && proto !== Error; proto = Object.getPrototypeOf(proto)) {
      const symbol = (proto as { brand?: symbol }).brand;
      if (symbol) marks[symbol] = true;
    }
  }

  static readonly brand: symbol = BASE;
  static readonly errorName: string = 'QuireError';

  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class right of `instanceof` (its own brand)
    const symbol = (this as unknown as { brand: symbol }).brand;
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[symbol] === true;
  }
}

/** The connection failed or was cut (DNS, refused, reset, body cut short). */
export class NetworkError extends QuireError {
  static override readonly brand = brand('QUIRE_ERR_TRANSPORT_NETWORK');
  static override readonly errorName: string = 'NetworkError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('QUIRE_ERR_TRANSPORT_NETWORK', message, options);
  }
}

/** No response within the configured timeout. */
export class TimeoutError extends QuireError {
  static override readonly brand = brand('QUIRE_ERR_TRANSPORT_TIMEOUT');
  static override readonly errorName: string = 'TimeoutError';
  constructor(message: string) {
    super('QUIRE_ERR_TRANSPORT_TIMEOUT', message);
  }
}

export interface ErrorBody {
  code?: number;
  errno?: number;
  error?: string;
  message?: string;
  details?: unknown;
}

/** The server answered with an error status (the protocol's JSON error body when present). */
export class ServerError extends QuireError {
  static override readonly brand = brand('QUIRE_ERR_SERVER');
  static override readonly errorName: string = 'ServerError';
  readonly status: number;
  readonly errno: number | null;
  readonly body: unknown;
  readonly headers: Headers;

  constructor(status: number, body: unknown, headers: Headers, code = 'QUIRE_ERR_SERVER') {
    const errorBody = (typeof body === 'object' && body !== null ? body : {}) as ErrorBody;
    super(code, `HTTP ${status}${errorBody.message ? `: ${errorBody.message}` : ''}`);
    this.status = status;
    this.errno = typeof errorBody.errno === 'number' ? errorBody.errno : null;
    this.body = body;
    this.headers = headers;
  }

  get details(): unknown {
    return (this.body as ErrorBody | null)?.details;
  }
}

/** 412: the object changed meanwhile; `existing` is the server's version when it sent one. */
export class PreconditionFailedError extends ServerError {
  static override readonly brand = brand('QUIRE_ERR_SERVER_PRECONDITION');
  static override readonly errorName: string = 'PreconditionFailedError';
  constructor(body: unknown, headers: Headers) {
    super(412, body, headers, 'QUIRE_ERR_SERVER_PRECONDITION');
  }

  get existing(): Record<string, unknown> | null {
    const details = this.details as { existing?: Record<string, unknown> } | undefined;
    return details?.existing ?? null;
  }
}

/** The server asked for a pause (`Backoff`, or `Retry-After` longer than we are allowed to wait). */
export class BackoffError extends QuireError {
  static override readonly brand = brand('QUIRE_ERR_TRANSPORT_BACKOFF');
  static override readonly errorName: string = 'BackoffError';
  /** Milliseconds until the server accepts requests again. */
  readonly retryAfter: number;
  constructor(retryAfter: number) {
    super('QUIRE_ERR_TRANSPORT_BACKOFF', `Server asked to back off for ${Math.ceil(retryAfter / 1000)}s`);
    this.retryAfter = retryAfter;
  }
}

/** IndexedDB / Dexie failure, or a local precondition (record exists / not found). */
export class StoreError extends QuireError {
  static override readonly brand = brand('QUIRE_ERR_STORE');
  static override readonly errorName: string = 'StoreError';
  constructor(code: `QUIRE_ERR_STORE${string}`, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** A sync was stopped (signal aborted, client closed). */
export class SyncAbortedError extends QuireError {
  static override readonly brand = brand('QUIRE_ERR_SYNC_ABORTED');
  static override readonly errorName: string = 'SyncAbortedError';
  constructor(message = 'Sync aborted') {
    super('QUIRE_ERR_SYNC_ABORTED', message);
  }
}

/** A record that does not decrypt (end-to-end encrypted collection): a wrong key, or altered on the way. */
export class DecryptionError extends QuireError {
  static override readonly brand = brand('QUIRE_ERR_CRYPTO_DECRYPT');
  static override readonly errorName: string = 'DecryptionError';
  /** The record's id, when one record is to blame. */
  readonly recordId: string | null;
  constructor(message: string, recordId: string | null = null, options?: { cause?: unknown }) {
    super('QUIRE_ERR_CRYPTO_DECRYPT', message, options);
    this.recordId = recordId;
  }
}

/**
 * A file on a record could not be handled: `QUIRE_ERR_ATTACHMENT_UNSUPPORTED` (the server has no
 * `attachments` capability: nothing was sent or queued), `QUIRE_ERR_ATTACHMENT_NONE` (the record
 * has no file), `QUIRE_ERR_ATTACHMENT_HASH` (the bytes received do not match the record's `hash`),
 * `QUIRE_ERR_ATTACHMENT_OFF` (the collection was opened without the `attachments` option).
 */
export class AttachmentError extends QuireError {
  static override readonly brand = brand('QUIRE_ERR_ATTACHMENT');
  static override readonly errorName: string = 'AttachmentError';
  constructor(code: `QUIRE_ERR_ATTACHMENT_${'UNSUPPORTED' | 'NONE' | 'HASH' | 'OFF'}`, message: string) {
    super(code, message);
  }
}
