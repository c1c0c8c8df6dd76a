/**
 * Raw HTTP against the server under test: global fetch, no client library, no redirects followed.
 *
 * Four duties besides sending: every exchange is recorded so that a failing test carries the
 * request and response that led to it (task meta `exchanges`, shown by the reports); the safety
 * guard refuses writes in read-only mode and anything that could touch data the suite did not
 * create (see `guard`); the identities a request uses are made ready first (identities.ts:
 * throwaway accounts created, impossible identities turned into skips); and buckets created by
 * any means are tracked for cleanup.
 */
import { beforeEach } from 'vitest';
import type { BatchBody, BatchResponse, ObjectBody } from './bodies.js';
import { baseUrl, writerBaseUrl } from './config.js';
import { prepareIdentities } from './identities.js';
import { type AnsweredWrite, awaitReplica, PERSONAL, timestampOf } from './replica.js';
import { SkipSignal } from './skip.js';
import { track } from './tracking.js';

export { SKIP_MARKER, SkipSignal } from './skip.js';

export interface RecordedExchange {
  request: { method: string; url: string; headers: Record<string, string>; body?: string };
  response?: { status: number; headers: Record<string, string>; body: string };
  /** Network error, when there was no response. */
  error?: string;
}

const MAX_RECORDED = 64;
const MAX_BODY_CHARS = 8_000;
let sequence = 0;
const recorded: { seq: number; exchange: RecordedExchange }[] = [];

function clip(text: string): string {
  return text.length > MAX_BODY_CHARS ? `${text.slice(0, MAX_BODY_CHARS)}… (${text.length} characters)` : text;
}

/** Never put a password in a report: `Basic <name>:***`, `Bearer ***`. */
function redactAuthorization(value: string): string {
  const [scheme = '', token = ''] = value.split(' ', 2);
  if (scheme.toLowerCase() === 'basic') {
    const decoded = Buffer.from(token, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return `Basic ${colon >= 0 ? decoded.slice(0, colon) : '?'}:*** (redacted)`;
  }
  return `${scheme} *** (redacted)`;
}

function headerObject(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => {
    out[key] = key === 'authorization' ? redactAuthorization(value) : value;
  });
  return out;
}

function record(exchange: RecordedExchange): void {
  recorded.push({ seq: ++sequence, exchange });
  if (recorded.length > MAX_RECORDED) recorded.shift();
}

/** The exchanges recorded after sequence number `since` (most recent last). */
function exchangesSince(since: number, max = 3): RecordedExchange[] {
  return recorded
    .filter((r) => r.seq > since)
    .slice(-max)
    .map((r) => r.exchange);
}

