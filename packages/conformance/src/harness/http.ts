/**
 * Raw HTTP against the server under test: global fetch, no client library, no redirects followed.
 */
import { baseUrl } from './config.js';
import type { User } from './users.js';

export interface RequestOptions {
  /** JSON body, serialised with JSON.stringify; sets `Content-Type: application/json` unless `contentType` is given. */
  body?: unknown;
  /** Body sent verbatim (no implicit Content-Type). */
  rawBody?: string | Uint8Array;
  /** Content-Type to send; `null` sends none even with a JSON body. */
  contentType?: string | null;
  headers?: Record<string, string>;
  /** A user (Basic Auth), a literal Authorization header value, or nothing (anonymous). */
  auth?: User | string | null | undefined;
  redirect?: 'manual' | 'follow';
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
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

export async function request(
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<HttpResponse> {
  const headers = new Headers();
  let body: Uint8Array<ArrayBuffer> | undefined;
  if (options.rawBody !== undefined) {
    // Bytes, never a string: fetch would add `Content-Type: text/plain` to a string body.
    body =
      typeof options.rawBody === 'string'
        ? new TextEncoder().encode(options.rawBody)
        : new Uint8Array(options.rawBody);
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

  const res = await fetch(url(path), {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
    redirect: options.redirect ?? 'manual',
  });
  const text = method.toUpperCase() === 'HEAD' ? '' : await res.text();
  let json: unknown;
  if (text.length > 0) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: res.status, headers: res.headers, json, text, url: res.url };
}

export const get = (path: string, o?: RequestOptions) => request('GET', path, o);
export const head = (path: string, o?: RequestOptions) => request('HEAD', path, o);
export const put = (path: string, o?: RequestOptions) => request('PUT', path, o);
export const post = (path: string, o?: RequestOptions) => request('POST', path, o);
export const patch = (path: string, o?: RequestOptions) => request('PATCH', path, o);
export const del = (path: string, o?: RequestOptions) => request('DELETE', path, o);

/** Builds a query string from pairs, encoding values (`qs({_since: '"1"'})` → `?_since=%221%22`). */
export function qs(params: Record<string, string | number | boolean>): string {
  const parts = Object.entries(params).map(
    ([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`,
  );
  return parts.length ? `?${parts.join('&')}` : '';
}
