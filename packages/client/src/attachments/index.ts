/**
 * `@quire/client/attachments`: files on records, offline. `attachments({ policy })` is given to a
 * collection (its `attachments` option) and enables `collection.attach`, `detach` and
 * `getAttachment`. A separate entry point: apps without files never download this code.
 */
export { attachments, type AttachmentsOptions, type DownloadPolicy } from './offline-attachments.js';
export type { AttachOptions, GetLocalAttachmentOptions, LocalAttachment } from '../api/attachments-host.js';
export type { AttachmentEvent } from '../api/events.js';
export { isSafeBlobType, safeBlobType } from '../remote/safe-type.js';
