/**
 * Errors in plain words. @quire/client errors carry a stable `code` (never match on messages);
 * the app's own checks throw `UserError`, whose message is already meant for people.
 */
import { type BackoffError, QuireError, ServerError, type SyncErrorReport } from '@quire/client';

/** A problem the user can fix (bad input, wrong password…), worded for them. */
export class UserError extends Error {
  override readonly name = 'UserError';
}

function describeStatus(status: number): string {
  if (status === 401) return 'The server did not accept your username and password. Log out and log in again.';
  if (status === 403) return 'You do not have permission to do that.';
  if (status === 404) return 'It no longer exists on the server.';
  if (status === 412) return 'Someone changed it at the same time. Try again.';
  if (status === 413) return 'That is too large for the server.';
  if (status === 429) return 'Too many attempts. Wait a moment and try again.';
  if (status >= 500) return `The server had a problem (error ${status}). It will be tried again shortly.`;
  return `The server refused the request (error ${status}).`;
}

export function describeError(error: unknown): string {
  if (error instanceof UserError) return error.message;
  if (error instanceof QuireError) {
    switch (error.code) {
      case 'QUIRE_ERR_TRANSPORT_NETWORK':
        return (
          'Cannot reach the Quire server. ' +
          'Your changes are kept on this device and will be sent once it answers again.'
        );
      case 'QUIRE_ERR_TRANSPORT_TIMEOUT':
        return 'The server is taking too long to answer. Your changes are kept on this device.';
      case 'QUIRE_ERR_TRANSPORT_BACKOFF': {
        const seconds = Math.ceil((error as BackoffError).retryAfter / 1000);
        return `The server asked for a pause; syncing resumes in about ${seconds} s.`;
      }
      case 'QUIRE_ERR_SYNC_ABORTED':
        return 'Syncing was stopped.';
      case 'QUIRE_ERR_STORE_NOT_FOUND':
        return 'That item no longer exists.';
      case 'QUIRE_ERR_STORE_EXISTS':
        return 'That item already exists.';
    }
    if (error.code.startsWith('QUIRE_ERR_STORE'))
      return 'This browser could not save the data (its storage failed or is full).';
    if (error instanceof ServerError) return describeStatus(error.status);
  }
  return error instanceof Error ? error.message : String(error);
}

/** One sentence for the changes a sync could not publish (the records stay pending). */
export function describeRefusedChanges(errors: readonly SyncErrorReport[], listTitle: string): string {
  const first = errors[0];
  const count = errors.length === 1 ? 'A change' : `${errors.length} changes`;
  const reason = first?.status ? describeStatus(first.status) : (first?.message ?? '');
  return `${count} to “${listTitle}” could not be saved on the server. ${reason}`.trim();
}
