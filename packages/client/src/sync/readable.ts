/**
 * Records that lost read permission on the server never come back as tombstones: `_since`
 * polling simply stops returning them. After each sync we compare the server's `Total-Objects`
 * (one HEAD, a COUNT on the server) with what the replica expects to be there; only when they
 * differ do we list the readable ids (`_fields=id`, paged) and drop local records that are not
 * among them and have no pending change. A 403 on the whole collection drops every synced record.
 * A partial replica counts and lists its subset only: the same check drops the records that left
 * it — the fallback against servers without `partial_replicas` (sync/run.ts decides when).
 */
import type { LocalCollection } from '../store/local-collection.js';
import { endpoints } from '../transport/endpoints.js';
import type { HttpTransport } from '../transport/http.js';

export interface ReadableOptions {
  http: HttpTransport;
  local: LocalCollection;
  bucket: string;
  collection: string;
  /** A partial replica's subset: what it may hold is what matches (sync/subset.ts). */
  subset?: Record<string, string>;
  signal?: AbortSignal;
}

/** Returns the ids removed locally. */
export async function dropUnreadable(options: ReadableOptions): Promise<string[]> {
  const readable = await serverIdsIfChanged(options);
  return readable ? options.local.removeUnreadable((id) => readable.has(id)) : [];
}

/**
 * The ids the server shows us, when its `Total-Objects` differs from what the replica expects
 * (null when they agree, or the server does not count): one HEAD, then the ids listed only on a
 * mismatch, and not even then when the server shows none.
 */
export async function serverIdsIfChanged(options: ReadableOptions): Promise<Set<string> | null> {
  const { http, local } = options;
  const head = await http.request({
    method: 'HEAD',
    path: endpoints.records(options.bucket, options.collection),
    ...(options.subset ? { query: options.subset } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const header = head.headers.get('total-objects') ?? head.headers.get('total-records');
  if (header === null) return null;
  if (Number(header) === (await local.expectedServerCount())) return null;
  return Number(header) === 0 ? new Set() : serverIds(options);
}

/** Every id the server shows us (of the subset, if any: `_fields=id`, paged). */
export async function serverIds(options: ReadableOptions): Promise<Set<string>> {
  const signal = options.signal ? { signal: options.signal } : {};
  const ids = new Set<string>();
  let response = await options.http.request<{ data: { id: string }[] }>({
    path: endpoints.records(options.bucket, options.collection),
    query: { ...options.subset, _fields: 'id', _limit: 10_000 },
    ...signal,
  });
  for (;;) {
    for (const record of response.body.data) ids.add(record.id);
    const next = response.headers.get('next-page');
    if (!next) return ids;
    response = await options.http.request<{ data: { id: string }[] }>({ path: next, ...signal });
  }
}
