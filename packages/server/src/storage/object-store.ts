/**
 * The contract of the objects facet (`ObjectStore`) and the values it stores and takes: objects,
 * tombstones, scopes, filters, sorting, listings. Part of the storage contract (types.ts).
 */

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A live object as stored: its own attributes plus `id` and `last_modified`. */
export interface StoredObject {
  id: string;
  last_modified: number;
  [field: string]: unknown;
}

/** What a deleted object leaves behind for `_since` polling. */
export interface Tombstone {
  id: string;
  last_modified: number;
  deleted: true;
}

/**
 * A listed object as the JSON text it is answered with (`{…data, "id", "last_modified"}`, or a
 * tombstone's three fields), built from the stored text: a page goes to the wire without a parse
 * and a serialisation per object (`ObjectStore.listJson`).
 */
export interface ListedJson {
  id: string;
  last_modified: number;
  deleted: boolean;
  json: string;
}

/**
 * One "collection" of the protocol: the objects of one resource type under one parent,
 * e.g. `{ resourceName: 'record', parentId: '/buckets/b/collections/c' }`.
 * Buckets live under parentId `''`.
 */
export interface Scope {
  resourceName: string;
  parentId: string;
}

/**
 * The resource of history entries (parentId: the bucket URI). Its scopes are append-only logs,
 * filled by `outbox.moveToScope` only: `create`, `update` and `insertMany` refuse them. The SQL
 * storage keeps them in a table of their own, indexed by timestamp only (sql/migrations): `get`
 * and `delete` by id scan the scope, filter by `last_modified` too where you can.
 */
export const HISTORY_RESOURCE = 'history';

export type FilterOperator =
  | 'eq'
  | 'not'
  | 'lt'
  | 'gt'
  | 'min'
  | 'max'
  | 'in'
  | 'exclude'
  | 'like'
  | 'has'
  | 'contains'
  | 'contains_any';

/**
 * A filter on one field. `field` is a dotted path into the object (`person.name`); the
 * names `id` and `last_modified` address the object's id and timestamp.
 *
 * Semantics (PostgreSQL jsonb's; the reference engine `filters/evaluate.ts` computes them in
 * memory, and the shared suite checks every backend against it on generated data):
 * - Values compare by JSON type rank `null < string < number < boolean < array < object`,
 *   then by value within a type (jsonb ordering).
 * - A missing field: no match for eq / in / like / contains / contains_any / lt / max;
 *   a match for not / exclude / gt / min (missing sorts after every value).
 * - `in` / `exclude`: `value` is an array of candidate values.
 * - `like`: `value` is a string; `*` matches any run of characters, everything else is
 *   literal (no `%`/`_` wildcards), case-insensitive (Unicode simple lowercase, whatever the
 *   database's locale: filters/like.ts); without `*` it is a substring match. Only string
 *   fields match.
 * - A dotted path reads an object's key, or an array's element by index (`tags.0`), as `#>`.
 * - `has`: `value` truthy → field present (a stored JSON null counts as present); falsy → absent.
 * - `contains`: the field is an array containing every element of `value` (an array).
 * - `contains_any`: the field is an array containing at least one element of `value` (an array).
 */
export interface Filter {
  field: string;
  operator: FilterOperator;
  value: unknown;
}

/** `direction` 1 = ascending (missing fields last), -1 = descending (missing fields first). */
export interface Sort {
  field: string;
  direction: 1 | -1;
}

export interface ListOptions {
  filters?: Filter[];
  /** Sort order. Callers always end it with `last_modified`, which is unique per scope. */
  sorting?: Sort[];
  /**
   * Keyset continuation: the sort-field values of the last object of the previous page
   * (keys are sort field paths; a key absent = that object lacked the field). Only objects
   * strictly after it in `sorting` order are returned.
   */
  after?: Record<string, unknown>;
  /** Maximum number of objects returned. */
  limit?: number;
  /** Include tombstones (`{id, last_modified, deleted: true}`) in the result. */
  includeDeleted?: boolean;
}

export interface ReadOptions {
  /** Lock what is read until the transaction ends (see `get`); ignored outside a transaction. */
  forUpdate?: boolean;
}

export interface WriteOptions {
  /**
   * A client-supplied `last_modified` (protocol-reference §5.2, the 1.18 rule): used as the
   * object's timestamp when it is greater than the scope timestamp (which then becomes it),
   * kept in the past without bumping the scope timestamp when smaller (unless it equals the
   * timestamp of another object of the scope, in which case a fresh one is assigned), and
   * replaced by a fresh timestamp when equal to the scope timestamp.
   */
  lastModified?: number;
  /**
   * The id was just generated for this creation (random: a UUID, or a bucket's 8-character
   * name): no object has it, so the backend need not look. Should one have it after all, the transaction fails with a
   * UnicityError (at the latest when it commits).
   */
  newId?: boolean;
  /**
   * Stamp the object when the transaction commits, in the statement that stores it, rather
   * than now: the scope's lock is then held only while the database commits, not from this
   * write on. The object returned has `last_modified` NaN until the transaction has committed,
   * then the real value (that same object is updated): for a caller that reads it only after
   * the commit (not inside a batch, nor for listeners that run in the transaction). A backend
   * may stamp at once.
   */
  stampAtCommit?: boolean;
}

