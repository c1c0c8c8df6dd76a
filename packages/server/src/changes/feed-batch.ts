/**
 * What a flush of the change feed carries (feed.ts), in this process and, as one notification
 * `{"o", "e", "d", "g", "a", "b"}` or `{"o", "r", …}`, to the others: and the pure helpers that
 * gather it.
 */
import { AUTHENTICATED, EVERYONE } from '../auth/policy.js';
import type { ResourceEvent } from '../events/types.js';
import { collectionUri } from './entries.js';

export type Change = [bucket: string, collection: string, timestamp: number];
export type DeletionChange = [bucket: string, collection: string, timestamp: number, readers: string[]];

export interface Message {
  o?: string;
  e?: Change[];
  d?: DeletionChange[];
  r?: number;
  g?: string[] | 1;
  a?: string[];
  b?: string[];
}

/** What a flush carries, in this process and to the others. */
export interface Batch {
  changes: Change[];
  deletions: DeletionChange[];
  /** Principals whose groups changed; 'all': every stream's. */
  groups: Set<string> | 'all' | null;
  accounts: string[];
  buckets: string[];
}

export function emptyBatch(): Batch {
  return { changes: [], deletions: [], groups: null, accounts: [], buckets: [] };
}

export function isEmpty(batch: Batch): boolean {
  return (
    batch.changes.length === 0 &&
    batch.deletions.length === 0 &&
    batch.groups === null &&
    batch.accounts.length === 0 &&
    batch.buckets.length === 0
  );
}

export function newestPerCollection(changes: Change[]): Change[] {
  const newest = new Map<string, Change>();
  for (const change of changes) {
    const key = collectionUri(change[0], change[1]);
    const known = newest.get(key);
    if (!known || known[2] < change[2]) newest.set(key, change);
  }
  return [...newest.values()];
}

/** The principals whose groups a group event changes: members added, removed, or all of a deleted group's. */
export function addGroupChange(batch: Batch, impactedObjects: ResourceEvent['impactedObjects']): void {
  if (batch.groups === 'all') return;
  const groups = batch.groups ?? new Set<string>();
  batch.groups = groups;
  const membersOf = (object: unknown) => {
    const members = (object as { members?: unknown } | undefined)?.members;
    return Array.isArray(members) ? members.filter((member): member is string => typeof member === 'string') : [];
  };
  for (const { new: current, old } of impactedObjects) {
    const before = new Set(membersOf(old));
    const after = new Set('deleted' in current && current.deleted ? [] : membersOf(current));
    for (const member of before) if (!after.has(member)) groups.add(member);
    for (const member of after) if (!before.has(member)) groups.add(member);
  }
  if (groups.has(EVERYONE) || groups.has(AUTHENTICATED)) batch.groups = 'all';
}
