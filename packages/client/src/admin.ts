/**
 * `@quire/client/admin`: the remote API alone, for administration tools (the Quire Console): no
 * local replica, no IndexedDB, so none of it comes along. The wire types are `@quire/client`'s.
 */
export {
  AdminRemote,
  createAdminRemote,
  type ObjectWithVersion,
  type Page,
  type PathWriteOptions,
} from './remote/admin.js';
export {
  Remote,
  type WriteOptions,
  type ListOptions,
  type AddAttachmentOptions,
  type GetAttachmentOptions,
} from './remote/remote.js';
export type { TransferProgress, FileInput } from './remote/files.js';
export { FILTER_OPERATORS, type FilterOperator, parseFilterName } from './remote/filters.js';
export { endpoints } from './transport/endpoints.js';
export { parseETag, type HttpOptions, type FetchLike } from './transport/http.js';
export type { Auth } from './transport/auth.js';
export type * from './wire.js';
export {
  QuireError,
  NetworkError,
  TimeoutError,
  ServerError,
  PreconditionFailedError,
  BackoffError,
  SyncAbortedError,
  AttachmentError,
} from './errors.js';
