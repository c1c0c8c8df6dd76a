/** The demo's records, as stored in Quire collections (plain JSON, snake_case free). */
import type { LocalRecord } from '@quire/client';

/** Who the current user is for a list. */
export type Role = 'owner' | 'write' | 'read';

/**
 * One entry of the user's list registry (collection `lists` of their `default` bucket). Owned
 * lists point at `default`; lists shared with the user point at the owner's real bucket id.
 */
export type ListEntry = {
  title: string;
  bucket: string;
  /** `list-<id of the owner's entry>`: the collection holding the list's items. */
  collection: string;
  role: Role;
  /** Username of the owner (shown as "Shared by …"). */
  owner: string;
  position: number;
};

/** A registry entry as the replica holds it (with its `id`). */
export type ListRecord = LocalRecord<ListEntry>;

/** One task of a list. `done` is 0 or 1 (a number sorts and filters well in IndexedDB). */
export type Item = {
  title: string;
  done: 0 | 1;
  position: number;
};

export const REGISTRY_COLLECTION = 'lists';
export const itemsCollectionOf = (listId: string) => `list-${listId}`;
export const canEdit = (role: Role) => role !== 'read';
