/**
 * Declared indexes, a Quire extension: a collection names the data fields its records are
 * filtered and sorted on, in its metadata —
 *
 *   PUT /buckets/b/collections/tasks   {"data": {"indexes": ["due", "owner.name"]}}
 *
 * — and the store keeps an index for each such field, which filters (`eq_`, `not_`, `lt_`,
 * `max_`, `gt_`, `min_`) and `_sort` on it then use: a page of a million records costs what a
 * page of a thousand does. A client that does not know the extension sees an ordinary field of
 * the collection; nothing is ever refused for it (an entry that is not a field path of the
 * accepted shape is ignored).
 *
 * One index per field path for the whole store, shared by every collection that declares it (an
 * index per collection would make the planner weigh every collection's indexes on every query):
 * `(parent_id, resource_name, <the field's sort key>, last_modified)`, the expressions being the
 * very ones the query builders write for that field (`QueryBuilder.field` with the field in
 * `indexed`), so that the database matches them. Every write pays for every declared field's
 * index, hence `storage_max_declared_indexes` (the fields declared by most collections first).
 *
 * Indexes are built in the background (`IndexKeeper`): after a transaction that wrote a
 * collection, when another process announces one, at start and every minute, the store compares
 * what collections declare with the indexes it has, builds what is missing and drops what no
 * collection declares any more. Until an index is built, its field is filtered as any other.
 */
import { createHash } from 'node:crypto';
import type { FilterOperator } from './types.js';

/**
 * The field paths an index can be declared on: dot-separated names of letters, digits, `_` and
 * `-`, not starting with a digit (a number would also address an array element), at most five.
 * Being this plain is what lets the query builders write such a path as a literal (a database
 * matches an index expression only to the same expression, never to a bound parameter).
 */
export const INDEXABLE_PATH = /^[A-Za-z_][A-Za-z0-9_-]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_-]{0,63}){0,4}$/;

/** The filters a declared field's index answers (the comparisons: the query builders' `ordered` key). */
export const INDEXED_OPERATORS: ReadonlySet<FilterOperator> = new Set<FilterOperator>([
  'eq',
  'not',
  'lt',
  'max',
  'gt',
  'min',
]);

/** The object fields that have indexes of their own already. */
const COLUMNS = new Set(['id', 'last_modified']);

/** Whether `path` may be indexed (and so written into SQL as a literal). */
export function isIndexablePath(path: string): boolean {
  return INDEXABLE_PATH.test(path) && !COLUMNS.has(path);
}

/** The indexable fields a collection's data declares, in order, without repeats. */
export function declaredFields(data: unknown): string[] {
  const indexes = (data as { indexes?: unknown } | null)?.indexes;
  if (!Array.isArray(indexes)) return [];
  return [...new Set(indexes.filter((entry): entry is string => typeof entry === 'string' && isIndexablePath(entry)))];
}

/**
 * The fields to index: those declared, by most collections first (then by name), at most `max`.
 * `declarations` holds one list per collection.
 */
export function chooseFields(declarations: Iterable<string[]>, max: number): string[] {
  const counts = new Map<string, number>();
  for (const fields of declarations) for (const field of fields) counts.set(field, (counts.get(field) ?? 0) + 1);
  return [...counts.entries()]
    .sort(([a, countA], [b, countB]) => countB - countA || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, max)
    .map(([field]) => field);
}

/** Names of the indexes Quire keeps for declared fields. */
export const INDEX_PREFIX = 'quire_field_';

/**
 * The version of the indexes' definition (their expressions, in the query builders): a new one
 * names every index anew, so that the keeper drops the old ones and builds their successors.
 */
const DEFINITION = 1;

/** The index of a field: a name of its own, whatever the field (identifiers are short and plain). */
export function indexName(field: string): string {
  return `${INDEX_PREFIX}${createHash('sha256').update(`${DEFINITION}:${field}`).digest('hex').slice(0, 20)}`;
}

/** What a backend does for the keeper: read what is declared, what exists, and change it. */
export interface IndexStore {
  /** The `indexes` value of every live collection that has one (as stored: checked by the keeper). */
  declarations(): Promise<unknown[]>;
  /** The names of the declared-field indexes the store has that are usable. */
  existing(): Promise<Set<string>>;
  /** Builds the index of `field` (named `indexName(field)`), unless it exists. */
  create(field: string): Promise<void>;
  /** Drops the index `name`. */
  drop(name: string): Promise<void>;
}

export interface IndexKeeperOptions {
  /** Fields indexed at most (0: the extension is off, every declared-field index is dropped). */
  max: number;
  /** Told about a failure (the next pass tries again). */
  warn?: (message: string, error: unknown) => void;
  /** Between passes when nothing asks for one (default a minute). */
  intervalMs?: number;
  /**
   * Only learn which indexes exist, never build or drop one: a reader on a hot standby, whose
   * indexes are its primary's, replicated (the writer's keeper builds them).
   */
  observeOnly?: boolean;
}

/**
 * Keeps the store's indexes in line with the declarations, one pass at a time, and knows which
 * fields are indexed now (`indexed`, read by the query builders).
 */
export class IndexKeeper {
  readonly #store: IndexStore;
  readonly #max: number;
  readonly #warn: (message: string, error: unknown) => void;
  readonly #intervalMs: number;
  readonly #observeOnly: boolean;
  /** Fields whose index exists and is usable. */
  #indexed: ReadonlySet<string> = new Set();
  #running: Promise<void> | null = null;
  #again = false;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(
    store: IndexStore,
    { max, warn = () => {}, intervalMs = 60_000, observeOnly = false }: IndexKeeperOptions,
  ) {
    this.#store = store;
    this.#observeOnly = observeOnly;
    this.#max = max;
    this.#warn = warn;
    this.#intervalMs = intervalMs;
  }

  get indexed(): ReadonlySet<string> {
    return this.#indexed;
  }

  /** Starts the periodic passes, and a first one now. */
  start(): void {
    this.#timer = setInterval(() => void this.update(), this.#intervalMs);
    this.#timer.unref();
    void this.update();
  }

  /** A pass soon (one runs at a time; a call during a pass asks for one more after it). Resolves when it has run. */
  update(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.#pass();
        } while (this.#again && !this.#closed);
      } finally {
        this.#running = null;
      }
    })();
    return this.#running;
  }

  async #pass(): Promise<void> {
    try {
      const wanted = chooseFields(
        (await this.#store.declarations()).map((indexes) => declaredFields({ indexes })),
        this.#max,
      );
      const names = new Map(wanted.map((field) => [indexName(field), field]));
      let existing = await this.#store.existing();
      this.#indexed = new Set(wanted.filter((field) => existing.has(indexName(field))));
      if (this.#observeOnly) return;
      for (const name of existing) {
        if (this.#closed) return;
        if (!names.has(name)) await this.#store.drop(name);
      }
      for (const field of wanted) {
        if (this.#closed) return;
        if (!existing.has(indexName(field))) await this.#store.create(field);
      }
      existing = await this.#store.existing();
      this.#indexed = new Set(wanted.filter((field) => existing.has(indexName(field))));
    } catch (error) {
      this.#warn('declared indexes: a pass failed (the next one tries again)', error);
    }
  }

  /** Stops the passes; waits for one under way. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#running;
  }
}
