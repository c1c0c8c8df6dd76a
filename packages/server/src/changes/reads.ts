/**
 * How the change monitor reads its entries from the store, at a cost that follows what the caller
 * may read and what changed, never the whole deployment (issue 30):
 *
 * - Which collections a caller may read: with `changes_resources`, exactly those, to everyone;
 *   for a principal granted every bucket or collection by the `*_principals` settings, every
 *   collection; otherwise the buckets and collections where one of the caller's principals holds
 *   `read` or `write` (`permissions.containersOf`: one index range per principal, records' ACEs
 *   left out), and every collection of such a bucket.
 * - Their records timestamps: `objects.collectionTimestamps`, one statement. With `_since` (or a
 *   stream's `Last-Event-ID`), the timestamps above it are walked in order first, whoever's they
 *   are, and checked against their ACLs (from the read cache on PostgreSQL): a poll that finds
 *   nothing new costs next to nothing. Past `SINCE_SCAN` such rows, the caller's own collections
 *   drive the read instead.
 *
 * Entries are built only for what is returned, their ids from a cache (entry-factory.ts).
 */
import type { PermissionSettings } from '../permission/settings.js';
import type {
  CollectionTimestamp,
  CollectionTimestampsQuery,
  Filter,
  Permissions,
  StorageSession,
  StoredObject,
} from '../storage/types.js';
import { DELETIONS_SCOPE, type Deletion, deletionAcl, toDeletion } from './deletions.js';
import { collectionUri, isMonitored, mayRead, type ChangeEntry, type MonitoredResources } from './entries.js';
import { EntryFactory } from './entry-factory.js';

/** Rows of the timestamps index read at a time. */
const SCAN = 500;
/** Past this many rows walked, a caller who sees under 1 in SPARSE of them has their own collections read instead. */
const SPARSE_AFTER = 2_000;
const SPARSE = 10;
/** Rows read at a time when looking down for the newest visible deletion. */
const NEWEST_SCAN = 50;
const READ_PERMISSIONS = ['read', 'write'];

export interface EntryRange {
  /** Timestamps strictly above. */
  since?: number;
  /** Timestamps up to (inclusive). */
  atMost?: number;
  /** Only these buckets (a `bucket=` filter pushed down; the filters still apply after). */
  buckets?: readonly string[];
  order?: 'asc' | 'desc';
  after?: CollectionTimestamp;
  limit?: number;
  /** A stream's next pages: how the first one read (the caller's own collections, when they see few of all). */
  scan?: 'collections';
}

type Within = CollectionTimestampsQuery['within'];

/** A page of entries, and where the next starts (null: the last page). */
export interface EntryPage {
  entries: ChangeEntry[];
  next: Pick<EntryRange, 'after' | 'scan'> | null;
}

export class MonitorReads {
  readonly #settings: PermissionSettings;
  readonly #resources: MonitoredResources | null;
  readonly factory: EntryFactory;

  constructor(settings: PermissionSettings, resources: MonitoredResources | null, host: string) {
    this.#settings = settings;
    this.#resources = resources;
    this.factory = new EntryFactory(host);
  }

  get resources(): MonitoredResources | null {
    return this.#resources;
  }

