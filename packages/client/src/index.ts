/** Public surface of @quire/client. */
export { createClient, QuireClient, Bucket, type ClientOptions, type CollectionOptions } from './client.js';
export {
  Collection,
  type ChangeEvent,
  type CollectionEvents,
  type ListQuery,
  type ManualResolution,
  type RemoteChangeEvent,
} from './api/collection.js';
export type { SyncStatus, SyncFailure } from './api/sync-status.js';
export type { StorageFullEvent } from './api/events.js';
export { LiveQuery, type LiveQueryState, type ObservableLike } from './api/live-query.js';
export { LiveChanges } from './sync/live-changes.js';
export type { ChangeEntry } from './sync/change-monitor.js';
export { MONITOR_PATH } from './transport/endpoints.js';
export type { LiveMode, LiveOptions, LiveState, LiveStatus } from './sync/live.js';
export type { ConflictStrategy, MergeFunction, Conflict } from './sync/conflicts.js';
export type {
  SyncOptions,
  SyncResult,
  SyncProgress,
  ConflictReport,
  SyncErrorReport,
  ChangeNotice,
} from './sync/engine.js';
export { createManualOnlineSource, browserOnlineSource, type OnlineSource } from './online.js';
export type { AutoSyncOptions } from './sync/scheduler.js';
export type { FilterValue, SubsetFilters } from './sync/subset.js';
export {
  Remote,
  type WriteOptions,
  type ListOptions,
  type AddAttachmentOptions,
  type GetAttachmentOptions,
} from './remote/remote.js';
/** The wire types (every shape the server sends and accepts), from one module. */
export type * from './wire.js';
export type { TransferProgress, FileInput } from './remote/files.js';
export { FILTER_OPERATORS, type FilterOperator, parseFilterName } from './remote/filters.js';
export { endpoints } from './transport/endpoints.js';
export type { Auth } from './transport/auth.js';
export type { FetchLike } from './transport/http.js';
export type { LockManagerLike } from './tabs/locks.js';
export type { LocalRecord, RemoteRecord, ConflictEntry } from './store/types.js';
export type { RemoteTransformer, TransformContext } from './transform/transformers.js';
export { exportDump, readDump, type Dump, type DumpInput, type DumpSource, type ExportOptions } from './dump/dump.js';
export {
  encryptionTransformer,
  deriveKey,
  DEFAULT_PBKDF2_ITERATIONS,
  type EncryptionOptions,
} from './transform/encryption.js';
export {
  QuireError,
  DecryptionError,
  NetworkError,
  TimeoutError,
  ServerError,
  PreconditionFailedError,
  BackoffError,
  StoreError,
  SyncAbortedError,
  AttachmentError,
} from './errors.js';