/** What `ObjectStore.collectionTimestamps` reads. */
export interface CollectionTimestampsQuery {
  /**
   * Which collections: those of the buckets named and the single collections named (a bucket's
   * collections named again are listed once); `null`: every collection.
   */
  within: {
    buckets: readonly string[];
    collections: ReadonlyArray<readonly [bucket: string, collection: string]>;
  } | null;
  /**
   * Instead of `within` (without `since` or `atMost`): the buckets and collections on which one of
   * these principals holds one of these permissions (`permissions.containersOf`), read in the same
   * statement, so that a caller's thousands of collections are not sent back and forth.
   */
  heldBy?: { principals: readonly string[]; permissions: readonly string[] };
  /** Only timestamps above this one (exclusive). With `atMost`, the read goes by timestamp. */
  since?: number;
  /** Only timestamps up to this one (inclusive). */
  atMost?: number;
  order?: 'asc' | 'desc';
  /** Keyset: the rows after this one in `order`. */
  after?: CollectionTimestamp;
  limit?: number;
}

/** A live collection and the timestamp of its records (null: no records timestamp stored yet). */
export interface CollectionTimestamp {
  bucket: string;
  collection: string;
  lastModified: number | null;
}

/** Objects, tombstones and scope timestamps. Writes need a transaction; reads work in any session. */
export interface ObjectStore {
  /**
   * The scope timestamp: max(last_modified of every object and tombstone of the scope, the
   * stored timestamp). A scope never written gets `now` stored on first call, then stays
   * stable until a write. Never decreases, also after the objects are deleted.
   */
  timestamp(scope: Scope): Promise<number>;

  /**
   * Optional: the stored timestamps of several scopes of one resource at once (the change
   * monitor). Scopes never written are absent: ask `timestamp` for those.
   */
  timestamps?(resourceName: string, parentIds: string[]): Promise<Map<string, number>>;

  /**
   * The change monitor (changes/): live collections with their records' scope
   * timestamp, in `(lastModified, records scope URI)` order (`order`), after the key `after`,
   * at most `limit`. With `since` the timestamps drive the read (an index on them), so its cost
   * follows what changed since, not how many collections exist; without it, `within` does.
   * A collection whose records scope has no timestamp yet comes with `lastModified: null`
   * (first in ascending order; never with `since` or `atMost`): ask `timestamp` for it.
   * Read sessions: a transaction's own unsent writes may be missing.
   */
  collectionTimestamps(query: CollectionTimestampsQuery): Promise<CollectionTimestamp[]>;

  /**
   * Live object or null (tombstones are not returned). With `forUpdate` in a transaction, what
   * it returns stays true until commit: the object's row (live or tombstone) is locked, and
   * when there is none, the scope is — so a concurrent writer of that object waits, then reads
   * what this transaction left. Read the object to change this way before deciding anything
   * from it (preconditions, patches): the decision and the write are then one atomic step.
   */
  get(scope: Scope, id: string, options?: ReadOptions): Promise<StoredObject | null>;

  /** Creates a live object; replaces a tombstone of the same id. Throws UnicityError if live. */
  create(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject>;

  /** Replaces (or creates) the object with `data` (ignoring any id/last_modified in it). */
  update(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject>;

  /**
   * Stores new objects (ids not yet used in the scope; an object of the same id is replaced) in
   * one step, with consecutive fresh timestamps in the given order, the scope timestamp ending
   * at the last one: one statement for many (bulk loads, e.g. the client benchmark's seed).
   */
  insertMany(scope: Scope, objects: Array<{ id: string; data: Record<string, unknown> }>): Promise<StoredObject[]>;

  /**
   * Stores objects exactly as given — ids, `last_modified`, tombstones (`deleted: true`) — in
   * one step, replacing an object of the same id (history entries: of the same timestamp), then
   * raises the scope timestamp to `scopeTimestamp` (default: the largest `last_modified` given),
   * never lowering it. For `quire import`, into a store without other objects in the scope: a
   * timestamp another object of the scope holds fails (UnicityError). History scopes allowed.
   */
  import(scope: Scope, objects: Array<StoredObject | Tombstone>, scopeTimestamp?: number): Promise<void>;

  /** Deletes a live object, leaving a tombstone. Throws ObjectNotFoundError if not live. */
  delete(scope: Scope, id: string, options?: WriteOptions): Promise<Tombstone>;

  /**
   * Deletes every live object matching the options, each leaving a tombstone with its own
   * increasing timestamp. Returns the tombstones in `sorting` order.
   */
  deleteAll(scope: Scope, options?: Omit<ListOptions, 'includeDeleted'>): Promise<Tombstone[]>;

  /** Lists objects (and tombstones if asked) of the scope. */
  list(scope: Scope, options?: ListOptions): Promise<Array<StoredObject | Tombstone>>;

  /** `list`, each object as its JSON text (the same objects, the same order). */
  listJson(scope: Scope, options?: ListOptions): Promise<ListedJson[]>;

  /** Counts live objects matching the filters. */
  count(scope: Scope, filters?: Filter[]): Promise<number>;

  /**
   * Hard-deletes (no tombstones) every object and tombstone whose parentId is `uri` or starts
   * with `uri + '/'` (history entries included). The timestamps of the scopes below move to
   * max(now, their value + 1): a list re-created there starts above every timestamp the old
   * one served, so an old ETag is never answered 304 and `_since=<old>` shows the list moved
   * past it with nothing returned. Their ACLs and the outbox items are the other facets' part.
   */
  deleteTree(uri: string): Promise<void>;

  /** Removes tombstones of the scope older than `before` (all when omitted). Returns how many. */
  purgeDeleted(scope: Scope, before?: number): Promise<number>;

  /**
   * Hard-deletes (no tombstones) the live objects of the scope that match `filters`, but the
   * newest `keep` of them (by timestamp; `keep` ≥ 1). Returns how many were deleted. The
   * history's auto-trim: old entries are dropped, not announced.
   */
  trim(scope: Scope, keep: number, filters?: Filter[]): Promise<number>;
}
