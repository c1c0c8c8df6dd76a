/**
 * Which file each record holds, as the server wrote it: one object per record with a file, in
 * the scope `{resourceName: 'attachment', parentId: <collection URI>}` — beside the collection's
 * records, so that deleting the collection or its bucket removes the index with them
 * (`objects.deleteTree`), and writers of one collection's files take turns on that scope as
 * its record writers do on theirs. It is written in the record's own transaction.
 *
 * The record's `attachment` field is what clients see; the index is what deletions trust: a
 * client may not write `attachment` (record-hooks.ts), but records imported or written before
 * attachments were enabled may carry anything there, and a file is only ever deleted at a
 * location this index names (the original keeps the same links in `__attachments__`).
 */
import type { ObjectStore, Scope, StoredObject } from '../storage/types.js';

export const INDEX_RESOURCE = 'attachment';

export interface IndexEntry {
  location: string;
  size: number;
}

function indexScope(collectionUri: string): Scope {
  return { resourceName: INDEX_RESOURCE, parentId: collectionUri };
}

function entryOf(object: StoredObject | null): IndexEntry | null {
  if (!object || typeof object.location !== 'string') return null;
  return { location: object.location, size: Number(object.size) || 0 };
}

export async function readIndex(
  objects: ObjectStore,
  collectionUri: string,
  recordId: string,
  forUpdate = false,
): Promise<IndexEntry | null> {
  return entryOf(await objects.get(indexScope(collectionUri), recordId, { forUpdate }));
}

export async function writeIndex(
  objects: ObjectStore,
  collectionUri: string,
  recordId: string,
  entry: IndexEntry,
): Promise<void> {
  await objects.update(indexScope(collectionUri), recordId, { location: entry.location, size: entry.size });
}

export async function removeIndex(objects: ObjectStore, collectionUri: string, recordId: string): Promise<void> {
  const scope = indexScope(collectionUri);
  await objects.delete(scope, recordId);
  // Nobody polls this scope: no tombstones pile up.
  await objects.purgeDeleted(scope);
}

/** Every entry of a collection, page by page (`pageSize` at most per read). */
export async function* listIndex(
  objects: ObjectStore,
  collectionUri: string,
  pageSize: number,
): AsyncIterable<{ recordId: string; entry: IndexEntry }> {
  let after: Record<string, unknown> | undefined;
  for (;;) {
    const page = await objects.list(indexScope(collectionUri), {
      sorting: [{ field: 'last_modified', direction: 1 }],
      limit: pageSize,
      ...(after ? { after } : {}),
    });
    for (const object of page) {
      const entry = entryOf(object as StoredObject);
      if (entry) yield { recordId: object.id, entry };
    }
    if (page.length < pageSize) return;
    after = { last_modified: page[page.length - 1]?.last_modified };
  }
}
