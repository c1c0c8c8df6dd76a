/**
 * Wire types: the shapes the server sends and accepts (Kinto HTTP API v1 and its
 * `kinto-attachment` plugin), in one place. Types only: nothing here reaches a bundle.
 */

/** The protocol's permission names (§9); a server may announce others, hence the index. */
export type PermissionName = 'read' | 'write' | 'create' | 'collection:create' | 'group:create' | 'record:create';

export type Permissions = Partial<Record<PermissionName, string[]>> & Record<string, string[]>;

export interface KintoObject {
  id: string;
  last_modified: number;
  [field: string]: unknown;
}

export interface ObjectResponse<T = KintoObject> {
  data: T;
  permissions?: Permissions;
}

export interface ServerInfo {
  project_name: string;
  project_version: string;
  http_api_version: string;
  project_docs?: string;
  url: string;
  settings: {
    batch_max_requests?: number | null;
    readonly?: boolean;
    explicit_permissions?: boolean;
    [key: string]: unknown;
  };
  capabilities: Record<string, Capability> & { attachments?: AttachmentsCapability };
  user?: { id: string; principals?: string[]; bucket?: string; profile?: Record<string, unknown> };
  /** End of service (`eos` setting), when announced. */
  eos?: string;
}

/** `capabilities.attachments` of `GET /` (`max_size` and `private` are Quire's additions). */
export interface AttachmentsCapability {
  /** Where files are served from, ending with `/`: a file is at `new URL(location, base_url)`. */
  base_url: string;
  description?: string;
  url?: string;
  version?: string;
  gzipped?: boolean;
  /** Largest accepted file in bytes (null: no limit). */
  max_size?: number | null;
  /** Files are served only through `GET {record}/attachment`, to readers of the record. */
  private?: boolean;
}

/** A file as described by the record's `attachment` field (and the upload's 201 response). */
export interface AttachmentInfo {
  filename: string;
  /** SHA-256 of the stored bytes, lowercase hex. */
  hash: string;
  /** Relative to the capability's `base_url`. */
  location: string;
  mimetype: string;
  size: number;
  /** The file as sent, when the server stores it gzipped. */
  original?: { filename: string; hash: string; mimetype: string; size: number };
}

// ---- What administration tools read (the console): every endpoint, not only records -----------

export type { BatchRequest, BatchResponse } from './transport/batch.js';
export type { ErrorBody } from './errors.js';

/** An entry of `capabilities` in `GET /` (each capability adds its own fields). */
export interface Capability {
  description?: string;
  url?: string;
  [key: string]: unknown;
}

/** One of `capabilities.openid.providers`. */
export interface OpenIdProvider {
  name: string;
  issuer?: string;
  auth_path: string;
  client_id?: string;
  header_type?: string;
  userinfo_endpoint?: string;
}

/** An entry of a bucket's `/history` (the `history` capability). */
export interface HistoryEntry extends KintoObject {
  action: 'create' | 'update' | 'delete';
  resource_name: string;
  uri: string;
  user_id: string;
  date?: string;
  target: { data?: Record<string, unknown>; permissions?: Record<string, string[]> };
  collection_id?: string;
  record_id?: string;
  group_id?: string;
}

/** An entry of `GET /permissions` (the `permissions_endpoint` capability): what the caller may do on `uri`. */
export interface PermissionEntry {
  id?: string;
  uri: string;
  resource_name: string;
  bucket_id?: string;
  collection_id?: string;
  group_id?: string;
  record_id?: string;
  permissions: string[];
}

/** An account (the `accounts` capability): the password hash never leaves the server. */
export interface Account extends KintoObject {
  password?: string;
}

/** One operation of a JSON-Patch body (RFC 6902, `application/json-patch+json`, §4.4). */
export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}
