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
  /**
   * Optional: `decode` for a whole page at once (what a pull receives), e.g. to set up once what
   * every record needs. The results in the records' order.
   */
  decodeAll?(
    records: ReadonlyArray<Record<string, unknown> & { id: string }>,
    context: TransformContext,
  ): Promise<Record<string, unknown>[]>;
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
      current = await transformer.encode(withId(current, record.id), this.#context);
    return keepServerFields(current, record) as R;
  }

  async decode(record: RemoteRecord): Promise<RemoteRecord> {
    if (record.deleted === true || this.empty) return record;
    let current: Record<string, unknown> = record;
    for (let i = this.#transformers.length - 1; i >= 0; i--)
      current = await this.#transformers[i]!.decode(withId(current, record.id), this.#context);
    return keepServerFields(current, record) as RemoteRecord;
  }

  /** A page: each transformer decodes it whole (`decodeAll`) where it can; tombstones pass untouched. */
  async decodeAll(records: readonly RemoteRecord[]): Promise<RemoteRecord[]> {
    if (this.empty) return records as RemoteRecord[];
    const live = records.filter((record) => record.deleted !== true);
    let current: Record<string, unknown>[] = live;
    for (let i = this.#transformers.length - 1; i >= 0; i--) {
      const transformer = this.#transformers[i]!;
      const inputs = current.map((record, index) => withId(record, live[index]!.id));
      current = transformer.decodeAll
        ? await transformer.decodeAll(inputs, this.#context)
        : await Promise.all(inputs.map((record) => transformer.decode(record, this.#context)));
    }
    const decoded = new Map(live.map((record, index) => [record, keepServerFields(current[index]!, record)]));
    return records.map((record) => (decoded.get(record) as RemoteRecord | undefined) ?? record);
  }
}

/** The record with this id: itself when it has it (no copy). */
function withId(record: Record<string, unknown>, id: string): Record<string, unknown> & { id: string } {
  return (record.id === id ? record : { ...record, id }) as Record<string, unknown> & { id: string };
}

/**
 * `id`, and `last_modified` where the original had one, stay what they were; `deleted` goes. The
 * result itself when it already says so (a transformer that returns a fresh record: no copy).
 */
function keepServerFields(result: Record<string, unknown>, original: Record<string, unknown>): Record<string, unknown> {
  if (result.id === original.id && result.last_modified === original.last_modified && !('deleted' in result))
    return result;
  const { last_modified: _lm, deleted: _deleted, ...fields } = result;
  return {
    ...fields,
    id: original.id,
    ...(original.last_modified !== undefined ? { last_modified: original.last_modified } : {}),
  };
}
