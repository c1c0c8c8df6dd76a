/**
 * The only caller of `fetch`: URL building, auth, timeouts, JSON, `Backoff`/`Retry-After`, retries
 * of idempotent requests, and the mapping of error statuses to typed errors. Browsers use the
 * global `fetch`; Node uses undici with a keep-alive pool (unless a `fetch` is injected).
 */
import {
  BackoffError,
  NetworkError,
  PreconditionFailedError,
  QuireError,
  ServerError,
  SyncAbortedError,
  TimeoutError,
} from '../errors.js';
import type { OnlineSource } from '../online.js';
import { type RetryPolicy, retryDelay, serverWait, sleep } from '../retry.js';
import { type Auth, authorizationHeader } from './auth.js';
import { BackoffState } from './backoff.js';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface HttpOptions {
  /** Server root including the version prefix, e.g. `https://host/v1`. */
  remote: string;
  auth?: Auth;
  /** Injected fetch (tests, custom agents). Default: global fetch in browsers, undici in Node. */
  fetch?: FetchLike;
  /** Per-request timeout (default 30 s). */
  timeoutMs?: number;
  /**
   * Retries of idempotent requests after a network error, and of any request after 503/409/429
   * with Retry-After (default 2).
   */
  retries?: number;
  /** Longest `Retry-After` we wait in-process; longer ones raise BackoffError (default 10 s). */
  maxRetryAfterMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** Network errors are not retried while this says offline (default: always online). */
  online?: OnlineSource;
}

export interface HttpRequest {
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path below `remote` (starting with `/`), or an absolute URL (Next-Page). */
  path: string;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** JSON, or a Blob sent as it is (its `type` is the Content-Type). */
  body?: unknown;
  signal?: AbortSignal;
  /** This request's timeout, when the default does not fit (an upload). */
  timeoutMs?: number;
  /** Bytes of a Blob body handed to the network so far (Node only: see #once). */
  onUploadProgress?: (loaded: number) => void;
}

export interface HttpResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
/** Answers that say the server (not the request) is down: a gateway in front of it answers for it. */
const UNAVAILABLE = new Set([502, 503, 504]);
/** After a network error or a timeout. */
const NETWORK_RETRY: RetryPolicy = { baseMs: 100, maxMs: 2_000 };

function isNode(): boolean {
  return typeof process !== 'undefined' && typeof process.versions?.node === 'string' && typeof window === 'undefined';
}

interface Pool {
  fetch: FetchLike;
  close(): Promise<void>;
}

async function createNodePool(): Promise<Pool> {
  const undici = await import('undici');
  const agent = new undici.Agent({ keepAliveTimeout: 30_000, connections: 16 });
  return {
    fetch: (input, init) =>
      undici.fetch(input, { ...(init as object), dispatcher: agent }) as unknown as Promise<Response>,
    close: () => agent.close(),
  };
}

export class HttpTransport {
  readonly remote: string;
  readonly backoff = new BackoffState();
  readonly #options: HttpOptions;
  #pool: Promise<Pool> | null = null;
  /** The last exchange found the server unreachable (network error, timeout, 502/503/504). */
  #unreachable = false;
  readonly #recoveryListeners = new Set<() => void>();

  constructor(options: HttpOptions) {
    this.remote = options.remote.replace(/\/+$/, '');
    this.#options = options;
  }

  #fetch(): Promise<FetchLike> {
    if (this.#options.fetch) return Promise.resolve(this.#options.fetch);
    this.#pool ??= isNode()
      ? createNodePool()
      : Promise.resolve({
          fetch: (input: string, init: RequestInit) => globalThis.fetch(input, init),
          close: async () => {},
        });
    return this.#pool.then((pool) => pool.fetch);
  }

  /**
   * Calls `listener` each time the server answers again after it could not be reached: the
   * first response (any status but 502/503/504) after a network error, a timeout or a gateway's
   * 502/503/504. Auto-sync and live changes stop waiting out their failure back-off then.
   */
  onRecovered(listener: () => void): () => void {
    this.#recoveryListeners.add(listener);
    return () => this.#recoveryListeners.delete(listener);
  }

