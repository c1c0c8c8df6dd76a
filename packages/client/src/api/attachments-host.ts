/**
 * How a collection hosts offline attachments without carrying their code: the `attachments`
 * option (from `@quire/client/attachments`) is a setup function the collection calls with its
 * parts; the collection's `attach`/`detach`/`getAttachment` and its sync delegate to what it
 * returns. Types only.
 */
import type { Remote } from '../remote/remote.js';
import type { FileInput, TransferProgress } from '../remote/files.js';
import type { OnlineSource } from '../online.js';
import type { DexieEnvironment } from '../store/db.js';
import type { LocalCollection, Settlement } from '../store/local-collection.js';
import type { SyncEngine, SyncOptions, SyncResult } from '../sync/engine.js';
import type { AttachmentInfo } from '../wire.js';
import type { AttachmentEvent } from './events.js';

export interface AttachmentsHost {
  bucket: string;
  collection: string;
  /** The replica's database name: the files live in a database beside it. */
  dbName: string;
  env: DexieEnvironment | undefined;
  local: LocalCollection;
  engine: SyncEngine;
  remote: Remote;
  online: OnlineSource;
  emit(event: AttachmentEvent): void;
}

export interface AttachOptions {
  /** Default: the File's name. */
  filename?: string;
  /** Default: the Blob's type, else `application/octet-stream`. */
  mimetype?: string;
}

export interface GetLocalAttachmentOptions {
  signal?: AbortSignal;
  onProgress?: (progress: TransferProgress) => void;
}

/** What the replica knows of a record's file. */
export interface LocalAttachment {
  filename: string;
  mimetype: string;
  size: number;
  hash: string;
  /** Null until the server stored it. */
  location: string | null;
  /** `upload`: attached here, waiting for a sync; `removal`: detached here, waiting; `synced`: as the server has it. */
  state: 'upload' | 'removal' | 'synced';
  /** The bytes are on this device (pending upload or cached). */
  local: boolean;
}

export interface AttachmentsExtension {
  attach(id: string, file: FileInput, options: AttachOptions): Promise<LocalAttachment>;
  detach(id: string): Promise<void>;
  get(id: string, options: GetLocalAttachmentOptions): Promise<Blob>;
  info(id: string): Promise<LocalAttachment | null>;
  /** Runs after each sync of the collection: uploads and removals, then what the policy downloads. */
  afterSync(result: SyncResult, options: SyncOptions): Promise<SyncResult>;
  /** A manual conflict was settled by the app. */
  settled(id: string, settlement: Settlement): Promise<void>;
  close(): void;
}

export type AttachmentsSetup = (host: AttachmentsHost) => AttachmentsExtension;

export type { AttachmentInfo };
