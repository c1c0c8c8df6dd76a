/** Writes of one object with optimistic concurrency (§6): If-Match on the version that was read. */
import { type Api, ApiError, ifMatch, type KintoObject, type Permissions } from './api.js';

export type SaveResult<T extends KintoObject> =
  | { status: 'saved'; object: T; permissions: Permissions }
  | { status: 'conflict'; theirs: T | null }
  | { status: 'error'; error: ApiError };

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
export async function putObject<T extends KintoObject>(api: Api, path: string, data: Record<string, unknown>, lastModified: number | null | undefined): Promise<SaveResult<T>> {
  const headers = lastModified === undefined ? {} : lastModified === null ? { 'If-None-Match': '*' } : ifMatch(lastModified);
  try {
    const response = await api.request<{ data: T; permissions?: Permissions }>('PUT', path, { body: { data: editableFields(data) }, headers });
    return { status: 'saved', object: response.body.data, permissions: response.body.permissions ?? {} };
  } catch (error) {
    if (error instanceof ApiError && error.status === 412) return { status: 'conflict', theirs: await currentVersion<T>(api, path) };
    return { status: 'error', error: error instanceof ApiError ? error : new ApiError(0, String(error)) };
  }
}

export async function currentVersion<T extends KintoObject>(api: Api, path: string): Promise<T | null> {
  try {
    return (await api.getObject<T>(path)).data;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 403)) return null;
    throw error;
  }
}

/** PATCH only the permissions (the JSON merge of §4.4: listed names are replaced). */
export async function patchPermissions<T extends KintoObject>(
  api: Api,
  path: string,
  permissions: Permissions,
  lastModified: number,
): Promise<SaveResult<T>> {
  try {
    const response = await api.request<{ data: T; permissions?: Permissions }>('PATCH', path, { body: { permissions }, headers: ifMatch(lastModified) });
    return { status: 'saved', object: response.body.data, permissions: response.body.permissions ?? {} };
  } catch (error) {
    if (error instanceof ApiError && error.status === 412) return { status: 'conflict', theirs: await currentVersion<T>(api, path) };
    return { status: 'error', error: error instanceof ApiError ? error : new ApiError(0, String(error)) };
  }
}

export async function deleteObject(api: Api, path: string, lastModified?: number): Promise<void> {
  await api.request('DELETE', path, lastModified === undefined ? {} : { headers: ifMatch(lastModified) });
}

/** `/buckets/b/collections/c/records/r` from ids. */
export const paths = {
  bucket: (bid: string) => `/buckets/${encodeURIComponent(bid)}`,
  collection: (bid: string, cid: string) => `/buckets/${encodeURIComponent(bid)}/collections/${encodeURIComponent(cid)}`,
  record: (bid: string, cid: string, rid: string) => `/buckets/${encodeURIComponent(bid)}/collections/${encodeURIComponent(cid)}/records/${encodeURIComponent(rid)}`,
  group: (bid: string, gid: string) => `/buckets/${encodeURIComponent(bid)}/groups/${encodeURIComponent(gid)}`,
};

/** The protocol URI of an object (as in permissions and history): ids unencoded. */
export const uris = {
  bucket: (bid: string) => `/buckets/${bid}`,
  collection: (bid: string, cid: string) => `/buckets/${bid}/collections/${cid}`,
  record: (bid: string, cid: string, rid: string) => `/buckets/${bid}/collections/${cid}/records/${rid}`,
  group: (bid: string, gid: string) => `/buckets/${bid}/groups/${gid}`,
};
