/**
 * Next-Page tokens (protocol-reference §7.7): standard base64 of compact JSON
 * `{"last_object": {<sort field>: <value>}, "offset": n, "nonce": "pagination-token-<uuid>"}`.
 * Continuation is keyset-based, so pages stay stable under concurrent inserts.
 */
import { randomUUID } from 'node:crypto';
import { invalidParameter } from '../errors.js';
import { fieldValue } from '../storage/filters/evaluate.js';
import type { Sort } from '../storage/types.js';

export interface PageToken {
  lastObject: Record<string, unknown>;
  offset: number;
  nonce: string;
}

const INVALID = '_token has invalid content';

export function decodeToken(raw: string): PageToken {
  let parsed: unknown;
  try {
    const json = Buffer.from(raw, 'base64').toString('utf8');
    parsed = JSON.parse(json);
  } catch {
    throw invalidParameter('querystring', null, INVALID);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw invalidParameter('querystring', null, INVALID);
  const { last_object: lastObject, offset, nonce } = parsed as Record<string, unknown>;
  if (
    lastObject === null ||
    typeof lastObject !== 'object' ||
    Array.isArray(lastObject) ||
    offset === undefined ||
    nonce === undefined
  ) {
    throw invalidParameter('querystring', null, INVALID);
  }
  if (typeof offset !== 'number' || typeof nonce !== 'string') throw invalidParameter('querystring', null, INVALID);
  // Copy into a fresh object: keys come from the client and must not reach a prototype.
  const safe: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(lastObject))
    Object.defineProperty(safe, key, { value, enumerable: true, writable: true });
  return { lastObject: safe, offset, nonce };
}

/** The sort fields' values of `item`, as `ListOptions.after` takes them: a field absent where it lacks it. */
export function keysetOf(item: Record<string, unknown>, sorting: readonly Sort[]): Record<string, unknown> {
  const keys: Record<string, unknown> = {};
  for (const { field } of sorting) {
    const value = fieldValue(item, field);
    // Defined, not assigned: a field named `__proto__` is a key like any other.
    if (value !== undefined) Object.defineProperty(keys, field, { value, enumerable: true, writable: true });
  }
  return keys;
}

/**
 * A token continuing after `lastItem`: its sort fields' values read as the sort reads them (an
 * array index too: `_sort=tags.0`), a field absent where it lacks it.
 */
export function encodeToken(
  lastItem: Record<string, unknown>,
  sorting: Sort[],
  offset: number,
): { encoded: string; nonce: string } {
  const lastObject = keysetOf(lastItem, sorting);
  const nonce = `pagination-token-${randomUUID()}`;
  const json = JSON.stringify({ last_object: lastObject, offset, nonce });
  return { encoded: Buffer.from(json, 'utf8').toString('base64'), nonce };
}

/** The absolute Next-Page URL: every original parameter, then `_limit` and `_token`. */
export function nextPageUrl(
  baseUrl: string,
  path: string,
  params: ReadonlyArray<readonly [string, string]>,
  limit: number,
  token: string,
): string {
  const query = new URLSearchParams(
    params.filter(([name]) => name !== '_limit' && name !== '_token') as Array<[string, string]>,
  );
  query.append('_limit', String(limit));
  query.append('_token', token);
  return `${baseUrl}${path}?${query.toString()}`;
}

/**
 * Page size of §7.6: `_limit` capped by `paginate_by`, everything capped by the fetch size.
 * `pageCap` is a resource's own cap (the history's `history_paginate_by`), applied on top.
 */
/** The settings a page size depends on. */
export interface PageSettings {
  paginate_by: number | null;
  storage_max_fetch_size: number;
}

export function effectiveLimit(
  settings: PageSettings,
  requested: number | null,
  pageCap: number | null = null,
): number {
  const { storage_max_fetch_size: maxFetch } = settings;
  const caps = [settings.paginate_by, pageCap].filter((cap): cap is number => cap !== null);
  const paginateBy = caps.length > 0 ? Math.min(...caps) : null;
  let limit = requested ?? paginateBy;
  if (requested !== null && paginateBy !== null) limit = Math.min(requested, paginateBy);
  return limit ? Math.min(limit, maxFetch) : maxFetch;
}