try {
  // On failure, attach the last exchanges of the test to it. Tests of a `describe.concurrent`
  // block share the recorder, so their attachments may include a neighbour's exchanges.
  beforeEach((ctx) => {
    const start = sequence;
    ctx.onTestFailed(() => {
      (ctx.task.meta as Record<string, unknown>).exchanges = exchangesSince(start);
    });
  });
} catch {
  // Imported outside a vitest test file (library use): nothing to attach to.
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** True when the identities are given credentials of real users (`--user`), not throwaway ones. */
function realIdentities(): boolean {
  return Boolean(process.env.QUIRE_CONFORMANCE_USERS) && process.env.QUIRE_CONFORMANCE_USERS_DISPOSABLE !== '1';
}

function pathOf(path: string): string {
  const full = url(path);
  const base = baseUrl();
  const rest = full.startsWith(base) ? full.slice(base.length) : new URL(full).pathname.replace(/^\/v1/, '');
  return rest.split('?')[0] ?? '';
}

interface SubRequest {
  method: string;
  path: string;
  body?: { data?: { id?: unknown } };
  headers?: Record<string, string>;
}

/** A batch body as a test may send it: anything may be missing or malformed (robustness tests). */
interface SentBatch {
  defaults?: Partial<SubRequest>;
  requests?: unknown;
}

/** The operations a request performs: itself, or the sub-requests of a batch. */
function operations(method: string, path: string, body: unknown): SubRequest[] {
  const p = pathOf(path);
  const batch = body as SentBatch | null | undefined;
  if (method === 'POST' && p === '/batch' && batch && Array.isArray(batch.requests)) {
    const defaults = batch.defaults ?? {};
    return (batch.requests as (Partial<SubRequest> | null | undefined)[]).map((r) => ({
      method: String(r?.method ?? defaults.method ?? 'GET').toUpperCase(),
      path:
        String(r?.path ?? defaults.path ?? '')
          .replace(/^\/v1(?=\/)/, '')
          .split('?')[0] ?? '',
      body: r?.body ?? defaults.body,
      headers: { ...(defaults.headers ?? {}), ...(r?.headers ?? {}) },
    }));
  }
  return [{ method, path: p, body: body as SubRequest['body'] }];
}

/**
 * Refuses, before anything is sent: every write in read-only mode
 * (`QUIRE_CONFORMANCE_READ_ONLY=1`); and, with credentials of real users, the operations that
 * would touch their own data (`DELETE /buckets` deletes all their buckets; writes in their
 * personal `default` bucket).
 */
function guard(ops: SubRequest[], method: string, readonlyProbe: boolean): void {
  if (process.env.QUIRE_CONFORMANCE_READ_ONLY === '1' && !readonlyProbe) {
    if (!SAFE_METHODS.has(method)) throw new SkipSignal('read-only mode: this check writes');
    // Even a GET creates the caller's personal bucket on first access (§13.1).
    if (ops.some((op) => /^\/buckets\/default(\/|$)/.test(op.path)))
      throw new SkipSignal('read-only mode: this check writes');
  }
  if (!realIdentities()) return;
  for (const op of ops) {
    if (op.method === 'DELETE' && /^\/buckets\/?$/.test(op.path)) {
      throw new SkipSignal('needs throwaway identities: DELETE /buckets would delete every bucket of the given user');
    }
    if (!SAFE_METHODS.has(op.method) && /^\/buckets\/default(\/|$)/.test(op.path)) {
      throw new SkipSignal("needs throwaway identities: would write in the given user's personal bucket");
    }
  }
}

const BUCKET_PATH = /^\/buckets\/([^/]+)$/;

/** Paths of robustness tests may be malformed: keep such a segment as it is. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Tracks, before sending, the buckets a request may create whose id is known in advance. */
function trackBefore(ops: SubRequest[], authorization: string | null): void {
  for (const op of ops) {
    if (SAFE_METHODS.has(op.method) || op.method === 'DELETE') continue;
    const auth = op.headers?.Authorization ?? op.headers?.authorization ?? authorization;
    const m = BUCKET_PATH.exec(op.path) ?? /^\/buckets\/(default)\//.exec(op.path);
    if (m?.[1]) track(decodeSegment(m[1]), auth);
    const id = op.body?.data?.id;
    if (op.method === 'POST' && /^\/buckets\/?$/.test(op.path) && typeof id === 'string') track(id, auth);
  }
}

/** What trackAfter reads of a body: it may be anything, or nothing. */
type ReceivedBody = Partial<ObjectBody & BatchBody> | null | undefined;

/** Tracks buckets created by `POST /buckets` with a server-assigned id. */
function trackAfter(
  ops: SubRequest[],
  method: string,
  path: string,
  status: number,
  json: unknown,
  authorization: string | null,
): void {
  const body = json as ReceivedBody;
  if (pathOf(path) === '/batch' && method === 'POST') {
    const responses: (Partial<BatchResponse> | null | undefined)[] = Array.isArray(body?.responses)
      ? body.responses
      : [];
    responses.forEach((r, i) => {
      const op = ops[i];
      const id = r?.body?.data?.id;
      if (op && r?.status === 201 && op.method === 'POST' && /^\/buckets\/?$/.test(op.path) && typeof id === 'string') {
        track(id, op.headers?.Authorization ?? op.headers?.authorization ?? authorization);
      }
    });
  } else if (
    method === 'POST' &&
    /^\/buckets\/?$/.test(pathOf(path)) &&
    status === 201 &&
    typeof body?.data?.id === 'string'
  ) {
    track(body.data.id, authorization);
  }
}

/** The writes a request made, each with its answer (a batch's sub-requests, or the request). */
function answeredWrites(
  ops: SubRequest[],
  answer: { method: string; path: string; status: number; json: unknown; headers: Headers },
  authorization: string | null,
): AnsweredWrite[] {
  const etag = timestampOf(answer.headers.get('etag'));
  const [op] = ops;
  if (pathOf(answer.path) !== '/batch' || answer.method !== 'POST')
    return op ? [{ ...op, status: answer.status, body: answer.json, etag, authorization, sent: op.body }] : [];
  const responses = (answer.json as ReceivedBody)?.responses;
  return (Array.isArray(responses) ? responses : []).flatMap((r, i) => {
    const sub = ops[i];
    if (!sub || typeof r?.status !== 'number') return [];
    const headers = (r.headers ?? {}) as Record<string, string>;
    return [
      {
        method: sub.method,
        path: sub.path,
        status: r.status,
        body: r.body,
        etag: timestampOf(headers.ETag ?? headers.etag),
        authorization: sub.headers?.Authorization ?? sub.headers?.authorization ?? authorization,
        sent: sub.body,
      },
    ];
  });
}

/** All a request needs of an identity: its ready-made `Authorization` header value. */
export interface Identity {
  authorization: string;
}

export interface RequestOptions {
  /** JSON body, serialised with JSON.stringify; sets `Content-Type: application/json` unless `contentType` is given. */
  body?: unknown;
  /** Body sent verbatim (no implicit Content-Type). */
  rawBody?: string | Uint8Array;
  /** Content-Type to send; `null` sends none even with a JSON body. */
  contentType?: string | null;
  headers?: Record<string, string>;
  /** An identity (a user of users.ts), a literal Authorization header value, or nothing (anonymous). */
  auth?: Identity | string | null | undefined;
  redirect?: 'manual' | 'follow';
  /**
   * A write sent to a server that declares itself readonly (§12.7), to check that it refuses
   * it: sent even in read-only mode. Only for `suites/operations.test.ts`, on random ids.
   */
  readonlyProbe?: boolean;
}

/** A response; `Body` is the body the test expects (bodies.ts), unknown when it may be any. */
export interface HttpResponse<Body = unknown> {
  status: number;
  headers: Headers;
  /**
   * Parsed JSON body, undefined when the body is empty or not JSON. Typed as expected, not
   * checked (bodies.ts): read it after checking the status.
   */
  json: Body;
  text: string;
  url: string;
}

/** `Authorization` value for HTTP Basic. */
export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

/** Absolute URL for a path relative to the base URL (`/buckets/x`), or the URL itself when absolute. */
export function url(path: string): string {
  if (/^https?:\/\//i.test(path)) return path;
  if (path === '' || path === '/') return `${baseUrl()}/`;
  return `${baseUrl()}${path.startsWith('/') ? '' : '/'}${path}`;
}

/** Sends a request; `Body` is the response body expected (one object's by default, see bodies.ts). */
export async function request<Body = ObjectBody>(
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<HttpResponse<Body>> {
  const headers = new Headers();
  let body: Uint8Array<ArrayBuffer> | undefined;
  if (options.rawBody !== undefined) {
    // Bytes, never a string: fetch would add `Content-Type: text/plain` to a string body.
    body =
      typeof options.rawBody === 'string' ? new TextEncoder().encode(options.rawBody) : new Uint8Array(options.rawBody);
    if (options.contentType) headers.set('Content-Type', options.contentType);
  } else if (options.body !== undefined) {
    body = new TextEncoder().encode(JSON.stringify(options.body));
    if (options.contentType !== null) {
      headers.set('Content-Type', options.contentType ?? 'application/json');
    }
  } else if (options.contentType) {
    headers.set('Content-Type', options.contentType);
  }
  const auth = options.auth;
  if (typeof auth === 'string') headers.set('Authorization', auth);
  else if (auth) headers.set('Authorization', auth.authorization);
  for (const [k, v] of Object.entries(options.headers ?? {})) headers.set(k, v);

  const verb = method.toUpperCase();
  const ops = operations(verb, path, options.body);
  guard(ops, verb, options.readonlyProbe === true);
  const authorization = headers.get('authorization');
  // Throwaway accounts are created by their first request; identities the deployment cannot
  // have make the check a skip (identities.ts).
  await prepareIdentities([authorization, ...ops.map((op) => op.headers?.Authorization ?? op.headers?.authorization)]);
  trackBefore(ops, authorization);

  // Against a reader (`--writer`), writes go to the writer (except those meant to be refused),
  // and so does the personal bucket, which even a GET may create.
  const writes = !SAFE_METHODS.has(verb) || ops.some((op) => PERSONAL.test(op.path));
  const writer = !writes || options.readonlyProbe ? undefined : writerBaseUrl();
  const target = writer === undefined ? url(path) : url(path).replace(baseUrl(), writer);
  const exchange: RecordedExchange = {
    request: {
      method,
      url: target,
      headers: headerObject(headers),
      ...(body !== undefined ? { body: clip(new TextDecoder().decode(body)) } : {}),
    },
  };
  let res: Response;
  let text: string;
  try {
    res = await fetch(target, {
      method,
      headers,
      ...(body !== undefined ? { body } : {}),
      redirect: options.redirect ?? 'manual',
    });
    text = verb === 'HEAD' ? '' : await res.text();
  } catch (error) {
    exchange.error = (error as Error).message;
    record(exchange);
    throw error;
  }
  exchange.response = { status: res.status, headers: headerObject(res.headers), body: clip(text) };
  record(exchange);
  let json: unknown;
  if (text.length > 0) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  trackAfter(ops, verb, path, res.status, json, authorization);
  if (writer !== undefined)
    await awaitReplica(
      answeredWrites(ops, { method: verb, path, status: res.status, json, headers: res.headers }, authorization),
    );
  return { status: res.status, headers: res.headers, json: json as Body, text, url: res.url };
}

export const get = <Body = ObjectBody>(path: string, o?: RequestOptions) => request<Body>('GET', path, o);
export const head = (path: string, o?: RequestOptions) => request<undefined>('HEAD', path, o);
export const put = <Body = ObjectBody>(path: string, o?: RequestOptions) => request<Body>('PUT', path, o);
export const post = <Body = ObjectBody>(path: string, o?: RequestOptions) => request<Body>('POST', path, o);
export const patch = <Body = ObjectBody>(path: string, o?: RequestOptions) => request<Body>('PATCH', path, o);
export const del = <Body = ObjectBody>(path: string, o?: RequestOptions) => request<Body>('DELETE', path, o);

/** Builds a query string from pairs, encoding values (`qs({_since: '"1"'})` → `?_since=%221%22`). */
export function qs(params: Record<string, string | number | boolean>): string {
  const parts = Object.entries(params).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}
