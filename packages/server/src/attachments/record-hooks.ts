/**
 * The attachments' hooks on the protocol's resources (engine/extensions.ts), in the write's or
 * the delete's own transaction:
 *
 * - records, `processData`: `attachment` is the server's. A write may keep it as it is, drop it
 *   or set it to null (a detachment); any other change is refused ("Attachment metadata cannot
 *   be modified.", the original's words), so that a client can neither point its record at
 *   another's file nor change the size quotas count. Only the attachment endpoint sets it.
 * - records, `afterWrite`: the file index follows the record; a file it no longer holds is
 *   dropped after commit (unless `keep_old_files`).
 * - records, `afterDelete`; collections and buckets, `beforeRemainsDeleted`: their files are
 *   dropped after commit (unless `keep_old_files`), read from the index before it goes with them.
 */
import { isDeepStrictEqual } from 'node:util';
import { ApiError, ERRNO } from '../errors.js';
import type { ObjectRef } from '../engine/definition.js';
import type { ResourceExtension } from '../engine/extensions.js';
import type { StorageSession, StoredObject } from '../storage/types.js';
import type { UnitOfWork } from '../unit-of-work.js';
import { listIndex, readIndex, removeIndex, writeIndex } from './file-index.js';
import type { AttachmentFiles } from './files.js';
import type { JournalFile } from './journal.js';

const ATTACHMENT_FIELD = 'attachment';

function metadataChanged(): ApiError {
  return new ApiError(400, ERRNO.INVALID_PARAMETERS, {
    error: 'Invalid parameters',
    message: 'Attachment metadata cannot be modified.',
  });
}

/** `/buckets/b/collections/c` → b, c. */
function idsOfCollection(collectionUri: string): { bucketId: string; collectionId: string } {
  const [, , bucketId = '', , collectionId = ''] = collectionUri.split('/');
  return { bucketId, collectionId };
}

type KeepsOldFiles = (collectionUri: string) => boolean;
type DropCollection = (session: StorageSession, work: UnitOfWork, collectionUri: string) => Promise<void>;

export function attachmentExtensions(files: AttachmentFiles, pageSize: number): ResourceExtension[] {
  const keepsOldFiles = (collectionUri: string) => {
    const { bucketId, collectionId } = idsOfCollection(collectionUri);
    return files.options.for(bucketId, collectionId).keepOldFiles;
  };

  /** Drops what the index gives the records of a collection (unless its files are kept). */
  async function dropCollection(session: StorageSession, work: UnitOfWork, collectionUri: string): Promise<void> {
    if (keepsOldFiles(collectionUri)) return;
    const dropped: JournalFile[] = [];
    for await (const { recordId, entry } of listIndex(session.objects, collectionUri, pageSize)) {
      dropped.push({ location: entry.location, collection: collectionUri, record: recordId });
    }
    await files.dropAfterCommit(work, dropped);
  }

  const collection: ResourceExtension = {
    resource: 'collection',
    async beforeRemainsDeleted({ session, work, ref }) {
      await dropCollection(session, work, ref.uri);
    },
  };
  return [recordExtension(files, keepsOldFiles), collection, bucketExtension(dropCollection, pageSize)];
}

/** Records: `attachment` is the server's, the index follows each record's file. */
function recordExtension(files: AttachmentFiles, keepsOldFiles: KeepsOldFiles): ResourceExtension {
  return {
    resource: 'record',
    processData(data, { work, ref, existing }) {
      if (!Object.hasOwn(data, ATTACHMENT_FIELD)) return data;
      const sent = data[ATTACHMENT_FIELD];
      const writing = files.pending(work, ref.uri);
      if (writing) {
        if (!isDeepStrictEqual(sent, writing)) throw metadataChanged();
        return data;
      }
      if (sent === null) return data;
      const before = existing?.[ATTACHMENT_FIELD];
      if (before !== undefined && isDeepStrictEqual(before, sent)) return data;
      throw metadataChanged();
    },
    async afterWrite({ session, work, ref }, stored: StoredObject) {
      const writing = files.pending(work, ref.uri);
      const indexed = await readIndex(session.objects, ref.parentUri, ref.id, true);
      const attached = stored[ATTACHMENT_FIELD];
      // Kept as it was (processData saw to it), dropped, or the endpoint's new file.
      const next = writing
        ? { location: writing.location, size: writing.size }
        : attached === undefined || attached === null
          ? null
          : indexed;
      if (indexed?.location === next?.location) return;
      if (next) await writeIndex(session.objects, ref.parentUri, ref.id, next);
      else await removeIndex(session.objects, ref.parentUri, ref.id);
      if (indexed && !keepsOldFiles(ref.parentUri)) {
        await files.dropAfterCommit(work, [{ location: indexed.location, collection: ref.parentUri, record: ref.id }]);
      }
    },
    async afterDelete({ session, work, ref }) {
      const indexed = await readIndex(session.objects, ref.parentUri, ref.id, true);
      if (!indexed) return;
      await removeIndex(session.objects, ref.parentUri, ref.id);
      if (!keepsOldFiles(ref.parentUri))
        await files.dropAfterCommit(work, [{ location: indexed.location, collection: ref.parentUri, record: ref.id }]);
    },
  };
}

/** Buckets: a deleted bucket's collections drop their files. */
function bucketExtension(dropCollection: DropCollection, pageSize: number): ResourceExtension {
  return {
    resource: 'bucket',
    async beforeRemainsDeleted({ session, work, ref }: { session: StorageSession; work: UnitOfWork; ref: ObjectRef }) {
      // Its collections are still there (deleteTree comes next): each one's files.
      const scope = { resourceName: 'collection', parentId: ref.uri };
      let after: Record<string, unknown> | undefined;
      for (;;) {
        const page = await session.objects.list(scope, {
          sorting: [{ field: 'last_modified', direction: 1 }],
          limit: pageSize,
          ...(after ? { after } : {}),
        });
        for (const object of page) await dropCollection(session, work, `${ref.uri}/collections/${object.id}`);
        if (page.length < pageSize) break;
        after = { last_modified: page[page.length - 1]?.last_modified };
      }
    },
  };
}