  /** Notes what an exchange says of the server's reachability (see onRecovered). */
  #reached(status: number | null): void {
    if (status === null || UNAVAILABLE.has(status)) {
      this.#unreachable = true;
      return;
    }
    if (!this.#unreachable) return;
    this.#unreachable = false;
    for (const listener of [...this.#recoveryListeners]) listener();
  }

  url(path: string, query?: HttpRequest['query']): string {
    const url = /^https?:\/\//.test(path) ? new URL(path) : new URL(this.remote + path);
    for (const [key, value] of Object.entries(query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value));
    return url.toString();
  }

  /** Sends a request; resolves for 2xx and 304, throws a typed error otherwise. */
  async request<T = unknown>(request: HttpRequest): Promise<HttpResponse<T>> {
    const method = request.method ?? 'GET';
    const retries = this.#options.retries ?? 2;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#once<T>(method, request);
      } catch (error) {
        if (attempt >= retries || request.signal?.aborted) throw error;
        // Where the server said when, any request is sent again after exactly that wait; otherwise
        // only an idempotent one, after a network error or a timeout.
        const asked = serverWait(error);
        if (asked !== null && asked > (this.#options.maxRetryAfterMs ?? 10_000)) throw new BackoffError(asked);
        // Retrying without a network only fails again: whoever called will try when it is back.
        const offline = this.#options.online?.isOnline() === false;
        const transient =
          (error instanceof NetworkError || error instanceof TimeoutError) && IDEMPOTENT.has(method) && !offline;
        const delay = asked ?? (transient ? retryDelay(NETWORK_RETRY, attempt) : null);
        if (delay === null) throw error;
        await sleep(delay, { signal: request.signal });
        if (request.signal?.aborted) throw new SyncAbortedError(`${method} ${request.path} aborted`);
      }
    }
  }

  async #once<T>(method: string, request: HttpRequest): Promise<HttpResponse<T>> {
    const fetch = await this.#fetch();
    const headers: Record<string, string> = {
      Accept: 'application/json',
      ...this.#options.headers,
      ...request.headers,
    };
    const authorization = await authorizationHeader(this.#options.auth);
    if (authorization) headers.Authorization = authorization;
    const { body, duplex } = encodeBody(request, headers);
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal?.reason);
    if (request.signal?.aborted) onAbort(); // aborted before the call: nothing goes out
    request.signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timeoutMs = request.timeoutMs ?? this.#options.timeoutMs ?? 30_000;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    try {
      let response: Response;
      let text: string;
      try {
        response = await fetch(this.url(request.path, request.query), {
          method,
          headers,
          body,
          signal: controller.signal,
          ...duplex,
        } as RequestInit);
        // Read the whole body inside the timeout: a connection cut mid-body is a network error.
        text = method === 'HEAD' || response.status === 304 ? '' : await response.text();
      } catch (error) {
        if (timedOut) {
          this.#reached(null);
          throw new TimeoutError(`No response within ${timeoutMs} ms: ${method} ${request.path}`);
        }
        if (error instanceof QuireError) throw error;
        if (request.signal?.aborted) throw new SyncAbortedError(`${method} ${request.path} aborted`);
        this.#reached(null);
        throw new NetworkError(`${method} ${request.path} failed: ${(error as Error).message}`, { cause: error });
      }
      this.#reached(response.status);
      this.backoff.observe(response.headers);
      let parsed: unknown = null;
      if (text !== '') {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = text;
        }
      }
      if (response.status === 412) throw new PreconditionFailedError(parsed, response.headers);
      if (response.status >= 400) throw new ServerError(response.status, parsed, response.headers);
      return { status: response.status, headers: response.headers, body: parsed as T };
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Opens a long-lived response (a server-sent event stream): resolves once the headers arrived
   * (within `timeoutMs`), with the body left unread; `signal` ends it. Non-2xx statuses throw as
   * `request()` does. No retries: the caller reconnects. `anonymous`: no credentials (another
   * origin, e.g. the files' `base_url`).
   */
  async stream(
    path: string,
    options: { headers?: Record<string, string>; signal?: AbortSignal; anonymous?: boolean } = {},
  ): Promise<Response> {
    const fetch = await this.#fetch();
    const headers: Record<string, string> = {
      ...this.#options.headers,
      Accept: 'text/event-stream',
      ...options.headers,
    };
    const authorization = options.anonymous ? null : await authorizationHeader(this.#options.auth);
    if (authorization) headers.Authorization = authorization;
    const controller = new AbortController();
    const onAbort = () => controller.abort(options.signal?.reason);
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const timeoutMs = this.#options.timeoutMs ?? 30_000;
    const timer = setTimeout(
      () => controller.abort(new TimeoutError(`No response within ${timeoutMs} ms: GET ${path}`)),
      timeoutMs,
    );
    let response: Response;
    try {
      response = await fetch(this.url(path), { method: 'GET', headers, signal: controller.signal });
    } catch (error) {
      options.signal?.removeEventListener('abort', onAbort);
      if (options.signal?.aborted && !(error instanceof QuireError)) throw new SyncAbortedError(`GET ${path} aborted`);
      this.#reached(null); // refused, reset, or no headers within the timeout
      if (error instanceof QuireError) throw error;
      throw new NetworkError(`GET ${path} failed: ${(error as Error).message}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
    this.#reached(response.status);
    this.backoff.observe(response.headers);
    if (response.status >= 400) {
      const text = await response.text().catch(() => '');
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON
      }
      throw new ServerError(response.status, parsed, response.headers);
    }
    return response;
  }

  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = null;
    if (pool) await (await pool).close();
  }
}

/** The request's body as fetch takes it (setting its Content-Type in `headers`). */
function encodeBody(
  request: HttpRequest,
  headers: Record<string, string>,
): { body: string | Blob | ReadableStream<Uint8Array> | undefined; duplex: { duplex?: 'half' } } {
  const report = request.onUploadProgress;
  if (request.body instanceof Blob && report && isNode()) {
    // Node's fetch sends a stream as it reads it: progress chunk by chunk. (Browsers' fetch
    // streams a request body over HTTP/2 only, so there a Blob goes whole.)
    let loaded = 0;
    headers['Content-Type'] = request.body.type;
    const body = request.body.stream().pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          controller.enqueue(chunk);
          loaded += chunk.length;
          report(loaded);
        },
      }),
    );
    return { body, duplex: { duplex: 'half' } };
  }
  if (request.body instanceof Blob) return { body: request.body, duplex: {} };
  if (request.body === undefined) return { body: undefined, duplex: {} };
  headers['Content-Type'] = 'application/json';
  return { body: JSON.stringify(request.body), duplex: {} };
}

/** `"123"` → 123 (ETag of a Kinto list or object), null when absent or not a quoted integer. */
export function parseETag(value: string | null): number | null {
  if (value === null) return null;
  const match = /^(?:W\/)?"?(\d+)"?$/.exec(value.trim());
  return match ? Number(match[1]) : null;
}
