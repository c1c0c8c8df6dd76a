/**
 * The remote API of administration tools (the console): any object by its path (buckets,
 * collections, groups, records, accounts), lists one page at a time with their Next-Page link,
 * counts (HEAD), the history, `GET /permissions`, and batches that can be cancelled. Beside
 * `Remote`, not in it: an app that only syncs never loads this module (`@quire/client/admin`).
 */
import { type BatchRequest, type BatchResponse, sendBatch } from '../transport/batch.js';
import { endpoints, quoteETag } from '../transport/endpoints.js';
import { type HttpOptions, HttpTransport } from '../transport/http.js';
import type { Account, JsonPatchOperation, KintoObject, ObjectResponse, Permissions, ServerInfo } from '../wire.js';
import { Remote } from './remote.js';

/** One object with its `ETag` (the version to send back in `If-Match`). */
export interface ObjectWithVersion<T = KintoObject> {
  data: T;
  permissions: Permissions;
  etag: string | null;
}

/** One page of a plural endpoint. */
export interface Page<T> {
  data: T[];
  /** The Next-Page URL (absolute), or null on the last page. */
  nextPage: string | null;
  etag: string | null;
}

export interface PathWriteOptions {
  /** Fail with 412 unless the object is at this version. */
  ifMatch?: number;
  /** Fail with 412 if the object exists. */
  ifNoneMatch?: boolean;
  signal?: AbortSignal;
}

function preconditions(options: PathWriteOptions): Record<string, string> {
  if (options.ifMatch !== undefined) return { 'If-Match': quoteETag(options.ifMatch) };
  if (options.ifNoneMatch) return { 'If-None-Match': '*' };
  return {};
}

const signalOf = (signal: AbortSignal | undefined) => (signal ? { signal } : {});
const account = (id: string) => `/accounts/${encodeURIComponent(id)}`;

export class AdminRemote extends Remote {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    super(http);
    this.#http = http;
  }

  /** The server root, e.g. `https://host/v1`. */
  get server(): string {
    return this.#http.remote;
  }

  /** `GET /`, read afresh (after signing in, the `user` changes). */
  async hello(signal?: AbortSignal): Promise<ServerInfo> {
    return (await this.#http.request<ServerInfo>({ path: endpoints.root(), ...signalOf(signal) })).body;
  }

  /** One object by its path (`/buckets/b/collections/c`…), with its permissions and ETag. */
  async getObject<T = KintoObject>(path: string, signal?: AbortSignal): Promise<ObjectWithVersion<T>> {
    const response = await this.#http.request<ObjectResponse<T>>({ path, ...signalOf(signal) });
    return {
      data: response.body.data,
      permissions: response.body.permissions ?? {},
      etag: response.headers.get('etag'),
    };
  }

  /** One page of a plural endpoint (`path?query`), or the page a Next-Page URL names. */
  async page<T = KintoObject>(pathOrUrl: string, signal?: AbortSignal): Promise<Page<T>> {
    const response = await this.#http.request<{ data?: T[] }>({ path: pathOrUrl, ...signalOf(signal) });
    return {
      data: response.body.data ?? [],
      nextPage: response.headers.get('next-page'),
      etag: response.headers.get('etag'),
    };
  }

  /** `Total-Objects` of a plural endpoint (HEAD), or null when the server does not say or refuses. */
  async count(pathWithQuery: string, signal?: AbortSignal): Promise<number | null> {
    try {
      const response = await this.#http.request({ method: 'HEAD', path: pathWithQuery, ...signalOf(signal) });
      const total = response.headers.get('total-objects') ?? response.headers.get('total-records');
      return total === null ? null : Number(total);
    } catch (error) {
      if (signal?.aborted) throw error;
      return null;
    }
  }

  /** Creates an object in a plural endpoint with an id chosen by the server (`POST`). */
  async createIn<T = KintoObject>(
    listPath: string,
    data: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<ObjectResponse<T>> {
    return (
      await this.#http.request<ObjectResponse<T>>({
        method: 'POST',
        path: listPath,
        body: { data },
        ...signalOf(signal),
      })
    ).body;
  }

  /** Replaces an object's attributes (`PUT`, creating it when absent). */
  async putObject<T = KintoObject>(
    path: string,
    data: Record<string, unknown>,
    options: PathWriteOptions = {},
  ): Promise<ObjectResponse<T>> {
    const request = {
      method: 'PUT' as const,
      path,
      headers: preconditions(options),
      body: { data },
      ...signalOf(options.signal),
    };
    return (await this.#http.request<ObjectResponse<T>>(request)).body;
  }

  /** Merges `data` and replaces the permissions it names (`PATCH`, §4.4). */
  async patchObject<T = KintoObject>(
    path: string,
    patch: { data?: Record<string, unknown>; permissions?: Permissions },
    options: PathWriteOptions = {},
  ): Promise<ObjectResponse<T>> {
    const request = {
      method: 'PATCH' as const,
      path,
      headers: preconditions(options),
      body: patch,
      ...signalOf(options.signal),
    };
    return (await this.#http.request<ObjectResponse<T>>(request)).body;
  }

  /** Applies JSON-Patch operations (RFC 6902), e.g. one principal added to one permission. */
  async jsonPatch<T = KintoObject>(
    path: string,
    operations: readonly JsonPatchOperation[],
    options: PathWriteOptions = {},
  ): Promise<ObjectResponse<T>> {
    // A Blob is sent as it is, its type as the Content-Type (JSON bodies are application/json).
    const body = new Blob([JSON.stringify(operations)], { type: 'application/json-patch+json' });
    const request = {
      method: 'PATCH' as const,
      path,
      headers: preconditions(options),
      body,
      ...signalOf(options.signal),
    };
    return (await this.#http.request<ObjectResponse<T>>(request)).body;
  }

  async deleteObject(path: string, options: PathWriteOptions = {}): Promise<void> {
    await this.#http.request({ method: 'DELETE', path, headers: preconditions(options), ...signalOf(options.signal) });
  }

  // Accounts (the `accounts` capability)
  createAccount(id: string, password: string): Promise<ObjectResponse<Account>> {
    return this.putObject<Account>(account(id), { password }, { ifNoneMatch: true });
  }
  setAccountPassword(id: string, password: string): Promise<ObjectResponse<Account>> {
    return this.patchObject<Account>(account(id), { data: { password } });
  }
  /** Mails a temporary password (the validation flow of the accounts capability). */
  async resetAccountPassword(id: string): Promise<void> {
    await this.#http.request({ method: 'POST', path: `${account(id)}/reset-password` });
  }
  deleteAccount(id: string): Promise<void> {
    return this.deleteObject(account(id));
  }

  /** One `/batch` request (at most `batch_max_requests` sub-requests), which `signal` can abandon. */
  sendBatch(requests: readonly BatchRequest[], signal?: AbortSignal): Promise<BatchResponse[]> {
    return sendBatch(this.#http, requests, signal);
  }
}

/** An AdminRemote on its own transport (no local replica, no IndexedDB). */
export function createAdminRemote(options: HttpOptions): AdminRemote {
  return new AdminRemote(new HttpTransport(options));
}
