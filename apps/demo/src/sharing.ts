/**
 * Sharing one of the user's lists: the list's collection gets `account:<name>` in its `read` or
 * `write` permission (the server lets a collection's readers read its records, its writers edit
 * them). The owner also writes the list's title and their name into the collection's data,
 * where the people it is shared with read them. Online only: permissions live on the server.
 */
import { endpoints, type Permissions } from '@quire/client';
import { UserError } from './errors.js';
import { requireOnline } from './lists.js';
import type { ListRecord } from './model.js';
import { checkUsername } from './session.js';
import type { Workspace } from './workspace.js';

export type Access = 'write' | 'read';

export interface Grantee {
  username: string;
  access: Access;
}

const ACCOUNT_PREFIX = 'account:';

function ownerBucket(workspace: Workspace, entry: ListRecord): string {
  if (entry.role !== 'owner' || !workspace.myBucket) throw new UserError('Only the owner of a list can share it.');
  return workspace.myBucket;
}

/** Who the list is shared with (read from the collection's permissions on the server). */
export async function listGrantees(workspace: Workspace, entry: ListRecord): Promise<Grantee[]> {
  const bucket = ownerBucket(workspace, entry);
  requireOnline('Seeing who a list is shared with');
  // The first sync creates the collection (through `default`); before it nobody has access.
  const response = await workspace.client.remote.getCollection(bucket, entry.collection).catch(() => null);
  const permissions = response?.permissions ?? {};
  const me = `${ACCOUNT_PREFIX}${workspace.username}`;
  const grantees = new Map<string, Access>();
  for (const principal of permissions.read ?? [])
    if (principal.startsWith(ACCOUNT_PREFIX) && principal !== me) grantees.set(principal, 'read');
  for (const principal of permissions.write ?? [])
    if (principal.startsWith(ACCOUNT_PREFIX) && principal !== me) grantees.set(principal, 'write');
  return [...grantees]
    .map(([principal, access]) => ({ username: principal.slice(ACCOUNT_PREFIX.length), access }))
    .sort((a, b) => a.username.localeCompare(b.username));
}

/** Gives (or changes) `username`'s access, and publishes the title for them. */
export async function shareList(
  workspace: Workspace,
  entry: ListRecord,
  username: string,
  access: Access,
): Promise<void> {
  const bucket = ownerBucket(workspace, entry);
  const name = checkUsername(username);
  if (name === workspace.username) throw new UserError('This is your own list already.');
  requireOnline('Sharing');
  // Push the list first: its collection is created on the server by its first sync.
  await workspace.items(entry).sync();
  await setAccess(workspace, bucket, entry, `${ACCOUNT_PREFIX}${name}`, access);
}

/** Takes `username`'s access away: their next sync no longer sees the list. */
export async function revokeAccess(workspace: Workspace, entry: ListRecord, username: string): Promise<void> {
  const bucket = ownerBucket(workspace, entry);
  requireOnline('Changing who a list is shared with');
  await setAccess(workspace, bucket, entry, `${ACCOUNT_PREFIX}${username}`, null);
}

async function setAccess(
  workspace: Workspace,
  bucket: string,
  entry: ListRecord,
  principal: string,
  access: Access | null,
): Promise<void> {
  const current = (await workspace.client.remote.getCollection(bucket, entry.collection)).permissions ?? {};
  const without = (list: string[] | undefined) => (list ?? []).filter((item) => item !== principal);
  const permissions: Permissions = { read: without(current.read), write: without(current.write) };
  if (access) permissions[access]!.push(principal);
  // A plain JSON PATCH replaces the permission lists it names and merges the data; the server
  // keeps the author (the owner) in `write`.
  await workspace.client.remote.request({
    method: 'PATCH',
    path: endpoints.collection(bucket, entry.collection),
    body: { data: { title: entry.title, owner: workspace.username }, permissions },
  });
}
