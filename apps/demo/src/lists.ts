/**
 * The list registry: creating, renaming and deleting the user's own lists, and keeping the lists
 * shared with them up to date.
 *
 * Shared lists are found with `GET /v1/permissions` (every collection the user was granted in
 * someone else's bucket); the title and owner come from the collection's own data, written by
 * the owner when sharing. A shared list the endpoint no longer shows was revoked (or deleted):
 * it leaves the registry and its local copy is removed.
 */
import { endpoints, ServerError, StoreError } from '@quire/client';
import { UserError } from './errors.js';
import { newId } from './ids.js';
import { itemsCollectionOf, type Role } from './model.js';
import { positionAtEnd } from './order.js';
import type { ListRecord, Workspace } from './workspace.js';

function checkTitle(title: string): string {
  const name = title.trim();
  if (name === '') throw new UserError('Give the list a name.');
  if (name.length > 200) throw new UserError('A list name has at most 200 characters.');
  return name;
}

export function requireOnline(action: string): void {
  if (!navigator.onLine) throw new UserError(`${action} needs a connection. Try again once you are online.`);
}

/** A new list of the user's own: works offline, its collection is created on the server at its first sync. */
export async function createList(workspace: Workspace, title: string): Promise<ListRecord> {
  const id = newId();
  return workspace.registry.create({
    id,
    title: checkTitle(title),
    bucket: 'default',
    collection: itemsCollectionOf(id),
    role: 'owner',
    owner: workspace.username ?? 'you',
    position: positionAtEnd(await workspace.registry.list()),
  });
}

export async function renameList(workspace: Workspace, entry: ListRecord, title: string): Promise<void> {
  const name = checkTitle(title);
  await workspace.registry.update(entry.id, { title: name }, { patch: true });
  // People it is shared with read the title from the collection: update it when we can, the
  // next share (or rename) will otherwise.
  if (workspace.myBucket && navigator.onLine) {
    await workspace.client.remote
      .request({ method: 'PATCH', path: endpoints.collection(workspace.myBucket, entry.collection), body: { data: { title: name } } })
      .catch(() => {});
  }
}

/**
 * Deletes one of the user's lists. With an account the collection is deleted on the server too
 * (everyone it is shared with loses it), so that needs a connection.
 */
export async function deleteList(workspace: Workspace, entry: ListRecord): Promise<void> {
  if (entry.role !== 'owner') throw new UserError('Only the owner of a list can delete it.');
  if (workspace.myBucket) {
    requireOnline('Deleting a list');
    workspace.items(entry).stopAutoSync();
    try {
      await workspace.client.remote.deleteCollection(workspace.myBucket, entry.collection);
    } catch (error) {
      // Never synced (no collection on the server yet): nothing to delete there.
      if (!(error instanceof ServerError && (error.status === 404 || error.status === 403))) throw error;
    }
  }
  await workspace.dropList(entry);
}

interface PermissionEntry {
  resource_name: string;
  bucket_id?: string;
  collection_id?: string;
  permissions: string[];
}

interface Share {
  bucket: string;
  collection: string;
  role: Exclude<Role, 'owner'>;
}

const shareKey = (share: { bucket: string; collection: string }) => `${share.bucket}/${share.collection}`;

/** Lists in other people's buckets that this user may read, with their role. */
async function sharedWithMe(workspace: Workspace, myBucket: string): Promise<Map<string, Share>> {
  const body = await workspace.client.remote.request<{ data: PermissionEntry[] }>({ path: '/permissions', query: { resource_name: 'collection' } });
  const shares = new Map<string, Share>();
  for (const entry of body.data) {
    if (!entry.bucket_id || !entry.collection_id || entry.bucket_id === myBucket || !entry.collection_id.startsWith('list-')) continue;
    const share: Share = { bucket: entry.bucket_id, collection: entry.collection_id, role: entry.permissions.includes('write') ? 'write' : 'read' };
    shares.set(shareKey(share), share);
  }
  return shares;
}

/** Adds new shared lists to the registry, updates changed ones, drops revoked ones. */
export async function checkShares(workspace: Workspace): Promise<void> {
  const myBucket = workspace.myBucket;
  if (!myBucket) return;
  let shares: Map<string, Share>;
  try {
    shares = await sharedWithMe(workspace, myBucket);
  } catch {
    return; // Offline or the server is unwell: sync problems already show in the status bar.
  }
  const registry = await workspace.registry.list();
  const known = new Map(registry.filter((entry) => entry.role !== 'owner').map((entry) => [shareKey(entry), entry]));

  for (const [key, entry] of known) {
    if (shares.has(key)) continue;
    await workspace.dropList(entry, `You no longer have access to “${entry.title}”: ${entry.owner} stopped sharing it or deleted it. Its copy was removed from this device.`);
  }

  let position = positionAtEnd(registry);
  for (const [key, share] of shares) {
    let data: Record<string, unknown>;
    try {
      data = (await workspace.client.remote.getCollection(share.bucket, share.collection)).data;
    } catch {
      continue; // Revoked or deleted in the meantime: the next check settles it.
    }
    const title = typeof data.title === 'string' && data.title !== '' ? data.title : 'Untitled list';
    const owner = typeof data.owner === 'string' ? data.owner : 'someone';
    const entry = known.get(key);
    if (!entry) {
      // A fixed id per shared list: two devices adding it converge on one registry record.
      const id = `shared-${share.collection}`;
      try {
        await workspace.registry.create({ id, title, owner, bucket: share.bucket, collection: share.collection, role: share.role, position: position++ });
      } catch (error) {
        // Another tab of this user (same database) added it a moment ago.
        if (error instanceof StoreError && error.code === 'QUIRE_ERR_STORE_EXISTS') continue;
        throw error;
      }
      workspace.notify(`${owner} shared “${title}” with you (${share.role === 'write' ? 'you can edit it' : 'view only'}).`);
    } else if (entry.role !== share.role || entry.title !== title || entry.owner !== owner) {
      await workspace.registry.update(entry.id, { role: share.role, title, owner }, { patch: true });
      if (entry.role !== share.role) workspace.notify(`Your access to “${title}” changed: ${share.role === 'write' ? 'you can now edit it' : 'it is now view only'}.`);
    }
  }
}
