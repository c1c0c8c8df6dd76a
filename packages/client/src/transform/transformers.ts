/**
 * Remote transformers (the original client's "remote transformers"): what a record becomes on
 * its way to the server, and back. The replica holds the app's records; the server holds what
 * `encode` made of them. Sync applies them — to every pulled page before it is stored, to each
 * pushed record, and to the server versions that come back (a published record, the `existing`
 * of a 412) — so local queries, conflicts and comparisons all see the app's form. Tombstones
 * (`{ id, last_modified, deleted }`) pass untouched. `client.remote` (raw protocol access) does
 * not transform.
 *
 * A transformer must keep `id`; `last_modified` and `deleted` stay the server's whatever it does.
 * A failure (e.g. a wrong key) fails the sync before anything of that page is written.
 */
import type { RemoteRecord } from '../store/types.js';

/** Where a record goes: transformers may depend on it (the encryption derives its key per collection). */
export interface TransformContext {
  bucket: string;
  collection: string;
}

export interface RemoteTransformer {
  /** The app's record (`id`, fields; `last_modified` once synced) → what the server stores. */
  encode(
    record: Record<string, unknown> & { id: string },
    context: TransformContext,
  ): Promise<Record<string, unknown>> | Record<string, unknown>;
  /** What the server stored → the app's record. */
  decode(
    record: Record<string, unknown> & { id: string },
    context: TransformContext,
  ): Promise<Record<string, unknown>> | Record<string, unknown>;
}

/** A collection's transformers, applied in order by `encode` and in reverse order by `decode`. */
export class TransformChain {
  readonly #transformers: readonly RemoteTransformer[];
  readonly #context: TransformContext;

  constructor(transformers: readonly RemoteTransformer[], context: TransformContext) {
    this.#transformers = transformers;
    this.#context = context;
  }

  get empty(): boolean {
    return this.#transformers.length === 0;
  }

  async encode<R extends Record<string, unknown> & { id: string }>(record: R): Promise<R> {
    let current: Record<string, unknown> = record;
    for (const transformer of this.#transformers)
      current = await transformer.encode({ ...current, id: record.id }, this.#context);
    return keepServerFields(current, record) as R;
  }

  async decode(record: RemoteRecord): Promise<RemoteRecord> {
    if (record.deleted === true || this.empty) return record;
    let current: Record<string, unknown> = record;
    for (let i = this.#transformers.length - 1; i >= 0; i--)
      current = await this.#transformers[i]!.decode({ ...current, id: record.id }, this.#context);
    return keepServerFields(current, record) as RemoteRecord;
  }

  decodeAll(records: readonly RemoteRecord[]): Promise<RemoteRecord[]> {
    return Promise.all(records.map((record) => this.decode(record)));
  }
}

/** `id`, and `last_modified` where the original had one, stay what they were. */
function keepServerFields(result: Record<string, unknown>, original: Record<string, unknown>): Record<string, unknown> {
  const { last_modified: _lm, deleted: _deleted, ...fields } = result;
  return {
    ...fields,
    id: original.id,
    ...(original.last_modified !== undefined ? { last_modified: original.last_modified } : {}),
  };
}
