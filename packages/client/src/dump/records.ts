import type { RemoteRecord } from '../store/types.js';

/**
 * What a dump's records make of a replica, read whole (dump.ts) or as they download (stream.ts):
 * each checked, the newest timestamp kept as the sync state, tombstones and repeated ids left out.
 */
export class DumpRecords {
  since: number | null = null;
  readonly #seen = new Set<string>();

  /** The record to store, or null when it is left out. */
  accept(record: RemoteRecord | undefined): RemoteRecord | null {
    if (typeof record?.id !== 'string' || typeof record.last_modified !== 'number')
      throw new TypeError('Every record of a dump has a string id and a numeric last_modified');
    if (this.since === null || record.last_modified > this.since) this.since = record.last_modified;
    if (record.deleted === true || this.#seen.has(record.id)) return null;
    this.#seen.add(record.id);
    return record;
  }
}
