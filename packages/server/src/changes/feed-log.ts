/**
 * The change feed on a hot standby, where NOTIFY never comes: what the replicated log of changed
 * scopes (`Storage.scopeLog`, migration 012) says, read as the notification would have said it.
 * The log names scopes, not timestamps nor who may read, so the feed reads those afterwards
 * from the standby, which has then replayed at least what the log showed:
 *
 * - records of a collection moved: the collection's records timestamp (one statement for all
 *   the collections of a read), offered as a notification's entries are;
 * - a collection or bucket moved (created, changed, deleted): what changed in the last minute,
 *   deletions included (the re-read of a reconnection; rare writes);
 * - groups or buckets moved: every stream reads its groups again;
 * - accounts moved: the streams of accounts that no longer exist end.
 */
import { ACCOUNT_SCOPE, accountIdOf } from '../accounts/ids.js';
import type { Storage } from '../storage/types.js';

/** What is asked of an open stream here (feed.ts's FeedStream). */
interface Stream {
  readonly userId: string | null;
  close(): void;
}

export interface LogChanges {
  /** Collections whose records changed, as `[bucket, collection]`. */
  collections: Array<readonly [string, string]>;
  /** A collection or bucket changed: deletions may have been stored. */
  containers: boolean;
  /** Groups or buckets changed: streams' groups may have. */
  groups: boolean;
  /** Accounts changed (some may be deleted). */
  accounts: boolean;
}

const COLLECTION_URI = /^\/buckets\/([^/]+)\/collections\/([^/]+)$/;

export function readScopes(scopes: ReadonlyArray<readonly [string, string]>): LogChanges {
  const changes: LogChanges = { collections: [], containers: false, groups: false, accounts: false };
  const seen = new Set<string>();
  for (const [parentId, resourceName] of scopes) {
    if (resourceName === 'record') {
      const match = COLLECTION_URI.exec(parentId);
      if (match && !seen.has(parentId)) {
        seen.add(parentId);
        changes.collections.push([match[1]!, match[2]!]);
      }
    } else if (resourceName === 'collection') changes.containers = true;
    else if (resourceName === 'bucket') changes.containers = changes.groups = true;
    else if (resourceName === 'group') changes.groups = true;
    else if (resourceName === 'account') changes.accounts = true;
  }
  return changes;
}

/** Ends the streams of accounts that no longer exist (one read per account). */
export async function endDeletedAccounts(storage: Storage, open: Iterable<Stream>): Promise<void> {
  const streams = [...open];
  const ids = [...new Set(streams.flatMap(({ userId }) => (accountIdOf(userId) === null ? [] : [userId!])))];
  if (ids.length === 0) return;
  const gone = new Set<string>();
  await storage.read(async (session) => {
    for (const userId of ids)
      if ((await session.objects.get(ACCOUNT_SCOPE, accountIdOf(userId)!)) === null) gone.add(userId);
  });
  for (const stream of streams) if (stream.userId !== null && gone.has(stream.userId)) stream.close();
}
