/**
 * IndexedDB failures as the SDK reports them: a `StoreError` with a code. A full disk or origin
 * quota (`QuotaExceededError`, which IndexedDB often reports as the `AbortError` of the
 * transaction it ended, and Dexie wraps once more) is `QUIRE_ERR_STORE_QUOTA`: the transaction
 * was rolled back, so the replica, its outbox and its pull checkpoint are as they were before it.
 */
import { QuireError, StoreError } from '../errors.js';

interface ErrorLike {
  name?: string;
  message?: string;
  inner?: unknown;
  cause?: unknown;
  error?: unknown;
}

/** The error or any error it wraps (Dexie's `inner`, `cause`, a transaction's `error`), a few levels deep. */
function* chain(error: unknown): Generator<ErrorLike> {
  let current = error as ErrorLike | null | undefined;
  for (let depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    yield current;
    current = (current.inner ?? current.cause ?? current.error) as ErrorLike | null | undefined;
  }
}

export function isQuotaError(error: unknown): boolean {
  for (const each of chain(error)) {
    if (each.name === 'QuotaExceededError' || /quota/i.test(each.message ?? '')) return true;
  }
  return false;
}

/** `error` as a QuireError: quota → QUIRE_ERR_STORE_QUOTA, any other store failure → QUIRE_ERR_STORE_FAILED. */
export function toStoreError(error: unknown, doing: string): QuireError {
  if (error instanceof QuireError) return error;
  if (isQuotaError(error))
    return new StoreError('QUIRE_ERR_STORE_QUOTA', `Storage is full: ${doing} was rolled back`, { cause: error });
  return new StoreError(
    'QUIRE_ERR_STORE_FAILED',
    `IndexedDB failure while ${doing}: ${(error as Error | null)?.message ?? String(error)}`,
    { cause: error },
  );
}

/** Names of IndexedDB's DOMExceptions and of Dexie's errors: a failure of the local store. */
const STORE_ERROR_NAMES = new Set([
  'AbortError',
  'ConstraintError',
  'DataCloneError',
  'DataError',
  'InvalidAccessError',
  'InvalidStateError',
  'NotFoundError',
  'QuotaExceededError',
  'ReadOnlyError',
  'TransactionInactiveError',
  'UnknownError',
  'VersionError',
  'DatabaseClosedError',
  'MissingAPIError',
  'OpenFailedError',
  'PrematureCommitError',
  'BulkError',
]);

/** A failure of the local store (IndexedDB, Dexie) as a typed StoreError; anything else as it was. */
export function asStoreFailure(error: unknown, doing: string): unknown {
  if (error instanceof QuireError) return error;
  if (isQuotaError(error) || STORE_ERROR_NAMES.has((error as ErrorLike | null)?.name ?? ''))
    return toStoreError(error, doing);
  return error;
}
