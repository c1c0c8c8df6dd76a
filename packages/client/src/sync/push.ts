/**
 * Push: send the outbox through `/batch`, in chunks of the server's `batch_max_requests`.
 * Creations use the client's id with `If-None-Match: *`, updates and deletions `If-Match` on the
 * server version they were made on. Each chunk is acknowledged in one transaction; an entry
 * rewritten locally while its request was in flight stays pending (its `rev` changed).
 *
 * Replays are safe: after a lost batch response the next push finds its own writes on the server
 * (412 whose `details.existing` equals what we send, or 404 for a deletion) and counts them as
 * published instead of duplicating or reporting a conflict.
 */
import type { CollectionDb } from '../store/db.js';
import type { ConflictEntry, LocalRecord, OutboxEntry, RemoteRecord } from '../store/types.js';
import { type BatchRequest, type BatchResponse, chunk, sendBatch } from '../transport/batch.js';
import { endpoints, quoteETag } from '../transport/endpoints.js';
import type { HttpTransport } from '../transport/http.js';
import { payload, sameRecord } from './equal.js';

export interface PushOptions {
  http: HttpTransport;
  db: CollectionDb;
  bucket: string;
  collection: string;
  batchSize: number | null;
  newRev: () => string;
  signal?: AbortSignal;
  onChunk(outcome: PushChunkOutcome, progress: { done: number; total: number }): Promise<void>;
}

export interface PushError {
  id: string;
  status: number;
  body: unknown;
}

export interface PushChunkOutcome {
  published: { type: 'create' | 'update' | 'delete'; id: string }[];
  conflicts: ConflictEntry[];
  errors: PushError[];
}

interface Sent {
  entry: OutboxEntry;
  record: LocalRecord | undefined;
}

function toRequest(bucket: string, collection: string, { entry, record }: Sent): BatchRequest {
  // Sub-request paths carry no `/v1` prefix (the server adds it), as kinto-http sends them.
  const path = endpoints.record(bucket, collection, entry.id);
  if (entry.op === 'delete') return { method: 'DELETE', path, headers: { 'If-Match': quoteETag(entry.base!) } };
  const headers: Record<string, string> = entry.op === 'create' || entry.base === null ? { 'If-None-Match': '*' } : { 'If-Match': quoteETag(entry.base) };
  return { method: 'PUT', path, headers, body: { data: payload(record ?? { id: entry.id }) } };
}

type Verdict =
  | { kind: 'published'; server: RemoteRecord | null }
  | { kind: 'conflict'; conflict: ConflictEntry }
  | { kind: 'error'; error: PushError };

function judge(sent: Sent, response: BatchResponse): Verdict {
  const { entry, record } = sent;
  const body = response.body as { data?: RemoteRecord; details?: { existing?: RemoteRecord } } | null;
  if (response.status >= 200 && response.status < 300) return { kind: 'published', server: entry.op === 'delete' ? null : (body?.data ?? null) };
  // Deleting what is already gone: the goal is reached.
  if (entry.op === 'delete' && response.status === 404) return { kind: 'published', server: null };
  if (response.status === 412) {
    const existing = body?.details?.existing ?? null;
    if (entry.op !== 'delete' && existing && !existing.deleted && sameRecord(record, existing)) return { kind: 'published', server: existing };
    return { kind: 'conflict', conflict: { id: entry.id, type: 'outgoing', local: entry.op === 'delete' ? null : (record ?? null), remote: existing } };
  }
  return { kind: 'error', error: { id: entry.id, status: response.status, body: response.body } };
}

export async function push(options: PushOptions): Promise<void> {
  const { db } = options;
  const entries = (await db.$outbox.orderBy('seq').toArray()).filter((entry) => !entry.blocked);
  if (entries.length === 0) return;
  let done = 0;
  const parts = chunk(entries, options.batchSize);
  const send = async (part: OutboxEntry[]) => {
    const records = await db.records.bulkGet(part.map((entry) => entry.id));
    // A creation or update whose record vanished cannot be sent (it would blank the server copy).
    const sent: Sent[] = part.map((entry, i) => ({ entry, record: records[i] })).filter((item) => item.entry.op === 'delete' || item.record);
    const responses = await sendBatch(
      options.http,
      sent.map((item) => toRequest(options.bucket, options.collection, item)),
      options.signal,
    );
    return { sent, responses };
  };
  // The next batch travels while the previous one's results are written locally.
  let inflight = parts.length ? send(parts[0]!) : null;
  for (let index = 0; inflight; index++) {
    const { sent, responses } = await inflight;
    options.signal?.throwIfAborted();
    const following = parts[index + 1];
    inflight = following ? send(following) : null;
    // If acknowledging fails, don't leave the next batch's rejection unhandled.
    inflight?.catch(() => {});
    const outcome: PushChunkOutcome = { published: [], conflicts: [], errors: [] };
    await db.transaction('rw', db.records, db.$outbox, async () => {
      for (const [i, item] of sent.entries()) {
        const response = responses[i];
        if (!response) {
          outcome.errors.push({ id: item.entry.id, status: 0, body: 'missing batch response' });
          continue;
        }
        const verdict = judge(item, response);
        if (verdict.kind === 'conflict') outcome.conflicts.push(verdict.conflict);
        else if (verdict.kind === 'error') outcome.errors.push(verdict.error);
        else {
          await acknowledge(db, item.entry, verdict.server, options.newRev);
          outcome.published.push({ type: item.entry.op, id: item.entry.id });
        }
      }
    });
    done += sent.length;
    await options.onChunk(outcome, { done, total: entries.length });
  }
}

/** Records a published change; keeps whatever the app wrote locally while it was in flight. */
async function acknowledge(db: CollectionDb, sent: OutboxEntry, server: RemoteRecord | null, newRev: () => string): Promise<void> {
  const current = await db.$outbox.get(sent.id);
  const unchanged = current?.rev === sent.rev;
  if (server === null) {
    // Deleted on the server.
    if (unchanged) await db.$outbox.delete(sent.id);
    else if (current) {
      // Re-created locally after the deletion was sent: create it again (over the tombstone).
      await db.$outbox.put({ ...current, op: 'create', base: null });
      const local = await db.records.get(sent.id);
      if (local) {
        const { last_modified: _lm, ...rest } = local;
        await db.records.put(rest as LocalRecord);
      }
    }
    return;
  }
  const serverRecord = { ...server } as LocalRecord & { deleted?: boolean };
  delete serverRecord.deleted;
  if (unchanged) {
    await db.records.put(serverRecord);
    await db.$outbox.delete(sent.id);
  } else if (current) {
    // Changed again meanwhile: the pending change now applies on top of the version just written.
    await db.$outbox.put({ ...current, op: current.op === 'delete' ? 'delete' : 'update', base: server.last_modified });
    const local = await db.records.get(sent.id);
    if (local) await db.records.put({ ...local, last_modified: server.last_modified });
  } else {
    // Created, then deleted locally before the creation was acknowledged: delete it on the server too.
    await db.$outbox.put({ id: sent.id, op: 'delete', base: server.last_modified, rev: newRev(), seq: sent.seq });
  }
}