  /** Whether the monitor lists this entry's collection (`changes_resources`). */
  monitors(entry: Pick<ChangeEntry, 'bucket' | 'collection'>): boolean {
    return isMonitored(this.#resources, entry.bucket, entry.collection);
  }

  /** The entry of a collection (its id from the cache). */
  entry(bucket: string, collection: string, lastModified: number): ChangeEntry {
    return this.factory.entry(bucket, collection, lastModified);
  }

  /** Whether `principals` may see entries of a collection with these ACLs. */
  visible(
    principals: readonly string[],
    bucketAcl: Permissions | undefined,
    collectionAcl: Permissions | undefined,
  ): boolean {
    return this.#resources !== null || mayRead(this.#settings, principals as string[], bucketAcl, collectionAcl);
  }

  /**
   * The entries `principals` may see within `range`, in its order (newest first unless it says
   * otherwise): all of them, or the first `want` (and those of the same timestamp as the last);
   * with `deletions`, the deleted collections' entries of the range too (deletions.ts).
   */
  async entries(
    session: StorageSession,
    principals: readonly string[],
    range: EntryRange = {},
    options: { deletions?: boolean; want?: number } = {},
  ): Promise<ChangeEntry[]> {
    const order = range.order ?? 'desc';
    const want = options.want ?? Number.POSITIVE_INFINITY;
    // A whole list (many wanted, no _since to stop at): the caller's collections in one statement
    // cost less than pages of the walk. With _since, the walk costs what changed.
    const whole = want > SPARSE_AFTER && range.since === undefined;
    const scanned = whole ? null : await this.#scan(session, principals, { ...range, order }, want);
    const rows = scanned?.rows ?? (await this.#readAll(session, principals, range, order));
    const entries = await this.#toEntries(session, rows);
    if (!options.deletions) return entries;
    const deleted = await this.#deletions(session, principals, range);
    return deleted.length > 0 ? [...entries, ...deleted] : entries;
  }

  /** Every row of `range` that `principals` may see, driven by their collections. */
  async #readAll(session: StorageSession, principals: readonly string[], range: EntryRange, order: 'asc' | 'desc') {
    const { since, atMost } = range;
    if (since === undefined && atMost === undefined && !range.buckets && !this.#resources) {
      // The collections held and their timestamps in one statement (not 10,000 URIs and back).
      const heldBy = this.#grantedEverything(principals)
        ? {}
        : { heldBy: { principals, permissions: READ_PERMISSIONS } };
      return this.#read(session, { within: null, order, ...heldBy });
    }
    const within = await this.#within(session, principals, range.buckets);
    if (within && within.buckets.length === 0 && within.collections.length === 0) return [];
    return this.#read(session, { within, since, atMost, order });
  }

  /**
   * Every live collection and deletion changed after `since`, whoever may read them, with who may
   * see the deletions (the feed's re-read).
   */
  async changedSince(session: StorageSession, since: number): Promise<{ live: ChangeEntry[]; deletions: Deletion[] }> {
    const rows = await this.#read(session, { within: this.#resourcesWithin(), since, order: 'asc' });
    const deletions = (await this.#deletionObjects(session, { since }))
      .map((object) => toDeletion(this.factory, object))
      .filter(({ entry }) => this.monitors(entry));
    return { live: await this.#toEntries(session, rows), deletions };
  }

  /** The entries of these collections as they are now, whoever may read them (a standby's feed, feed-log.ts). */
  async latest(session: StorageSession, collections: ReadonlyArray<readonly [string, string]>): Promise<ChangeEntry[]> {
    return this.#toEntries(session, await this.#read(session, { within: { buckets: [], collections } }));
  }

  /**
   * A page of the entries of `range`, oldest first, for a stream's first events (and the
   * deletions since `range.since` on the first page); `next`: where the next page starts.
   */
  async page(
    session: StorageSession,
    principals: readonly string[],
    range: EntryRange & { limit: number },
  ): Promise<EntryPage> {
    let rows: CollectionTimestamp[];
    let next: EntryPage['next'];
    const scanned =
      range.scan === 'collections'
        ? null
        : await this.#scan(session, principals, { ...range, order: 'asc' }, range.limit);
    if (scanned) ({ rows, next } = scanned);
    else {
      // Few of the collections are the caller's: theirs, a page at a time.
      const within = await this.#within(session, principals, range.buckets);
      const empty = within && within.buckets.length === 0 && within.collections.length === 0;
      rows = empty
        ? []
        : await this.#read(session, {
            within,
            since: range.since,
            atMost: range.atMost,
            order: 'asc',
            after: range.after,
            limit: range.limit,
          });
      next = rows.length === range.limit ? { after: rows.at(-1)!, scan: 'collections' } : null;
    }
    const entries = await this.#toEntries(session, rows);
    if (range.since !== undefined && range.after === undefined) {
      // The deletions since, first (a stream's first page): few, and older or newer alike, a
      // reconnecting client asks for them again at worst.
      const deleted = await this.#deletions(session, principals, range);
      if (deleted.length > 0)
        return { entries: [...deleted.sort((a, b) => a.last_modified - b.last_modified), ...entries], next };
    }
    return { entries, next };
  }

  /**
   * The newest timestamp among the entries `principals` may see, deleted collections' included
   * (0: none): the list's ETag.
   */
  async newest(session: StorageSession, principals: readonly string[], atMost?: number): Promise<number> {
    const [live, deleted] = [
      await this.#newestLive(session, principals, atMost),
      await this.#newestDeletion(session, principals, atMost),
    ];
    return Math.max(live, deleted);
  }

  async #newestLive(session: StorageSession, principals: readonly string[], atMost?: number): Promise<number> {
    // Down from `atMost`, whoever's: usually the first rows hold the caller's newest.
    // The first visible row is enough, not every collection of its timestamp (those made in one
    // transaction share it).
    const scanned = await this.#scan(
      session,
      principals,
      { ...(atMost !== undefined ? { atMost } : {}), order: 'desc' },
      1,
      false,
    );
    if (scanned) return scanned.rows[0]?.lastModified ?? 0;
    const within = await this.#within(session, principals);
    if (within && within.buckets.length === 0 && within.collections.length === 0) return 0;
    const [row] = await this.#toEntries(
      session,
      await this.#read(session, { within, atMost, order: 'desc', limit: 1 }),
    );
    return row?.last_modified ?? 0;
  }

  /**
   * The rows `principals` may see, in timestamp order, through the timestamps index (whoever's
   * they are, a page of `SCAN` at a time, checked against their ACLs): the first `want`, and
   * those of the same timestamp as the last. The cost of what is read, not of how many
   * collections exist. Null when the caller may see under 1 in `SPARSE` of the rows walked (past
   * `SPARSE_AFTER`): their own collections are then fewer than the others', and read instead.
   * `next`: where to go on, when the range does. Without `ties`, exactly the first `want`.
   */
  async #scan(
    session: StorageSession,
    principals: readonly string[],
    range: EntryRange & { order: 'asc' | 'desc' },
    want: number,
    ties = true,
  ): Promise<{ rows: CollectionTimestamp[]; next: EntryPage['next'] } | null> {
    const within = this.#resourcesWithin();
    const buckets = range.buckets ? new Set(range.buckets) : null;
    // The index is walked from one end: an open range is bounded by the end it starts from.
    const bounds =
      range.order === 'asc'
        ? { since: range.since ?? -1, atMost: range.atMost }
        : { since: range.since, atMost: range.atMost ?? Number.MAX_SAFE_INTEGER };
    const found: CollectionTimestamp[] = [];
    let after = range.after;
    let walked = 0;
    // Pages grow from what is wanted to SCAN: the newest visible row (an ETag) costs a row or two,
    // and a page that found most of what it wanted is followed by one of about what is missing.
    let kept = 0;
    for (let size = Math.min(SCAN, Math.max(8, want + 1)); ; size = nextScan(size, want - found.length, kept)) {
      const rows = await this.#read(session, { within, ...bounds, order: range.order, after, limit: size });
      const before = found.length;
      walked += rows.length;
      const candidates = buckets ? rows.filter((row) => buckets.has(row.bucket)) : rows;
      for (const row of await this.#visibleRows(session, principals, candidates)) {
        const last = found.at(-1);
        if (last && found.length >= want && (!ties || row.lastModified !== last.lastModified))
          return { rows: found, next: { after: last } };
        found.push(row);
      }
      if (!ties && found.length >= want) return { rows: found, next: { after: found.at(-1)! } };
      if (rows.length < size) return { rows: found, next: null };
      kept = found.length - before;
      after = rows.at(-1);
      // Between pages, a turn of the event loop (the embedded store's statements are synchronous).
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (walked >= SPARSE_AFTER && found.length * SPARSE < walked) return null;
    }
  }

  /** Deleted collections' entries of the range that `principals` may see. */
  async #deletions(
    session: StorageSession,
    principals: readonly string[],
    range: EntryRange,
  ): Promise<Array<ChangeEntry & { deleted: true }>> {
    const objects = await this.#deletionObjects(session, range);
    const buckets = range.buckets ? new Set(range.buckets) : null;
    return objects
      .map((object) => toDeletion(this.factory, object))
      .filter(
        ({ entry, readers }) =>
          this.monitors(entry) &&
          (!buckets || buckets.has(entry.bucket)) &&
          this.visible(principals, deletionAcl(readers), undefined),
      )
      .map(({ entry }) => entry);
  }

  async #deletionObjects(
    session: StorageSession,
    range: { since?: number; atMost?: number; order?: 'asc' | 'desc'; limit?: number },
  ): Promise<StoredObject[]> {
    const filters: Filter[] = [];
    if (range.since !== undefined) filters.push({ field: 'last_modified', operator: 'gt', value: range.since });
    if (range.atMost !== undefined) filters.push({ field: 'last_modified', operator: 'max', value: range.atMost });
    const objects = await session.objects.list(DELETIONS_SCOPE, {
      filters,
      sorting: [{ field: 'last_modified', direction: range.order === 'desc' ? -1 : 1 }],
      ...(range.limit !== undefined ? { limit: range.limit } : {}),
    });
    return objects.filter((object): object is StoredObject => !('deleted' in object && object.deleted === true));
  }

  async #newestDeletion(session: StorageSession, principals: readonly string[], atMost?: number): Promise<number> {
    let bound = atMost;
    for (;;) {
      const objects = await this.#deletionObjects(session, {
        ...(bound !== undefined ? { atMost: bound } : {}),
        order: 'desc',
        limit: NEWEST_SCAN,
      });
      for (const object of objects) {
        const { entry, readers } = toDeletion(this.factory, object);
        if (this.monitors(entry) && this.visible(principals, deletionAcl(readers), undefined))
          return entry.last_modified;
      }
      if (objects.length < NEWEST_SCAN) return 0;
      bound = objects.at(-1)!.last_modified - 1;
    }
  }

  async #visibleRows(
    session: StorageSession,
    principals: readonly string[],
    rows: CollectionTimestamp[],
  ): Promise<CollectionTimestamp[]> {
    if (rows.length === 0 || this.#resources !== null || this.#grantedEverything(principals)) return rows;
    const uris = new Set<string>();
    for (const row of rows) uris.add(`/buckets/${row.bucket}`).add(collectionUri(row.bucket, row.collection));
    const acls = await session.permissions.get([...uris]);
    return rows.filter((row) =>
      mayRead(
        this.#settings,
        principals as string[],
        acls.get(`/buckets/${row.bucket}`),
        acls.get(collectionUri(row.bucket, row.collection)),
      ),
    );
  }

  #grantedEverything(principals: readonly string[]): boolean {
    return mayRead(this.#settings, principals as string[], undefined, undefined);
  }

  #resourcesWithin(): Within {
    const resources = this.#resources;
    if (!resources) return null;
    return {
      buckets: [...resources.buckets],
      collections: [...resources.collections]
        .map((uri) => uri.split('/').filter(Boolean))
        .map(([, bucket, , collection]) => [bucket!, collection!] as const),
    };
  }

  /** The collections `principals` may read, as the store reads them (null: every collection). */
  async #within(
    session: StorageSession,
    principals: readonly string[],
    onlyBuckets?: readonly string[],
  ): Promise<Within> {
    let within = this.#resourcesWithin();
    if (!within && !this.#grantedEverything(principals)) {
      const uris = await session.permissions.containersOf(principals as string[], READ_PERMISSIONS);
      const buckets: string[] = [];
      const collections: Array<readonly [string, string]> = [];
      for (const uri of uris) {
        const parts = uri.split('/');
        if (parts.length === 3) buckets.push(parts[2]!);
        else if (parts.length === 5 && parts[3] === 'collections') collections.push([parts[2]!, parts[4]!]);
      }
      within = { buckets, collections };
    }
    if (!onlyBuckets) return within;
    const only = new Set(onlyBuckets);
    if (!within) return { buckets: [...only], collections: [] };
    return {
      buckets: within.buckets.filter((bucket) => only.has(bucket)),
      collections: within.collections.filter(([bucket]) => only.has(bucket)),
    };
  }

  #read(session: StorageSession, query: CollectionTimestampsQuery): Promise<CollectionTimestamp[]> {
    return session.objects.collectionTimestamps(query);
  }

  /** Entries of rows; a collection whose records scope has no timestamp yet gets one now (`timestamp` stores it). */
  async #toEntries(session: StorageSession, rows: CollectionTimestamp[]): Promise<ChangeEntry[]> {
    const entries: ChangeEntry[] = [];
    for (const row of rows) {
      const lastModified =
        row.lastModified ??
        (await session.objects.timestamp({
          resourceName: 'record',
          parentId: collectionUri(row.bucket, row.collection),
        }));
      if (isMonitored(this.#resources, row.bucket, row.collection))
        entries.push(this.entry(row.bucket, row.collection, lastModified));
    }
    return entries;
  }
}

