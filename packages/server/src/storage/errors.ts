/** Storage errors. They know nothing of HTTP; `http/error-handler.ts` maps them to responses. */

export class StorageError extends Error {
  override name = 'StorageError';
}

/** The backend failed or is unreachable (→ 503, errno 201). */
export class BackendError extends StorageError {
  override name = 'BackendError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A statement ran past the request's database time (`storage_statement_timeout_ms`) and was
 * cancelled (→ 503, errno 201, naming the setting).
 */
export class StatementTimeoutError extends BackendError {
  override name = 'StatementTimeoutError';
  constructor(options?: { cause?: unknown }) {
    super('a statement ran past the statement timeout and was cancelled', options);
  }
}

/** The object does not exist (or is a tombstone). */
export class ObjectNotFoundError extends StorageError {
  override name = 'ObjectNotFoundError';
  constructor(
    readonly resourceName: string,
    readonly id: string,
  ) {
    super(`${resourceName} ${id} not found`);
  }
}

/** An integrity constraint was violated: the object exists, or a timestamp collides (→ 409, errno 122). */
export class UnicityError extends StorageError {
  override name = 'UnicityError';
  constructor(
    message: string,
    readonly existing?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The store is not at the schema version this code needs (run `quire migrate`). */
export class MigrationRequiredError extends StorageError {
  override name = 'MigrationRequiredError';
}

/** The database stayed unreachable for as long as the start may wait for it (`storage_connect_timeout_seconds`). */
export class DatabaseUnavailableError extends BackendError {
  override name = 'DatabaseUnavailableError';
}
