/**
 * Records that lost read permission on the server never come back as tombstones: `_since`
 * polling simply stops returning them. After each sync we compare the server's `Total-Objects`
 * (one HEAD, a COUNT on the server) with what the replica expects to be there; only when they
 * differ do we list the readable ids (`_fields=id`, paged) and drop local records that are not
 * among them and have no pending change. A 403 on the whole collection drops every synced record.
 */
import type { CollectionDb } from '../store/db.js';
import { endpoints } from '../transport/endpoints.js';
import type { HttpTransport } from '../transport/http.js';

export interface ReadableOptions {
  http: HttpTransport;
  db: CollectionDb;
  bucket: string;
  collection: string;
  signal?: AbortSignal;
}

/** Records on the server the replica believes it holds: synced ones plus pending deletions. */
async function expectedRemoteCount(db: CollectionDb): Promise<number> {
  return db.transaction('r', db.records, db.$outbox, async () => {
    const [records, creates, deletes] = await Promise.all([
      db.records.count(),
      db.$outbox.filter((entry) => entry.op === 'create').count(),
      db.$outbox.filter((entry) => entry.op === 'delete').count(),
    ]);
    return records - creates + deletes;
  });
}

/** Returns the ids removed locally. */
export async function dropUnreadable(options: ReadableOptions): Promise<string[]> {
  const { http, db } = options;
  const path = endpoints.records(options.bucket, options.collection);
  const signal = options.signal ? { signal: options.signal } : {};
  const head = await http.request({ method: 'HEAD', path, ...signal });
  const header = head.headers.get('total-objects') ?? head.headers.get('total-records');
  if (header === null) return [];
  if (Number(header) === (await expectedRemoteCount(db))) return [];
  const readable = new Set<string>();
  let response = await http.request<{ data: { id: string }[] }>({ path, query: { _fields: 'id', _limit: 10_000 }, ...signal });
  for (;;) {
    for (const record of response.body.data) readable.add(record.id);
    const next = response.headers.get('next-page');
    if (!next) break;
    response = await http.request<{ data: { id: string }[] }>({ path: next, ...signal });
  }
  return removeMissing(db, (id) => readable.has(id));
}

/** Removes local records the server no longer shows us, keeping those with pending changes. */
export async function removeMissing(db: CollectionDb, isReadable: (id: string) => boolean): Promise<string[]> {
  return db.transaction('rw', db.records, db.$outbox, async () => {
    const pending = new Set((await db.$outbox.toCollection().primaryKeys()) as string[]);
    const ids = (await db.records.toCollection().primaryKeys()) as string[];
    const gone = ids.filter((id) => !pending.has(id) && !isReadable(id));
    await db.records.bulkDelete(gone);
    return gone;
  });
}
