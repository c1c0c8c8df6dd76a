/**
 * What the files of the shared storage suite share: how a test is declared (so that a backend
 * may skip it, with a reason), the store and scope of the running test, and small helpers.
 */
import { randomUUID } from 'node:crypto';
import { fieldValue } from '../filters/evaluate.js';
import type { ListOptions, Scope, Sort, Storage, StoredObject, Tombstone } from '../types.js';

export type Listed = StoredObject | Tombstone;

/** The running test's store (from the backend's factory) and its own random scope. */
export interface Current {
  storage: Storage;
  scope: Scope;
}

export interface Suite {
  /** Declares a test of the current section; skipped, with its reason, when the backend asks. */
  test(title: string, fn: () => Promise<void>, timeoutMs?: number): void;
  /** Declares a group of tests; skips name a test `'<section> > <test>'`. */
  section(title: string, body: () => void): void;
  /** `use` is given each test's store and scope, before the test and its sections' hooks. */
  beforeEach(use: (current: Current) => void): void;
}

/** A fresh scope: the records of a random collection. */
export function randomScope(resourceName = 'record'): Scope {
  return { resourceName, parentId: `/buckets/${randomUUID()}/collections/c` };
}

export const ids = (objects: Listed[]): string[] => objects.map((object) => object.id);
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Creates objects `{ id: data }` in order (so increasing timestamps), a transaction each. */
export async function seedObjects(
  storage: Storage,
  scope: Scope,
  objects: Record<string, Record<string, unknown>>,
): Promise<StoredObject[]> {
  const created: StoredObject[] = [];
  for (const [id, data] of Object.entries(objects))
    created.push(await storage.transaction((session) => session.objects.create(scope, id, data)));
  return created;
}

/**
 * What a bucket's or collection's deletion removes below its URI, as the resource engine does
 * it: one call per facet, in order, in one transaction (the object's own ACL stays).
 */
export async function deleteBelow(storage: Storage, uri: string): Promise<void> {
  await storage.transaction(async (session) => {
    await session.outbox.deleteTree(uri);
    await session.objects.deleteTree(uri);
    await session.permissions.deleteTree(uri, { itself: false });
  });
}

/** The keyset continuation of a page ending with `last` (absent keys = missing fields), as the resource layer makes
 * it. */
export function continuationOf(last: Listed, sorting: Sort[]): Record<string, unknown> {
  const after: Record<string, unknown> = {};
  for (const { field } of sorting) {
    const value = fieldValue(last, field);
    if (value !== undefined) after[field] = value;
  }
  return after;
}

/** Lists a scope page by page with keyset continuations. */
export async function paginate(
  storage: Storage,
  scope: Scope,
  options: ListOptions & { sorting: Sort[]; limit: number },
) {
  const pages: Listed[][] = [];
  let after: Record<string, unknown> | undefined;
  for (;;) {
    const page = await storage.read((session) =>
      session.objects.list(scope, { ...options, ...(after ? { after } : {}) }),
    );
    if (page.length === 0) return pages;
    pages.push(page);
    if (page.length < options.limit) return pages;
    after = continuationOf(page.at(-1)!, options.sorting);
  }
}

export function sortPrincipals(permissions: Record<string, string[]>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(permissions).map(([name, principals]) => [name, [...principals].sort()]));
}
