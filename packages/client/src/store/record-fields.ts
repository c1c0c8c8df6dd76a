/**
 * A record's fields: the app's own, and those the server owns (`id` aside, `last_modified` and a
 * tombstone's `deleted`). Sync compares and sends only the app's.
 */
import type { LocalRecord, RemoteRecord } from './types.js';

const SERVER_FIELDS = new Set(['last_modified', 'deleted']);

/** Structural equality of JSON-like values (key order ignored). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => deepEqual(item, other[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && deepEqual(left[key], right[key]));
}

/** Same fields and values, whatever the key order; server fields ignored. */
export function sameRecord(
  a: Record<string, unknown> | null | undefined,
  b: Record<string, unknown> | null | undefined,
): boolean {
  if (!a || !b) return false;
  const strip = (record: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(record).filter(([key]) => !SERVER_FIELDS.has(key)));
  return deepEqual(strip(a), strip(b));
}

/** The record's app fields as pushed to the server (no `id`, no `last_modified`). */
export function payload(record: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, last_modified: _lm, ...fields } = record;
  return fields;
}

/** A server version as the replica stores it (no `deleted` flag). */
export function asLocal(remote: RemoteRecord): LocalRecord {
  const { deleted: _deleted, ...record } = remote;
  return record as LocalRecord;
}

/** The record with `last_modified` set to `version`, or without one when null: only the server sets it. */
export function withServerVersion<T extends Record<string, unknown>>(record: T, version: number | null): T {
  const { last_modified: _previous, ...fields } = record;
  return (version === null ? fields : { ...fields, last_modified: version }) as T;
}

/** A file as a `kinto-attachment` server describes it (the server owns the field). */
function isServerAttachment(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { hash?: unknown }).hash === 'string' &&
    typeof (value as { location?: unknown }).location === 'string'
  );
}

/**
 * A version kept over the server's, with the server's file: a server with attachments refuses a
 * write that changes `attachment` (its files change through their own requests, which the
 * offline attachments queue sends after the record).
 */
export function withServerAttachment(
  keep: Record<string, unknown>,
  remote: Record<string, unknown>,
): Record<string, unknown> {
  if (!isServerAttachment(remote.attachment) && !isServerAttachment(keep.attachment)) return keep;
  const { attachment: _attachment, ...fields } = keep;
  return remote.attachment === undefined ? fields : { ...fields, attachment: remote.attachment };
}
