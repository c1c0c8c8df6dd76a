/**
 * The rules of the outbox: how a record's pending entry changes on a local write, when the server
 * accepts a push, and when a conflict is settled. Pure: local-collection.ts, the only writer of
 * the outbox, writes the result in the same transaction as the record.
 */
import { asLocal, payload, sameRecord, withServerAttachment } from './record-fields.js';
import type { LocalRecord, OutboxEntry, RemoteRecord } from './types.js';

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

/**
 * What stays pending once the server accepted `sent`.
 * @param current the entry now: a local write made while `sent` was in flight replaced it
 * @param serverVersion the record's new `last_modified`, null when the server deleted it
 * @returns null when the published change was the last one
 */
export function afterPublish(
  sent: OutboxEntry,
  current: OutboxEntry | undefined,
  serverVersion: number | null,
  newRev: () => string,
): OutboxEntry | null {
  if (current?.rev === sent.rev) return null;
  if (serverVersion === null) {
    // Re-created locally after the deletion was sent: create it again (over the tombstone).
    return current ? { ...current, op: 'create', base: null } : null;
  }
  // Changed again meanwhile: the pending change now applies on top of the version just written.
  if (current) return { ...current, op: current.op === 'delete' ? 'delete' : 'update', base: serverVersion };
  // Created, then deleted locally before the creation was acknowledged: delete it on the server too.
  return { id: sent.id, op: 'delete', base: serverVersion, rev: newRev(), seq: sent.seq };
}

export interface Settled {
  /** The record to keep locally, null when it is deleted. */
  record: LocalRecord | null;
  /** The change left to push, null when the replica now matches the server. */
  entry: OutboxEntry | null;
}

/**
 * What a settled conflict leaves in the replica.
 * @param kept the winning content, null for a deletion (a server-owned `attachment` is the server's)
 * @param remote the server version, null when deleted on the server
 * @param seq the outbox position of the change left to push
 */
export function afterSettlement(
  id: string,
  kept: Record<string, unknown> | null,
  remote: RemoteRecord | null,
  seq: number,
  newRev: () => string,
): Settled {
  const keep = kept && remote ? withServerAttachment(kept, remote) : kept;
  if (keep === null) {
    if (remote === null) return { record: null, entry: null };
    return { record: null, entry: { id, op: 'delete', base: remote.last_modified, rev: newRev(), seq } };
  }
  if (remote !== null && sameRecord(keep, remote)) return { record: asLocal(remote), entry: null };
  return {
    record: { ...payload(keep), id, ...(remote ? { last_modified: remote.last_modified } : {}) },
    entry: { id, op: remote ? 'update' : 'create', base: remote ? remote.last_modified : null, rev: newRev(), seq },
  };
}
