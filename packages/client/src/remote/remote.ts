/**
 * Direct access to the server (no local replica): server info, buckets, collections, groups,
 * records, permissions and raw batches, for apps that administer what they sync.
 */
import { type BatchRequest, type BatchResponse, chunk, sendBatch } from '../transport/batch.js';
import { endpoints, quoteETag } from '../transport/endpoints.js';
import type { HttpRequest, HttpTransport } from '../transport/http.js';
import { AttachmentError } from '../errors.js';
import type {
  AttachmentInfo,
  AttachmentsCapability,
  KintoObject,
  ObjectResponse,
  Permissions,
  ServerInfo,
} from '../wire.js';
import type { FileInput } from './files.js';
import type { AddAttachmentOptions, GetAttachmentOptions, ListOptions, WriteOptions } from './options.js';

export type { AddAttachmentOptions, GetAttachmentOptions, ListOptions, WriteOptions };

export type { KintoObject, ObjectResponse, Permissions, ServerInfo };

function preconditions(options: WriteOptions): Record<string, string> {
  if (options.ifMatch !== undefined) return { 'If-Match': quoteETag(options.ifMatch) };
  if (options.ifNoneMatch) return { 'If-None-Match': '*' };
  return {};
}

export class Remote {
  readonly #http: HttpTransport;
  #info: Promise<ServerInfo> | null = null;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** `GET /` (cached; `refresh` to re-read). */
  serverInfo(refresh = false): Promise<ServerInfo> {
    if (refresh || !this.#info) {
      this.#info = this.#http.request<ServerInfo>({ path: endpoints.root() }).then((response) => response.body);
      this.#info.catch(() => (this.#info = null));
    }
    return this.#info;
  }