/**
 * What of a monitor query the store can narrow its read with: the bounds on `last_modified`
 * (`_since`, `_before`, `gt_`, `min_`, `lt_`, `max_` with integers) and `bucket` / `in_bucket`
 * with strings. A superset of what the filters select: they still apply to what is read.
 */
export function rangeOf(filters: readonly Filter[]): EntryRange {
  const range: EntryRange = {};
  let buckets: Set<string> | undefined;
  const narrow = (values: string[]) => {
    buckets = new Set(buckets ? values.filter((value) => buckets!.has(value)) : values);
  };
  for (const { field, operator, value } of filters) {
    if (field === 'last_modified' && Number.isSafeInteger(value)) {
      const n = value as number;
      if (operator === 'gt' || operator === 'min')
        range.since = Math.max(range.since ?? -1, operator === 'gt' ? n : n - 1);
      if (operator === 'lt' || operator === 'max')
        range.atMost = Math.min(range.atMost ?? Number.MAX_SAFE_INTEGER, operator === 'lt' ? n - 1 : n);
    } else if (field === 'bucket' && operator === 'eq' && typeof value === 'string') narrow([value]);
    else if (
      field === 'bucket' &&
      operator === 'in' &&
      Array.isArray(value) &&
      value.every((item) => typeof item === 'string')
    )
      narrow(value as string[]);
  }
  if (buckets) range.buckets = [...buckets];
  return range;
}

/**
 * The size of the walk's next page: four times the last, or twice what is still missing if less
 * (8 at least); four times the last when it kept nothing (others' collections: 1,000 newer than
 * the caller's took 125 pages of 8 before the first of theirs, 300 ms of each poll).
 */
function nextScan(size: number, missing: number, kept: number): number {
  return Math.min(SCAN, size * 4, kept === 0 ? SCAN : Math.max(8, 2 * (missing + 1)));
}
