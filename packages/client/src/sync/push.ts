/**
 * Push: send the outbox through `/batch`, in chunks of the server's `batch_max_requests`.
 * Creations use the client's id with `If-None-Match: *`, updates and deletions `If-Match` on the
 * server version they were made on. Each chunk is acknowledged in one transaction of the replica;
 * an entry rewritten locally while its request was in flight stays pending (its `rev` changed).
 *
 * Replays are safe: after a lost batch response the next push finds its own writes on the server
 * (412 whose `details.existing` equals what we send, or 404 for a deletion) and counts them as
 * published instead of duplicating or reporting a conflict.
 */
import type { LocalCollection, Published } from '../store/local-collection.js';
import { payload, sameRecord } from '../store/record-fields.js';
import type { ConflictEntry, LocalRecord, OutboxEntry, RemoteRecord } from '../store/types.js';
import { type BatchRequest, type BatchResponse, chunk, sendBatch } from '../transport/batch.js';
import { endpoints, quoteETag } from '../transport/endpoints.js';
import type { HttpTransport } from '../transport/http.js';

export interface PushOptions {
  http: HttpTransport;
  local: LocalCollection;
  bucket: string;
  collection: string;
  batchSize: number | null;
  signal?: AbortSignal;
  /** The collection's remote transformers: records are encoded to be sent, server versions decoded. */
  encode?: (record: LocalRecord) => Promise<LocalRecord>;
  decode?: (record: RemoteRecord) => Promise<RemoteRecord>;
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

/** `body`: the record as the server is to store it (encoded by the transformers). */
function toRequest(bucket: string, collection: string, { entry }: Sent, body: LocalRecord | undefined): BatchRequest {
  // Sub-request paths carry no `/v1` prefix (the server adds it), as kinto-http sends them.
  const path = endpoints.record(bucket, collection, entry.id);
  if (entry.op === 'delete') return { method: 'DELETE', path, headers: { 'If-Match': quoteETag(entry.base!) } };
  const headers: Record<string, string> =
    entry.op === 'create' || entry.base === null ? { 'If-None-Match': '*' } : { 'If-Match': quoteETag(entry.base) };
  return { method: 'PUT', path, headers, body: { data: payload(body ?? { id: entry.id }) } };
}

/** The server versions a response carries (the record written, the `existing` of a 412), decoded. */
async function decodeResponse(
  response: BatchResponse,
  decode: (record: RemoteRecord) => Promise<RemoteRecord>,
): Promise<BatchResponse> {
  const body = response.body as { data?: RemoteRecord; details?: { existing?: RemoteRecord } } | null;
  if (!body || typeof body !== 'object') return response;
  const data = body.data && typeof body.data.id === 'string' ? await decode(body.data) : body.data;
  const existing =
    body.details?.existing && typeof body.details.existing.id === 'string'
      ? await decode(body.details.existing)
      : body.details?.existing;
  return {
    ...response,
    body: { ...body, ...(data ? { data } : {}), ...(body.details ? { details: { ...body.details, existing } } : {}) },
  };
}

type Verdict =
  | { kind: 'published'; server: RemoteRecord | null }
  | { kind: 'conflict'; conflict: ConflictEntry }
  | { kind: 'error'; error: PushError };

function judge(sent: Sent, response: BatchResponse): Verdict {
  const { entry, record } = sent;
  const body = response.body as { data?: RemoteRecord; details?: { existing?: RemoteRecord } } | null;
  if (response.status >= 200 && response.status < 300)
    return { kind: 'published', server: entry.op === 'delete' ? null : (body?.data ?? null) };
  // Deleting what is already gone: the goal is reached.
  if (entry.op === 'delete' && response.status === 404) return { kind: 'published', server: null };
  if (response.status === 412) {
    const existing = body?.details?.existing ?? null;
    if (entry.op !== 'delete' && existing && !existing.deleted && sameRecord(record, existing))
      return { kind: 'published', server: existing };
    return {
      kind: 'conflict',
      conflict: {
        id: entry.id,
        type: 'outgoing',
        local: entry.op === 'delete' ? null : (record ?? null),
        remote: existing,
      },
    };
  }
  return { kind: 'error', error: { id: entry.id, status: response.status, body: response.body } };
}

export async function push(options: PushOptions): Promise<void> {
  const { local } = options;
  const entries = (await local.pending()).filter((entry) => !entry.blocked);
  if (entries.length === 0) return;
  let done = 0;
  const parts = chunk(entries, options.batchSize);
  // A batch is prepared (its records read, its requests built) while the previous one travels,
  // and sent the moment that one's response arrives, then acknowledged while the next one
  // travels: the server always has the next batch, one at a time. (Several batches at once into
  // one collection were measured slower: the server serialises them on the collection anyway.)
  const prepare = async (part: OutboxEntry[]) => {
    const records = await local.getMany(part.map((entry) => entry.id));
    // A creation or update whose record vanished cannot be sent (it would blank the server copy).
    const sent: Sent[] = part
      .map((entry, i) => ({ entry, record: records[i] }))
      .filter((item) => item.entry.op === 'delete' || item.record);
    const { encode } = options;
    const bodies = encode
      ? await Promise.all(
          sent.map((item) => (item.record && item.entry.op !== 'delete' ? encode(item.record) : item.record)),
        )
      : sent.map((item) => item.record);
    return { sent, requests: sent.map((item, i) => toRequest(options.bucket, options.collection, item, bodies[i])) };
  };
  const send = async ({ sent, requests }: Awaited<ReturnType<typeof prepare>>) => {
    const responses = await sendBatch(options.http, requests, options.signal);
    const { decode } = options;
    return {
      sent,
      responses: decode ? await Promise.all(responses.map((response) => decodeResponse(response, decode))) : responses,
    };
  };
  let inflight: Promise<{ sent: Sent[]; responses: BatchResponse[] }> | null = parts.length
    ? prepare(parts[0]!).then(send)
    : null;
  for (let index = 0; inflight; index++) {
    const following = parts[index + 1];
    const next = following ? prepare(following) : null;
    next?.catch(() => {});
    const { sent, responses } = await inflight;
    options.signal?.throwIfAborted();
    inflight = next ? next.then(send) : null;
    // If acknowledging fails, don't leave the next batch's rejection unhandled.
    inflight?.catch(() => {});
    const outcome: PushChunkOutcome = { published: [], conflicts: [], errors: [] };
    const accepted: Published[] = [];
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
        accepted.push({ sent: item.entry, server: verdict.server });
        outcome.published.push({ type: item.entry.op, id: item.entry.id });
      }
    }
    await local.acknowledgePushed(accepted);
    done += sent.length;
    await options.onChunk(outcome, { done, total: entries.length });
  }
}