  async request<T = unknown>(request: HttpRequest): Promise<T> {
    return (await this.#http.request<T>(request)).body;
  }

  async #list<T>(path: string, options: ListOptions = {}): Promise<T[]> {
    const items: T[] = [];
    let response = await this.#http.request<{ data: T[] }>({
      path,
      ...(options.query ? { query: options.query } : {}),
    });
    for (let page = 1; ; page++) {
      items.push(...response.body.data);
      const next = response.headers.get('next-page');
      if (!next || (options.pages !== undefined && page >= options.pages)) return items;
      response = await this.#http.request<{ data: T[] }>({ path: next });
    }
  }

  #put<T>(
    path: string,
    data: Record<string, unknown> | undefined,
    options: WriteOptions = {},
  ): Promise<ObjectResponse<T>> {
    const body: Record<string, unknown> = {};
    if (data) body.data = data;
    if (options.permissions) body.permissions = options.permissions;
    return this.request<ObjectResponse<T>>({ method: 'PUT', path, headers: preconditions(options), body });
  }

  #patch<T>(
    path: string,
    data: Record<string, unknown> | undefined,
    options: WriteOptions = {},
  ): Promise<ObjectResponse<T>> {
    const body: Record<string, unknown> = {};
    if (data) body.data = data;
    if (options.permissions) body.permissions = options.permissions;
    return this.request<ObjectResponse<T>>({ method: 'PATCH', path, headers: preconditions(options), body });
  }

  #delete(path: string, options: WriteOptions = {}): Promise<ObjectResponse<KintoObject>> {
    return this.request({ method: 'DELETE', path, headers: preconditions(options) });
  }

  // Buckets
  listBuckets(options?: ListOptions) {
    return this.#list<KintoObject>(endpoints.buckets(), options);
  }
  getBucket(bid: string) {
    return this.request<ObjectResponse>({ path: endpoints.bucket(bid) });
  }
  createBucket(bid: string, data?: Record<string, unknown>, options: WriteOptions = { ifNoneMatch: true }) {
    return this.#put(endpoints.bucket(bid), data, options);
  }
  updateBucket(bid: string, data: Record<string, unknown>, options?: WriteOptions) {
    return this.#put(endpoints.bucket(bid), data, options);
  }
  deleteBucket(bid: string, options?: WriteOptions) {
    return this.#delete(endpoints.bucket(bid), options);
  }

  // Collections
  listCollections(bid: string, options?: ListOptions) {
    return this.#list<KintoObject>(endpoints.collections(bid), options);
  }
  getCollection(bid: string, cid: string) {
    return this.request<ObjectResponse>({ path: endpoints.collection(bid, cid) });
  }
  createCollection(
    bid: string,
    cid: string,
    data?: Record<string, unknown>,
    options: WriteOptions = { ifNoneMatch: true },
  ) {
    return this.#put(endpoints.collection(bid, cid), data, options);
  }
  updateCollection(bid: string, cid: string, data: Record<string, unknown>, options?: WriteOptions) {
    return this.#put(endpoints.collection(bid, cid), data, options);
  }
  deleteCollection(bid: string, cid: string, options?: WriteOptions) {
    return this.#delete(endpoints.collection(bid, cid), options);
  }

  // Groups
  listGroups(bid: string, options?: ListOptions) {
    return this.#list<KintoObject & { members: string[] }>(endpoints.groups(bid), options);
  }
  getGroup(bid: string, gid: string) {
    return this.request<ObjectResponse<KintoObject & { members: string[] }>>({ path: endpoints.group(bid, gid) });
  }
  createGroup(bid: string, gid: string, members: string[], options: WriteOptions = { ifNoneMatch: true }) {
    return this.#put<KintoObject & { members: string[] }>(endpoints.group(bid, gid), { members }, options);
  }
  updateGroup(bid: string, gid: string, data: { members: string[]; [field: string]: unknown }, options?: WriteOptions) {
    return this.#put<KintoObject & { members: string[] }>(endpoints.group(bid, gid), data, options);
  }
  deleteGroup(bid: string, gid: string, options?: WriteOptions) {
    return this.#delete(endpoints.group(bid, gid), options);
  }

  // Records
  listRecords(bid: string, cid: string, options?: ListOptions) {
    return this.#list<KintoObject>(endpoints.records(bid, cid), options);
  }
  getRecord(bid: string, cid: string, id: string) {
    return this.request<ObjectResponse>({ path: endpoints.record(bid, cid, id) });
  }
  putRecord(bid: string, cid: string, id: string, data: Record<string, unknown>, options?: WriteOptions) {
    return this.#put(endpoints.record(bid, cid, id), data, options);
  }
  patchRecord(bid: string, cid: string, id: string, data: Record<string, unknown>, options?: WriteOptions) {
    return this.#patch(endpoints.record(bid, cid, id), data, options);
  }
  deleteRecord(bid: string, cid: string, id: string, options?: WriteOptions) {
    return this.#delete(endpoints.record(bid, cid, id), options);
  }

  /** Replaces the permissions of a bucket, collection, group or record (`path` as from `endpoints`). */
  setPermissions(path: string, permissions: Permissions, options: WriteOptions = {}) {
    return this.#patch(path, undefined, { ...options, permissions });
  }

  // Attachments (the `attachments` capability)
  /** The server's `attachments` capability; AttachmentError `QUIRE_ERR_ATTACHMENT_UNSUPPORTED` without one. */
  async attachments(): Promise<AttachmentsCapability> {
    const capability = (await this.serverInfo()).capabilities.attachments;
    if (!capability)
      throw new AttachmentError(
        'QUIRE_ERR_ATTACHMENT_UNSUPPORTED',
        'The server does not accept attachments (no "attachments" capability)',
      );
    return capability;
  }

  /** Uploads a file onto a record (creating it if needed; `ifMatch` guards it): the record's new `attachment`. */
  async addAttachment(
    bid: string,
    cid: string,
    id: string,
    file: FileInput,
    options: AddAttachmentOptions = {},
  ): Promise<AttachmentInfo> {
    await this.attachments();
    const { upload } = await import('./attachment-transfers.js'); // loaded on first use
    return upload(this.#http, endpoints.attachment(bid, cid, id), preconditions(options), file, options);
  }

  /** Deletes a record's file (its `attachment` becomes null). */
  async removeAttachment(bid: string, cid: string, id: string, options: WriteOptions = {}): Promise<void> {
    await this.attachments();
    await this.request({ method: 'DELETE', path: endpoints.attachment(bid, cid, id), headers: preconditions(options) });
  }

  /**
   * Downloads a record's file: from `base_url` (credentials only to the API's own origin), or
   * from `GET {record}/attachment` when files are private. Checked against the record's `hash`.
   */
  async getAttachment(bid: string, cid: string, id: string, options: GetAttachmentOptions = {}): Promise<Blob> {
    const capability = await this.attachments();
    const attachment =
      options.attachment ?? ((await this.getRecord(bid, cid, id)).data.attachment as AttachmentInfo | null | undefined);
    if (!attachment) throw new AttachmentError('QUIRE_ERR_ATTACHMENT_NONE', `Record ${id} has no attachment`);
    const url = capability.private
      ? this.#http.url(endpoints.attachment(bid, cid, id))
      : new URL(attachment.location, capability.base_url).href;
    const { download } = await import('./attachment-transfers.js'); // loaded on first use
    return download(this.#http, url, attachment, id, options);
  }

  /** Sends sub-requests through `/batch`, split by the server's `batch_max_requests`. */
  async batch(requests: readonly BatchRequest[]): Promise<BatchResponse[]> {
    const size = (await this.serverInfo()).settings.batch_max_requests ?? null;
    const responses: BatchResponse[] = [];
    for (const part of chunk(requests, size)) responses.push(...(await sendBatch(this.#http, part)));
    return responses;
  }
}

export { endpoints };
