/**
 * `quire export`: every bucket (with its collections, records and their attachments' index,
 * groups, history entries and quota counters), every account, tombstones included, with their
 * access-control entries and the scope
 * timestamps, as NDJSON (format.ts). Read from one snapshot, a page at a time: memory stays
 * bounded whatever the store's size, and the output waits for a slow reader (backpressure).
 */
import type { Writable } from 'node:stream';
import {
  HISTORY_RESOURCE,
  type Scope,
  type Storage,
  type StorageSession,
  type StoredObject,
  type Tombstone,
} from '../storage/types.js';
import { INDEX_RESOURCE } from '../attachments/file-index.js';
import { QUOTA_RESOURCE } from '../quotas/listener.js';
import { canonicalJson, FORMAT, objectUri, VERSION } from './format.js';

export interface ExportOptions {
  /** Objects read per statement. */
  pageSize: number;
  /** Called after each page with the number of objects written so far. */
  onProgress?: (objects: number) => void;
}

/** Buffers lines into chunks and waits for `drain` when the stream is full. */
class LineWriter {
  #chunk = '';
  constructor(readonly out: Writable) {}

  async line(text: string): Promise<void> {
    this.#chunk += `${text}\n`;
    if (this.#chunk.length >= 1 << 16) await this.flush();
  }

  async flush(): Promise<void> {
    if (!this.#chunk) return;
    const chunk = this.#chunk;
    this.#chunk = '';
    if (!this.out.write(chunk))
      await new Promise<void>((resolve, reject) => {
        const onError = (error: Error) => reject(error);
        this.out.once('error', onError);
        this.out.once('drain', () => {
          this.out.off('error', onError);
          resolve();
        });
      });
  }
}

function isLive(object: StoredObject | Tombstone): object is StoredObject {
  return (object as Partial<Tombstone>).deleted !== true;
}

/** Writes the whole store to `out`; returns the number of objects written. */
export async function exportStore(storage: Storage, out: Writable, options: ExportOptions): Promise<number> {
  const writer = new LineWriter(out);
  let written = 0;

  async function exportScope(
    session: StorageSession,
    scope: Scope,
    descend?: (object: StoredObject) => Promise<void>,
  ): Promise<void> {
    let after: Record<string, unknown> | undefined;
    let timestamp: number | undefined;
    for (;;) {
      const page = await session.objects.list(scope, {
        includeDeleted: true,
        sorting: [{ field: 'last_modified', direction: 1 }],
        limit: options.pageSize,
        ...(after ? { after } : {}),
      });
      if (page.length === 0) break;
      // Only for a scope with objects: in a snapshot, the timestamp of a scope never written
      // makes the store initialise it and run the snapshot again, which a stream cannot undo.
      timestamp ??= await session.objects.timestamp(scope);
      const uris = page
        .filter(isLive)
        .map((object) => objectUri(scope, object.id))
        .filter((uri): uri is string => uri !== null);
      const acls = uris.length ? await session.permissions.get(uris) : new Map();
      for (const object of page) {
        const uri = objectUri(scope, object.id);
        const permissions = uri && isLive(object) ? acls.get(uri) : undefined;
        const line = {
          resource: scope.resourceName,
          parent: scope.parentId,
          object,
          ...(permissions && Object.keys(permissions).length ? { permissions } : {}),
        };
        await writer.line(canonicalJson(line));
      }
      written += page.length;
      options.onProgress?.(written);
      if (descend) for (const object of page) if (isLive(object)) await descend(object);
      if (page.length < options.pageSize) break;
      after = { last_modified: page[page.length - 1]!.last_modified };
    }
    // An empty scope has no line: its timestamp would only be "now" (the import's own is later).
    if (timestamp !== undefined)
      await writer.line(canonicalJson({ scope: { resource: scope.resourceName, parent: scope.parentId, timestamp } }));
  }

  await storage.snapshot(async (session) => {
    await writer.line(canonicalJson({ format: FORMAT, version: VERSION }));
    await exportScope(session, { resourceName: 'account', parentId: '' });
    await exportScope(session, { resourceName: 'bucket', parentId: '' }, async (bucket) => {
      const bucketUri = `/buckets/${bucket.id}`;
      await exportScope(session, { resourceName: 'group', parentId: bucketUri });
      await exportScope(session, { resourceName: 'collection', parentId: bucketUri }, async (collection) => {
        await exportScope(session, { resourceName: 'record', parentId: `${bucketUri}/collections/${collection.id}` });
        // Which file each record holds (attachments): the files themselves move with their backend.
        await exportScope(session, {
          resourceName: INDEX_RESOURCE,
          parentId: `${bucketUri}/collections/${collection.id}`,
        });
      });
      await exportScope(session, { resourceName: HISTORY_RESOURCE, parentId: bucketUri });
      await exportScope(session, { resourceName: QUOTA_RESOURCE, parentId: bucketUri });
    });
  });
  await writer.flush();
  return written;
}
