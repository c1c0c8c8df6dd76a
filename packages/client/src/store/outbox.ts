/**
 * How a local write changes a record's pending entry. Pure: the caller writes the result in the
 * same transaction as the record.
 */
import type { OutboxEntry } from './types.js';

export type LocalWrite = 'create' | 'update' | 'delete';

/**
 * @param existing the pending entry, if any
 * @param serverVersion the record's last known server `last_modified` (null: never on the server)
 * @returns the new entry, or null when nothing remains to send (a never-pushed record deleted)
 */
export function nextOutboxEntry(
  id: string,
  existing: OutboxEntry | undefined,
  write: LocalWrite,
  serverVersion: number | null,
  seq: number,
  rev: string,
): OutboxEntry | null {
  const base = existing ? existing.base : serverVersion;
  const keep = { id, rev, seq: existing?.seq ?? seq, ...(existing?.blocked ? { blocked: true } : {}) };
  if (write === 'delete') {
    // Never reached the server: nothing to delete there.
    if (base === null) return null;
    return { ...keep, op: 'delete', base };
  }
  // A record the server never had is created with If-None-Match: *; otherwise updated with If-Match.
  return { ...keep, op: base === null ? 'create' : 'update', base };
}
