/**
 * Dumps: a collection's records as one JSON document, shipped with an app so that its first start
 * needs no download (`collection.loadDump(dump)`), then kept current with `_since` from the
 * dump's timestamp. `exportDump` makes one from a server (the `quire-dump` command wraps it).
 *
 * Format (the original client's importBulk takes `data` as is):
 *   { "bucket": "b", "collection": "c", "timestamp": 1700000000000, "data": [ { "id", "last_modified", …fields } ] }
 * `timestamp` is the collection's ETag when the dump was made: a replica loaded from it asks the
 * server `If-None-Match` on it (304: nothing changed since). Records are as the server stores
 * them (an encrypted collection's dump holds ciphertext; loading decodes them).
 */
import type { RemoteRecord } from '../store/types.js';
import type { HttpTransport } from '../transport/http.js';
import { DumpRecords } from './records.js';
import type { Dump, DumpInput, ExportOptions } from './types.js';

export type { Dump, DumpInput, ExportOptions };

/** The records of a dump (tombstones left out) and the sync state it stands for. */
export function readDump(input: DumpInput): { records: RemoteRecord[]; since: number | null; etag: number | null } {
  const dump: Dump = Array.isArray(input) ? { data: input } : input;
  if (!dump || !Array.isArray(dump.data))
    throw new TypeError('A dump is { timestamp, data: [records] } or an array of records');
  const records: RemoteRecord[] = [];
  const accepted = new DumpRecords();
  for (const record of dump.data) {
    const kept = accepted.accept(record);
    if (kept) records.push(kept);
  }
  const since = accepted.since;
  const timestamp = typeof dump.timestamp === 'number' ? dump.timestamp : null;
  return { records, since, etag: timestamp ?? since };
}

/** A dump in memory, or one still downloading: a `fetch` response, or its body (`loadDump` stores it as it lands). */
export type DumpSource = DumpInput | Response | ReadableStream<Uint8Array>;

/** A dump's records in batches (one for a dump in memory; as they download otherwise), then its sync state. */
export interface DumpRead {
  batches: AsyncIterable<RemoteRecord[]>;
  state(): { since: number | null; etag: number | null };
  /** Read as it downloads. */
  downloading: boolean;
}

function isDownload(dump: DumpSource): dump is Response | ReadableStream<Uint8Array> {
  return (
    (typeof Response !== 'undefined' && dump instanceof Response) ||
    (typeof ReadableStream !== 'undefined' && dump instanceof ReadableStream)
  );
}

/** Reads a dump (a download through stream.ts, loaded then). */
export async function readDumpBatches(dump: DumpSource): Promise<DumpRead> {
  if (isDownload(dump)) {
    const body = dump instanceof Response ? dump.body : dump;
    if (!body) throw new TypeError('A dump response without a body');
    return { ...(await import('./stream.js')).readDumpStream(body), downloading: true };
  }
  const { records, since, etag } = readDump(dump);
  async function* one() {
    yield records;
  }
  return { batches: one(), state: () => ({ since, etag }), downloading: false };
}

/**
 * Reads every record of a collection into a dump, consistently (export.ts, loaded on first use):
 * pages follow Next-Page with `If-Match` on the first page's ETag, and a change meanwhile starts
 * the reading over.
 */
export async function exportDump(
  http: HttpTransport,
  bucket: string,
  collection: string,
  options: ExportOptions = {},
): Promise<Dump> {
  return (await import('./export.js')).exportDump(http, bucket, collection, options);
}
