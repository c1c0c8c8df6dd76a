/** Writes of one object with optimistic concurrency (§6): If-Match on the version that was read. */
import type { KintoObject, Permissions } from '@quire/client/admin';
import { type AdminRemote, asError, statusOf } from './remote.js';

type SaveResult<T extends KintoObject> =
  | { status: 'saved'; object: T; permissions: Permissions }
  | { status: 'conflict'; theirs: T | null }
  | { status: 'error'; error: Error };

/** Fields the server owns: never sent back. */
export function editableFields(object: Record<string, unknown>): Record<string, unknown> {
  const { last_modified: _lastModified, ...rest } = object;
  return rest;
}

/**
 * PUT `data` (the object's whole attributes) if the object is still at `lastModified`; on 412
 * answers the server's current version (null when it was deleted meanwhile). `lastModified`
 * null creates (If-None-Match: *); undefined writes unconditionally.
 */
export async function putObject<T extends KintoObject>(
  api: AdminRemote,
  path: string,
  data: Record<string, unknown>,
  lastModified: number | null | undefined,
): Promise<SaveResult<T>> {
  const options =
    lastModified === undefined ? {} : lastModified === null ? { ifNoneMatch: true } : { ifMatch: lastModified };
  try {
    const response = await api.putObject<T>(path, editableFields(data), options);
    return { status: 'saved', object: response.data, permissions: response.permissions ?? {} };
  } catch (error) {
    if (statusOf(error) === 412) return { status: 'conflict', theirs: await currentVersion<T>(api, path) };
    return { status: 'error', error: asError(error) };
  }
}

async function currentVersion<T extends KintoObject>(api: AdminRemote, path: string): Promise<T | null> {
  try {
    return (await api.getObject<T>(path)).data;
  } catch (error) {
    const status = statusOf(error);
    if (status === 404 || status === 403) return null;
    throw error;
  }
}

export async function deleteObject(api: AdminRemote, path: string, lastModified?: number): Promise<void> {
  await api.deleteObject(path, lastModified === undefined ? {} : { ifMatch: lastModified });
}

/** `/buckets/b/collections/c/records/r` from ids: the client's path builders. */
export { endpoints as paths } from '@quire/client/admin';

/** The protocol URI of an object (as in permissions and history): ids unencoded. */
export const uris = {
  bucket: (bid: string) => `/buckets/${bid}`,
  collection: (bid: string, cid: string) => `/buckets/${bid}/collections/${cid}`,
  record: (bid: string, cid: string, rid: string) => `/buckets/${bid}/collections/${cid}/records/${rid}`,
  group: (bid: string, gid: string) => `/buckets/${bid}/groups/${gid}`,
};
