/** The options of the remote API's calls (remote.ts), apart so that code it loads on first use can share them. */
import type { AttachmentInfo, Permissions } from '../wire.js';
import type { TransferProgress } from './files.js';

export interface WriteOptions {
  permissions?: Permissions;
  /** Fail with 412 unless the object is at this version. */
  ifMatch?: number;
  /** Fail with 412 if the object exists. */
  ifNoneMatch?: boolean;
}

export interface ListOptions {
  /** Raw query parameters: filters (`min_n`, `in_id`…), `_sort`, `_since`, `_fields`, `_limit`. */
  query?: Record<string, string | number>;
  /** Stop after this many pages (default: all). */
  pages?: number;
}

export interface AddAttachmentOptions extends WriteOptions {
  /** Default: the File's name. */
  filename?: string;
  /** Default: the Blob's type, else `application/octet-stream`. */
  mimetype?: string;
  /** Fields set on the record with the file (as a PATCH would). */
  data?: Record<string, unknown>;
  /**
   * Called when the upload starts, as the body is sent (Node; browsers' fetch reports nothing in
   * between), and once the server has stored the file.
   */
  onProgress?: (progress: TransferProgress) => void;
  /** Default: 30 s plus 20 s per MB. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface GetAttachmentOptions {
  /** The record's `attachment` when the caller holds it (saves reading the record). */
  attachment?: AttachmentInfo;
  /** Called for every chunk received. */
  onProgress?: (progress: TransferProgress) => void;
  signal?: AbortSignal;
}
