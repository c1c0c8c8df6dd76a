/**
 * A target that is a reader of a replicated deployment (`--writer`): writes go to the writer,
 * reads to the target, and each write is waited for on the target before the check goes on, as
 * a client routed that way would have to (read-your-writes is the writer's, not a reader's).
 *
 * The wait is on what the write touched: the object (its ETag at the write's timestamp, or gone
 * after a DELETE), then the records listing it belongs to (a reader may keep a listing's
 * timestamp a little longer than the object). Replication applies the writer's commits in
 * order, so a write seen means every earlier one is seen too. A write that changes permissions
 * or groups then waits `--replica-settle` more: what a reader keeps of them may lag that long
 * (Quire: `storage_poll_cache_max_staleness_ms`). A wait that runs out (`--replica-wait`) lets
 * the check go on: it then fails on what it reads.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { baseUrl, replicaSettleMs, replicaWaitMs } from './config.js';

/** One write as sent, and what the writer answered. */
export interface AnsweredWrite {
  method: string;
  /** Path under the API root, without the query (`/buckets/b/collections/c/records/r`). */
  path: string;
  status: number;
  body: unknown;
  /** The answer's ETag (the timestamp of a write whose body does not show it, e.g. `Response-Behavior: diff`). */
  etag: number;
  authorization: string | null;
  /** The body sent. */
  sent?: unknown;
}

interface Answered {
  data?: { id?: unknown; last_modified?: unknown } | Array<{ last_modified?: unknown }>;
}

/** The plural endpoints whose POST creates an object with a server-chosen id. */
const PLURAL = /\/(buckets|collections|groups|records|accounts)$/;
/** Paths of the personal bucket: reached through a writer only (even a GET creates it). */
export const PERSONAL = /^\/buckets\/default(\/|$)/;

const POLL_MS = 5;

type Seen = { status: number; etag: number };

/** What the target shows of `path` to `authorization`: status and ETag (0 when none). */
export async function readBack(path: string, authorization: string | null): Promise<Seen> {
  const response = await fetch(`${baseUrl()}${path}`, {
    headers: authorization ? { Authorization: authorization } : {},
  });
  await response.arrayBuffer();
  return { status: response.status, etag: timestampOf(response.headers.get('etag')) };
}

/** A quoted ETag as a number (0 when none). */
export function timestampOf(etag: string | null | undefined): number {
  return Number((etag ?? '0').replaceAll('"', '')) || 0;
}

/** The personal bucket's real id for an identity, as the target says (`GET /`: `user.bucket`). */
const personalBuckets = new Map<string | null, Promise<string | undefined>>();
function personalBucket(authorization: string | null): Promise<string | undefined> {
  let bucket = personalBuckets.get(authorization);
  if (!bucket) {
    bucket = fetch(`${baseUrl()}/`, { headers: authorization ? { Authorization: authorization } : {} })
      .then((response) => response.json() as Promise<{ user?: { bucket?: string } }>)
      .then((root) => root.user?.bucket)
      .catch(() => undefined);
    personalBuckets.set(authorization, bucket);
  }
  return bucket;
}

/** Whether a write may change what a reader keeps of permissions and groups. */
function movesRights(write: AnsweredWrite): boolean {
  const sent = write.sent as { permissions?: unknown } | null | undefined;
  return (
    /\/(groups|accounts)(\/|$)/.test(write.path) ||
    (typeof sent === 'object' && sent !== null && 'permissions' in sent) ||
    (write.method === 'DELETE' && !/\/records(\/|$)/.test(write.path))
  );
}

/** Waits until the target shows every write of `writes` (answered by the writer, in order). */
export async function awaitReplica(writes: readonly AnsweredWrite[]): Promise<void> {
  const deadline = Date.now() + replicaWaitMs();
  // Of several writes on one object (a batch), the last one says what the object is now.
  const last = new Map<string, AnsweredWrite>();
  for (const write of writes) if (write.status < 300 && !/^(GET|HEAD)$/.test(write.method)) last.set(write.path, write);
  let settle = false;
  for (const write of last.values()) {
    const until = async (path: string, done: (seen: Seen) => boolean) => {
      for (;;) {
        const seen = await readBack(path, write.authorization);
        if (done(seen)) return;
        if (Date.now() >= deadline) {
          const last = `${seen.status}, ETag ${seen.etag}`;
          process.stderr.write(
            `conformance: ${write.method} ${write.path} not seen at ${path} in time (answered ${last})\n`,
          );
          return;
        }
        await sleep(POLL_MS);
      }
    };
    const data = (write.body as Answered | null | undefined)?.data;
    let path = write.path;
    if (PERSONAL.test(path)) {
      const bucket = await personalBucket(write.authorization);
      if (!bucket) continue;
      path = path.replace(PERSONAL, `/buckets/${encodeURIComponent(bucket)}$1`);
    }
    settle ||= movesRights(write);
    if (Array.isArray(data)) {
      // A plural DELETE: its listing's timestamp moves to its newest tombstone at least.
      const newest = Math.max(0, ...data.map((d) => Number(d?.last_modified) || 0));
      await until(path, (seen) => seen.status !== 200 || seen.etag >= newest);
      continue;
    }
    const timestamp = Number(data?.last_modified ?? write.etag) || 0;
    if (!timestamp) continue; // nothing to recognise it by (e.g. a flush)
    const object =
      write.method === 'POST' && PLURAL.test(path) && typeof data?.id === 'string'
        ? `${path}/${encodeURIComponent(data.id)}`
        : path;
    // Before it is replicated, a new object (or one in a new bucket) reads as 404 or 403.
    // After a DELETE: gone, or made again since (a concurrent check may re-create it).
    if (write.method === 'DELETE') await until(object, (seen) => seen.status !== 200 || seen.etag > timestamp);
    else await until(object, (seen) => seen.status === 200 && seen.etag >= timestamp);
    // The object seen, its parents are too: a listing refused now is refused for good.
    const listing = object.replace(/\/[^/]+$/, '');
    if (listing.endsWith('/records')) await until(listing, (seen) => seen.status !== 200 || seen.etag >= timestamp);
  }
  if (settle) await sleep(replicaSettleMs());
}
