/**
 * The console's only way to the server: the public Kinto protocol (API 1.22) over fetch, with
 * the signed-in user's `Authorization` header. Nothing here is specific to Quire, so the console
 * also manages any other deployment that allows its origin (CORS).
 *
 * `credentials: 'omit'`: the header is sent explicitly, and a 401 with `WWW-Authenticate: Basic`
 * must not make the browser open its own password prompt.
 */

export interface KintoObject {
  id: string;
  last_modified: number;
  [field: string]: unknown;
}

export type Permissions = Record<string, string[]>;

export interface Capability {
  description?: string;
  url?: string;
  [key: string]: unknown;
}

export interface OpenIdProvider {
  name: string;
  issuer?: string;
  auth_path: string;
  client_id?: string;
  header_type?: string;
  userinfo_endpoint?: string;
}

export interface Hello {
  project_name: string;
  project_version: string;
  http_api_version: string;
  project_docs?: string;
  url: string;
  settings: { batch_max_requests: number | null; readonly: boolean; explicit_permissions?: boolean };
  capabilities: Record<string, Capability>;
  user?: { id: string; principals: string[]; bucket?: string; profile?: Record<string, unknown> };
  eos?: string;
}

/** An error answer of the server (§1), or a network failure (status 0). */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly body: Record<string, unknown> | null = null,
    readonly headers: Headers | null = null,
  ) {
    super(message);
  }

  get errno(): number | undefined {
    return typeof this.body?.errno === 'number' ? this.body.errno : undefined;
  }

  /** What to tell a person: the server's message, with the field it names. */
  get explanation(): string {
    if (this.status === 0) return this.message;
    const details = this.body?.details as { description?: string; name?: string; location?: string }[] | Record<string, unknown> | undefined;
    const first = Array.isArray(details) ? details[0] : undefined;
    if (this.status === 400 && first?.description) return `${first.name ? `${first.name}: ` : ''}${first.description}`;
    return this.message;
  }
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Default `application/json` when there is a body. */
  contentType?: string;
  signal?: AbortSignal;
}

export interface Page<T> {
  data: T[];
  /** The Next-Page URL (absolute), or null on the last page. */
  nextPage: string | null;
  etag: string | null;
}

export interface BatchRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface BatchResponse {
  status: number;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/** `"1700000000000"` → 1700000000000 */
export function parseEtag(etag: string | null): number | null {
  if (!etag) return null;
  const match = /^(?:W\/)?"?(\d+)"?$/.exec(etag.trim());
  return match ? Number(match[1]) : null;
}

/** The server root, always ending with `/v1` (no slash): `http://h:8888/v1/` → `http://h:8888/v1`. */
export function normaliseServerUrl(input: string): string {
  let url = input.trim();
  if (!/^https?:\/\//i.test(url)) url = `http://${url}`;
  url = url.replace(/\/+$/, '');
  if (!/\/v1$/.test(url)) url = `${url}/v1`;
  return url;
}

export class Api {
  constructor(
    /** e.g. `http://127.0.0.1:8888/v1` */
    readonly server: string,
    /** The `Authorization` header, or null when anonymous. */
    readonly authorization: string | null,
  ) {}

  url(path: string): string {
    if (/^https?:\/\//.test(path)) return path;
    return `${this.server}${path.startsWith('/') ? path : `/${path}`}`;
  }

  async request<T = Record<string, unknown>>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
    if (this.authorization) headers.Authorization = this.authorization;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['Content-Type'] = options.contentType ?? 'application/json';
      body = JSON.stringify(options.body);
    }
    let response: Response;
    try {
      response = await fetch(this.url(path), { method, headers, body, credentials: 'omit', cache: 'no-store', signal: options.signal });
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error;
      throw new ApiError(0, `Cannot reach the server at ${this.server} (${(error as Error).message}). Is it running, and does it allow this origin (CORS)?`);
    }
    const text = method === 'HEAD' ? '' : await response.text();
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (!response.ok && response.status !== 304) {
      const errorBody = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
      const message =
        typeof errorBody?.message === 'string' ? errorBody.message : `${response.status} ${response.statusText || 'error'}${typeof parsed === 'string' ? `: ${parsed.slice(0, 200)}` : ''}`;
      throw new ApiError(response.status, message, errorBody, response.headers);
    }
    return { status: response.status, headers: response.headers, body: parsed as T };
  }

  get<T = Record<string, unknown>>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, options);
  }

  async hello(signal?: AbortSignal): Promise<Hello> {
    return (await this.get<Hello>('/', { signal })).body;
  }

  /** One object with its ETag: `{data, permissions}`. */
  async getObject<T extends KintoObject = KintoObject>(path: string, signal?: AbortSignal): Promise<{ data: T; permissions: Permissions; etag: string | null }> {
    const response = await this.get<{ data: T; permissions?: Permissions }>(path, { signal });
    return { data: response.body.data, permissions: response.body.permissions ?? {}, etag: response.headers.get('ETag') };
  }

  /** One page of a plural endpoint; `pathOrUrl` may be a Next-Page URL. */
  async page<T = KintoObject>(pathOrUrl: string, signal?: AbortSignal): Promise<Page<T>> {
    const response = await this.get<{ data: T[] }>(pathOrUrl, { signal });
    return { data: response.body.data ?? [], nextPage: response.headers.get('Next-Page'), etag: response.headers.get('ETag') };
  }

  /** Every object of a plural endpoint, following Next-Page (for short lists: groups, collections…). */
  async all<T = KintoObject>(pathOrUrl: string, options: { signal?: AbortSignal; max?: number } = {}): Promise<T[]> {
    const items: T[] = [];
    let next: string | null = pathOrUrl;
    while (next && items.length < (options.max ?? Infinity)) {
      const page: Page<T> = await this.page<T>(next, options.signal);
      items.push(...page.data);
      next = page.nextPage;
    }
    return items;
  }

  /** `Total-Objects` of a plural endpoint (HEAD), or null when the server does not say. */
  async count(pathWithQuery: string, signal?: AbortSignal): Promise<number | null> {
    try {
      const response = await this.request('HEAD', pathWithQuery, { signal });
      const total = response.headers.get('Total-Objects') ?? response.headers.get('Total-Records');
      return total === null ? null : Number(total);
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error;
      return null;
    }
  }

  async batch(requests: BatchRequest[], signal?: AbortSignal): Promise<BatchResponse[]> {
    const response = await this.request<{ responses: BatchResponse[] }>('POST', '/batch', { body: { requests }, signal });
    return response.body.responses;
  }
}

/** `If-Match` of an object version. */
export function ifMatch(lastModified: number): Record<string, string> {
  return { 'If-Match': `"${lastModified}"` };
}
