/**
 * The user's own lists in the registry: creating, renaming and deleting them (the lists shared
 * with the user are kept by shared-lists.ts).
 */
import { endpoints, ServerError } from '@quire/client';
import { UserError } from './errors.js';
import { newId } from './ids.js';
import { itemsCollectionOf, type ListRecord } from './model.js';
import { positionAtEnd } from './order.js';
import type { Workspace } from './workspace.js';

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
      .request({
        method: 'PATCH',
        path: endpoints.collection(workspace.myBucket, entry.collection),
        body: { data: { title: name } },
      })
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
