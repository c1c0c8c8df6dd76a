/**
 * Assertions on the wire format shared by every suite.
 */
import { expect } from 'vitest';
import type { ErrorBody, KintoObject, ValidationErrorBody } from './bodies.js';
import type { HttpResponse } from './http.js';

/** HTTP reason phrases used as `error` label (§1.1), except validation errors ("Invalid parameters"). */
const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

const ERROR_KEYS = ['code', 'errno', 'error', 'message', 'info', 'details'];

interface ApiErrorExpectation {
  /** Exact `message`. */
  message?: string;
  /** Exact `error` label; defaults to "Invalid parameters" for errno 107 and the reason phrase otherwise. */
  error?: string;
}

function describeRes(res: HttpResponse): string {
  return `${res.status} ${res.text.slice(0, 500)}`;
}

/**
 * Checks status and the §1.1 error envelope: `{code, errno, error, message?, info?, details?}`
 * with `code` equal to the status, `message` a string when present, no other keys.
 * Returns the parsed body.
 */
export function expectApiError(
  res: HttpResponse,
  status: number,
  errno: number,
  expected: ApiErrorExpectation | string = {},
): ErrorBody {
  const opts = typeof expected === 'string' ? { message: expected } : expected;
  expect(res.status, describeRes(res)).toBe(status);
  expect(res.headers.get('content-type') ?? '', 'error Content-Type').toMatch(/^application\/json/);
  // What follows checks that it is one.
  const body = res.json as ErrorBody;
  expect(body, describeRes(res)).toBeTypeOf('object');
  expect(body).not.toBeNull();
  expect(body.code, describeRes(res)).toBe(status);
  expect(body.errno, describeRes(res)).toBe(errno);
  expect(body.error).toBeTypeOf('string');
  const label =
    opts.error ?? (errno === 107 && [400, 406, 415].includes(status) ? 'Invalid parameters' : REASONS[status]);
  if (label !== undefined) expect(body.error, describeRes(res)).toBe(label);
  if ('message' in body) expect(body.message).toBeTypeOf('string');
  if (opts.message !== undefined) expect(body.message, describeRes(res)).toBe(opts.message);
  for (const key of Object.keys(body)) expect(ERROR_KEYS, `unexpected error key ${key}`).toContain(key);
  return body;
}

export interface ValidationDetail {
  location?: string;
  /** `null` matches a null or absent name (the original sends `null`). */
  name?: string | null;
  description?: string;
}

/**
 * A §1.3 validation error: errno 107, `details` a list of `{location, name, description}`;
 * checks that one detail item matches the given fields.
 */
export function expectValidationError(
  res: HttpResponse,
  detail: ValidationDetail = {},
  status = 400,
  message?: string,
): ValidationErrorBody {
  // The list and its items are checked below.
  const body = expectApiError(res, status, 107, message !== undefined ? { message } : {}) as ValidationErrorBody;
  expect(Array.isArray(body.details), `details should be a list: ${res.text}`).toBe(true);
  for (const item of body.details) {
    expect(item).toBeTypeOf('object');
    expect(item.location).toBeTypeOf('string');
    expect(item.description).toBeTypeOf('string');
  }
  const matches = body.details.some((item) => {
    if (detail.location !== undefined && item.location !== detail.location) return false;
    if (detail.description !== undefined && item.description !== detail.description) return false;
    if (detail.name === null) return item.name === null || item.name === undefined || item.name === '';
    if (detail.name !== undefined && item.name !== detail.name) return false;
    return true;
  });
  expect(matches, `no detail matches ${JSON.stringify(detail)} in ${res.text}`).toBe(true);
  return body;
}

/** Checks `ETag: "<digits>"` and returns the integer. */
export function expectETag(res: HttpResponse): number {
  const etag = res.headers.get('etag');
  expect(etag, `ETag header missing: ${describeRes(res)}`).not.toBeNull();
  expect(etag).toMatch(/^"\d+"$/);
  return Number((etag as string).slice(1, -1));
}

/** Checks `Last-Modified` is the HTTP date of the given millisecond timestamp (second precision). */
export function expectLastModified(res: HttpResponse, timestamp: number): void {
  const value = res.headers.get('last-modified');
  expect(value, 'Last-Modified header missing').not.toBeNull();
  const parsed = Date.parse(value as string);
  expect(Number.isNaN(parsed), `unparsable Last-Modified ${value}`).toBe(false);
  expect(parsed).toBe(Math.floor(timestamp / 1000) * 1000);
}

/** A tombstone is exactly `{id, last_modified, deleted: true}`. */
export function expectTombstone(obj: KintoObject, id?: string): void {
  expect(Object.keys(obj).sort()).toEqual(['deleted', 'id', 'last_modified']);
  expect(obj.deleted).toBe(true);
  expect(Number.isSafeInteger(obj.last_modified)).toBe(true);
  if (id !== undefined) expect(obj.id).toBe(id);
}

/** A millisecond timestamp as the server generates them. */
export function expectTimestamp(value: unknown): asserts value is number {
  expect(Number.isSafeInteger(value), `not an integer timestamp: ${String(value)}`).toBe(true);
  expect(value as number).toBeGreaterThan(0);
}

/** Lowercase UUID4 as generated for records (§4.2). */
export const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** Server-generated ids of buckets, collections and groups (§4.2). */
export const SHORT_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{7}$/;
