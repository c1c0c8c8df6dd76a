/**
 * The lists other people share with the user, kept in the registry: found with
 * `GET /v1/permissions` (every collection the user was granted in someone else's bucket); the
 * title and owner come from the collection's own data, written by the owner when sharing. A
 * shared list the endpoint no longer shows was revoked (or deleted): it leaves the registry and
 * its local copy is removed. The workspace runs the check after each registry sync.
 */
import { type Collection, type QuireClient, StoreError } from '@quire/client';
import type { ListEntry, ListRecord, Role } from './model.js';
import { positionAtEnd } from './order.js';

/** What keeping the shared lists needs of the workspace. */
interface SharedListsWorkspace {
  readonly client: Pick<QuireClient, 'remote'>;
  readonly registry: Collection<ListEntry>;
  /** The user's personal bucket id; null without an account (nothing is shared then). */
  readonly myBucket: string | null;
  /** Stops syncing a list, forgets its local copy and removes it from the registry. */
  dropList(entry: ListRecord, notice?: string): Promise<void>;
  notify(message: string): void;
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

/** What a change of role means, in a notice. */
const ROLE_CHANGE: Record<Share['role'], string> = { write: 'you can now edit it', read: 'it is now view only' };

const shareKey = (share: { bucket: string; collection: string }) => `${share.bucket}/${share.collection}`;

/** Lists in other people's buckets that this user may read, with their role. */
async function sharedWithMe(workspace: SharedListsWorkspace, myBucket: string): Promise<Map<string, Share>> {
  const body = await workspace.client.remote.request<{ data: PermissionEntry[] }>({
    path: '/permissions',
    query: { resource_name: 'collection' },
  });
  const shares = new Map<string, Share>();
  for (const entry of body.data) {
    if (
      !entry.bucket_id ||
      !entry.collection_id ||
      entry.bucket_id === myBucket ||
      !entry.collection_id.startsWith('list-')
    )
      continue;
    const share: Share = {
      bucket: entry.bucket_id,
      collection: entry.collection_id,
      role: entry.permissions.includes('write') ? 'write' : 'read',
    };
    shares.set(shareKey(share), share);
  }
  return shares;
}

/** Adds new shared lists to the registry, updates changed ones, drops revoked ones. */
export async function checkShares(workspace: SharedListsWorkspace): Promise<void> {
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
    await workspace.dropList(
      entry,
      `You no longer have access to “${entry.title}”: ${entry.owner} stopped sharing it or deleted it. ` +
        'Its copy was removed from this device.',
    );
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
        await workspace.registry.create({
          id,
          title,
          owner,
          bucket: share.bucket,
          collection: share.collection,
          role: share.role,
          position: position++,
        });
      } catch (error) {
        // Another tab of this user (same database) added it a moment ago.
        if (error instanceof StoreError && error.code === 'QUIRE_ERR_STORE_EXISTS') continue;
        throw error;
      }
      workspace.notify(
        `${owner} shared “${title}” with you (${share.role === 'write' ? 'you can edit it' : 'view only'}).`,
      );
    } else if (entry.role !== share.role || entry.title !== title || entry.owner !== owner) {
      await workspace.registry.update(entry.id, { role: share.role, title, owner }, { patch: true });
      if (entry.role !== share.role) workspace.notify(`Your access to “${title}” changed: ${ROLE_CHANGE[share.role]}.`);
    }
  }
}
