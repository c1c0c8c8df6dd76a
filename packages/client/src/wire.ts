/**
 * Wire types: the shapes the server sends and accepts (Kinto HTTP API v1 and its
 * `kinto-attachment` plugin), in one place. Types only: nothing here reaches a bundle.
 */

export type Permissions = Partial<Record<'read' | 'write' | 'create' | 'collection:create' | 'group:create' | 'record:create', string[]>>;

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
  url: string;
  settings: { batch_max_requests?: number | null; readonly?: boolean; [key: string]: unknown };
  capabilities: Record<string, unknown> & { attachments?: AttachmentsCapability };
  user?: { id: string; principals?: string[]; bucket?: string };
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
