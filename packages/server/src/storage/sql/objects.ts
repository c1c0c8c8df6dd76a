/**
 * The objects facet of a SQL session: objects, tombstones and scope timestamps
 * (protocol-reference §5).
 *
 * Each scope has a row in `timestamps`. A write bumps that row to max(database now, scope
 * timestamp + 1), which row-locks it until commit, and stamps its object with it
 * (pending-writes.ts: the transaction's next writes to the scope take the next values; a
 * request's own write is bumped and stored by its final statement). Writers to one scope
 * therefore serialise, even across server processes, and a `_since` poll that reads the scope
 * timestamp before the objects can never return an ETag that a later-committing write
 * undercuts (Kinto issues #602 and #3393). The clock is the database's, not the process's.
 */
import { BackendError, ObjectNotFoundError, StorageError, UnicityError } from '../errors.js';
import { assertNotHistory, tableOf } from '../tables.js';
import { bucketIdOf, collectionScopeUri, splitWithin } from '../collection-timestamps.js';
import type {
  CollectionTimestamp,
  CollectionTimestampsQuery,
  Filter,
  ListedJson,
  ListOptions,
  ObjectStore,
  ReadOptions,
  Scope,
  StoredObject,
  Tombstone,
  WriteOptions,
} from '../types.js';
import { UninitialisedScope } from '../uninitialised-scopes.js';
import { DYNAMIC } from './drivers/types.js';
import { listedJson } from '../listed-json.js';
import { likePrefix, QueryBuilder } from './queries.js';
import { NOW_MS } from './pending-writes.js';
import type { ObjectRow, SqlSessionState } from './session-state.js';
import { isCachedResource, objectKey } from './shared-cache.js';

/** What a tombstone's `data` holds, so that a `deleted` filter matches tombstones as in Kinto. */
const TOMBSTONE_DATA = '{"deleted": true}';

/** Index entries a probe reads at most (`#selective`). */
const PROBE = 1_000;
/**
 * Newest objects of the scope a filtered listing walks in index order before it reads the whole
 * scope in physical order instead (`#listFromNewest`): enough to fill a page of a filter that
 * keeps one object in a few hundred, few enough to cost a few ms when it does not.
 */
const WALK = 2_000;
/** The filters a declared index answers (queries.ts `ordered`). */
const PROBED_OPERATORS = new Set<Filter['operator']>(['eq', 'not', 'lt', 'max', 'gt', 'min']);

export class SqlObjects implements ObjectStore {
  readonly #s: SqlSessionState;

  constructor(state: SqlSessionState) {
    this.#s = state;
  }

  /** The stored timestamps of these scopes of one resource, in one statement (scopes never written are absent). */
  async timestamps(resourceName: string, parentIds: string[]): Promise<Map<string, number>> {
    if (parentIds.length === 0) return new Map();
    const rows = await this.#s.query<{ parent_id: string; last_modified: number }>(
      'SELECT parent_id, last_modified FROM timestamps WHERE resource_name = $1 AND parent_id = ANY($2::text[])',
      [resourceName, parentIds],
    );
    return new Map(rows.map((row) => [row.parent_id, Number(row.last_modified)]));
  }

  async collectionTimestamps(query: CollectionTimestampsQuery): Promise<CollectionTimestamp[]> {
    const params: unknown[] = [];
    const param = (value: unknown, type: string) => `$${params.push(value)}::${type}`;
    const desc = query.order === 'desc';
    const direction = desc ? 'DESC' : 'ASC';
    const limit = query.limit !== undefined ? `LIMIT ${param(query.limit, 'int')}` : '';
    // One order for both ways of reading: the records timestamp, then the records scope's URI.
    const after = (timestamp: string, uri: string) =>
      query.after
        ? [
            `(${timestamp}, ${uri}) ${desc ? '<' : '>'} (${param(query.after.lastModified ?? -1, 'bigint')}, ${param(collectionScopeUri(query.after), 'text')})`,
          ]
        : [];
    if (query.since !== undefined || query.atMost !== undefined) {
      // Driven by the index timestamps (resource_name, last_modified, parent_id), in its order:
      // what changed since costs what changed. The records scope names its collection.
      const conditions = ["t.resource_name = 'record'", ...after('t.last_modified', 't.parent_id')];
      if (query.since !== undefined) conditions.push(`t.last_modified > ${param(query.since, 'bigint')}`);
      if (query.atMost !== undefined) conditions.push(`t.last_modified <= ${param(query.atMost, 'bigint')}`);
      if (query.within) {
        const { buckets, parents, ids } = splitWithin(query.within);
        const collections = parents.map((parent, i) => `${parent}/collections/${ids[i]}`);
        conditions.push(
          `('/buckets/' || split_part(t.parent_id, '/', 3) = ANY(${param(buckets, 'text[]')}) OR t.parent_id = ANY(${param(collections, 'text[]')}))`,
        );
      }
      // LATERAL (kept apart by its LIMIT 1: a collection is one row): the timestamps walked in
      // index order drive the lookups of their collections by primary key, whatever the
      // statistics say (a fresh table's made PostgreSQL join 1,000 x 1,000 rows); the outer
      // LIMIT stops the walk.
      const rows = await this.#s.query<{ bucket_uri: string; collection: string; last_modified: string | number }>(
        `SELECT c.parent_id AS bucket_uri, c.id AS collection, t.last_modified
         FROM timestamps t
         CROSS JOIN LATERAL (
           SELECT parent_id, id FROM objects
           WHERE parent_id = '/buckets/' || split_part(t.parent_id, '/', 3) AND resource_name = 'collection'
             AND id = split_part(t.parent_id, '/', 5) COLLATE "default" AND NOT deleted
           LIMIT 1
         ) AS c
         WHERE ${conditions.join(' AND ')}
         ORDER BY t.last_modified ${direction}, t.parent_id ${direction} ${limit}`,
        params,
        DYNAMIC,
      );
      return rows.map((row) => ({
        bucket: bucketIdOf(row.bucket_uri),
        collection: row.collection,
        lastModified: Number(row.last_modified),
      }));
    }
    const select = `SELECT c.parent_id AS bucket_uri, c.id AS collection, t.last_modified, c.parent_id || '/collections/' || c.id AS uri
       FROM objects c LEFT JOIN timestamps t ON t.parent_id = c.parent_id || '/collections/' || c.id AND t.resource_name = 'record'`;
    const live = "c.resource_name = 'collection' AND NOT c.deleted";
    const branches: string[] = [];
    if (!query.within) branches.push(`${select} WHERE ${live}`);
    else {
      const { buckets, parents, ids } = splitWithin(query.within);
      if (buckets.length > 0)
        branches.push(`${select} WHERE ${live} AND c.parent_id = ANY(${param(buckets, 'text[]')})`);
      if (parents.length > 0) {
        branches.push(
          `${select} JOIN unnest(${param(parents, 'text[]')}, ${param(ids, 'text[]')}) AS named(parent_id, id)
             ON c.parent_id = named.parent_id AND c.id = named.id WHERE ${live}`,
        );
      }
    }
    if (branches.length === 0) return [];
    const where = after('COALESCE(last_modified, -1)', 'uri COLLATE "C"');
    const rows = await this.#s.query<{ bucket_uri: string; collection: string; last_modified: string | number | null }>(
      `SELECT bucket_uri, collection, last_modified FROM (${branches.join(' UNION ALL ')}) AS found ${where.length ? `WHERE ${where[0]}` : ''}
       ORDER BY COALESCE(last_modified, -1) ${direction}, uri COLLATE "C" ${direction} ${limit}`,
      params,
      DYNAMIC,
    );
    return rows.map((row) => ({
      bucket: bucketIdOf(row.bucket_uri),
      collection: row.collection,
      lastModified: row.last_modified === null ? null : Number(row.last_modified),
    }));
  }

  async timestamp(scope: Scope): Promise<number> {
    const s = this.#s;
    const params = [scope.parentId, scope.resourceName];
    if (s.pending.hasLate(scope.parentId, scope.resourceName)) await s.sendPendingWrites();
    const held = s.pending.timestamp(scope.parentId, scope.resourceName);
    if (held !== undefined) return held;
    if (s.mode === 'snapshot') {
      const [row] = await s.query<{ last_modified: number }>(
        'SELECT last_modified FROM timestamps WHERE parent_id = $1 AND resource_name = $2',
        params,
      );
      if (!row) throw new UninitialisedScope(scope);
      return row.last_modified;
    }
    // One statement: the stored timestamp, or `now` stored for a scope never seen. The insert
    // of a concurrent first reader makes ours do nothing while our SELECT does not see it yet
    // (same snapshot): then a second look finds it.
    for (let attempt = 1; ; attempt++) {
      const [row] = await s.query<{ last_modified: number }>(
        `WITH stored AS (
           INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES ($1, $2, ${NOW_MS})
           ON CONFLICT (parent_id, resource_name) DO NOTHING RETURNING last_modified
         )
         SELECT last_modified FROM stored
         UNION ALL SELECT last_modified FROM timestamps WHERE parent_id = $1 AND resource_name = $2`,
        params,
      );
      if (row) return row.last_modified;
      if (attempt === 3) throw new BackendError(`the timestamp of ${scope.parentId}/${scope.resourceName} vanished`);
    }
  }

  async get(scope: Scope, id: string, options?: ReadOptions): Promise<StoredObject | null> {
    const s = this.#s;
    const known = s.known(scope, id);
    if (known) return known.row && !known.row.deleted ? toLiveObject(structuredClone(known.row)) : null;
    if (options?.forUpdate === true && s.mode === 'write') {
      let row = await this.#find(scope, id, true);
      if (!row && s.pending.timestamp(scope.parentId, scope.resourceName) === undefined) {
        // Nothing to lock: hold the scope instead, then look again (a creation that committed
        // while we waited for the scope is visible to this new statement).
        const { current, now } = await s.lockScope(scope);
        s.pending.hold(scope.parentId, scope.resourceName, current, Math.max(now, current + 1));
        row = await this.#find(scope, id, true);
      }
      s.locked.set(objectKey(scope.parentId, scope.resourceName, id), row ?? null);
      return row && !row.deleted ? toLiveObject(structuredClone(row)) : null;
    }
    if (!isCachedResource(scope.resourceName)) {
      const row = await this.#find(scope, id);
      return row && !row.deleted ? toLiveObject(row) : null;
    }
    const { cache } = s.context;
    const key = objectKey(scope.parentId, scope.resourceName, id);
    const useCache = s.cacheable('object', key);
    const cached = useCache ? cache.object(key) : undefined;
    if (cached !== undefined) return cached && toLiveObject(structuredClone({ ...cached, deleted: false }));
    const token = cache.token;
    const row = await this.#find(scope, id);
    const live = row && !row.deleted ? row : null;
    if (useCache)
      cache.storeObject(token, key, live && { id: live.id, last_modified: live.last_modified, data: live.data });
    return live && toLiveObject(live);
  }

  async create(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    this.#s.assertWritable();
    if (options?.lastModified === undefined) {
      // Known free (read locked, or a new id): queued. Else one statement checks that the id is
      // free, bumps the scope timestamp (locking it) and stores the object (replacing a
      // tombstone); nothing comes back when the id is taken.
      const known = this.#s.known(scope, id);
      if (known?.row && !known.row.deleted)
        throw new UnicityError(`${scope.resourceName} ${id} already exists`, toLiveObject(structuredClone(known.row)));
      if (known || options?.newId)
        return this.#queueWrite(scope, id, data, { fresh: !known, late: options?.stampAtCommit });
      const stored = await this.#writeFresh(scope, id, data, 'create');
      if (stored) return stored;
    }
    // Taken, or so it seemed: lock, then look (what concurrent writers committed is then
    // visible and stays so), and refuse with the live object or write after all.
    await this.#s.sendPendingWrites();
    await this.#s.lockScope(scope);
    const existing = await this.#find(scope, id);
    if (existing && !existing.deleted)
      throw new UnicityError(`${scope.resourceName} ${id} already exists`, toLiveObject(existing));
    return this.#write(scope, id, data, options);
  }

  async update(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    this.#s.assertWritable();
    if (options?.lastModified === undefined) return this.#queueWrite(scope, id, data, { late: options?.stampAtCommit });
    return this.#write(scope, id, data, options);
  }

  async insertMany(
    scope: Scope,
    objects: Array<{ id: string; data: Record<string, unknown> }>,
  ): Promise<StoredObject[]> {
    const s = this.#s;
    s.assertWritable();
    assertNotHistory(scope);
    if (objects.length === 0) return [];
    await s.sendPendingWrites();
    s.pending.release(scope.parentId, scope.resourceName);
    s.forgetLocked();
    const items = objects.map(({ id, data }) => {
      const { id: _id, last_modified: _lastModified, ...attributes } = data;
      return { id, data: attributes };
    });
    // One statement: bump the scope timestamp by n (locking it, as every write does) and insert
    // the rows at first, first + 1, ... — all above every timestamp of the scope.
    const rows = await s.query<ObjectRow>(
      `WITH stamp AS (
         INSERT INTO timestamps AS t (parent_id, resource_name, last_modified) VALUES ($1, $2, ${NOW_MS} + $3::bigint - 1)
         ON CONFLICT (parent_id, resource_name)
         DO UPDATE SET last_modified = GREATEST(${NOW_MS}, t.last_modified + 1) + $3::bigint - 1
         RETURNING t.last_modified - $3::bigint + 1 AS first
       )
       INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted)
       SELECT $1, $2, item->>'id', stamp.first + position - 1, item->'data', FALSE
       FROM stamp, jsonb_array_elements($4::jsonb) WITH ORDINALITY AS items(item, position)
       ON CONFLICT (parent_id, resource_name, id)
       DO UPDATE SET last_modified = EXCLUDED.last_modified, data = EXCLUDED.data, deleted = FALSE
       RETURNING id, last_modified, data, deleted`,
      [scope.parentId, scope.resourceName, items.length, JSON.stringify(items)],
    );
    s.writes += rows.length;
    for (const row of rows) this.#changed(scope, row.id);
    return rows.map(toLiveObject).sort((a, b) => a.last_modified - b.last_modified);
  }

  async import(scope: Scope, objects: Array<StoredObject | Tombstone>, scopeTimestamp?: number): Promise<void> {
    const s = this.#s;
    s.assertWritable();
    await s.sendPendingWrites();
    s.pending.release(scope.parentId, scope.resourceName);
    s.forgetLocked();
    const table = tableOf(scope);
    // History rows are keyed by timestamp (ids are not unique there).
    const key = table === 'history' ? 'last_modified' : 'id';
    let newest = scopeTimestamp ?? 0;
    const items = objects.map((object) => {
      const { id, last_modified: lastModified, ...attributes } = object;
      const deleted = (object as Partial<Tombstone>).deleted === true;
      if (scopeTimestamp === undefined) newest = Math.max(newest, lastModified);
      return { id, last_modified: lastModified, deleted, data: deleted ? JSON.parse(TOMBSTONE_DATA) : attributes };
    });
    // One statement: the rows, then the scope timestamp raised (and locked, as every write does).
    await s.query(
      `WITH rows AS (
         INSERT INTO ${table} (parent_id, resource_name, id, last_modified, data, deleted)
         SELECT $1, $2, item->>'id', (item->>'last_modified')::bigint, item->'data', (item->>'deleted')::boolean
         FROM jsonb_array_elements($3::jsonb) AS items(item)
         ON CONFLICT (parent_id, resource_name, ${key})
         DO UPDATE SET id = EXCLUDED.id, last_modified = EXCLUDED.last_modified, data = EXCLUDED.data, deleted = EXCLUDED.deleted
         RETURNING 1
       )
       INSERT INTO timestamps AS t (parent_id, resource_name, last_modified) SELECT $1, $2, $4::bigint WHERE $4::bigint > 0
       ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = GREATEST(t.last_modified, EXCLUDED.last_modified)`,
      [scope.parentId, scope.resourceName, JSON.stringify(items), newest],
    );
    s.writes += items.length;
    for (const item of items) this.#changed(scope, item.id);
  }

  async delete(scope: Scope, id: string, options?: WriteOptions): Promise<Tombstone> {
    const s = this.#s;
    s.assertWritable();
    const known = options?.lastModified === undefined && tableOf(scope) === 'objects' ? s.known(scope, id) : undefined;
    if (known) {
      // Read locked or written by this transaction: the tombstone is queued like any write.
      if (!known.row || known.row.deleted) throw new ObjectNotFoundError(scope.resourceName, id);
      return this.#queue(
        scope,
        id,
        { deleted: true },
        true,
        false,
        options?.stampAtCommit,
        (lastModified): Tombstone => ({ id, last_modified: lastModified, deleted: true }),
      );
    }
    await s.sendPendingWrites(); // what follows stamps the scope in the database
    s.pending.release(scope.parentId, scope.resourceName);
    s.locked.delete(objectKey(scope.parentId, scope.resourceName, id));
    if (options?.lastModified === undefined && tableOf(scope) === 'objects') {
      // One statement: bump the scope timestamp (locking it) and leave the tombstone there,
      // unless the object is not live (then nothing changes).
      const [row] = await s.query<{ last_modified: number }>(
        `WITH stamp AS (
           INSERT INTO timestamps AS t (parent_id, resource_name, last_modified)
           SELECT $1, $2, ${NOW_MS} WHERE EXISTS (SELECT 1 FROM objects WHERE parent_id = $1 AND resource_name = $2 AND id = $3 AND NOT deleted)
           ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = GREATEST(EXCLUDED.last_modified, t.last_modified + 1)
           RETURNING t.last_modified
         )
         UPDATE objects SET deleted = TRUE, data = $4::jsonb, last_modified = stamp.last_modified FROM stamp
         WHERE parent_id = $1 AND resource_name = $2 AND id = $3 AND NOT deleted
         RETURNING objects.last_modified`,
        [scope.parentId, scope.resourceName, id, TOMBSTONE_DATA],
      );
      if (!row) throw new ObjectNotFoundError(scope.resourceName, id);
      s.pending.hold(scope.parentId, scope.resourceName, row.last_modified);
      s.writes++;
      this.#changed(scope, id);
      return { id, last_modified: row.last_modified, deleted: true };
    }
    await s.lockScope(scope);
    const existing = await this.#find(scope, id);
    if (!existing || existing.deleted) throw new ObjectNotFoundError(scope.resourceName, id);
    const timestamp = await this.#stamp(scope, id, options?.lastModified);
    await s.query(
      `UPDATE ${tableOf(scope)} SET deleted = TRUE, data = $4::jsonb, last_modified = $5
       WHERE parent_id = $1 AND resource_name = $2 AND id = $3`,
      [scope.parentId, scope.resourceName, id, TOMBSTONE_DATA, timestamp],
    );
    s.writes++;
    this.#changed(scope, id);
    return { id, last_modified: timestamp, deleted: true };
  }

  async deleteAll(scope: Scope, options: Omit<ListOptions, 'includeDeleted'> = {}): Promise<Tombstone[]> {
    const s = this.#s;
    s.assertWritable();
    await s.sendPendingWrites();
    s.pending.release(scope.parentId, scope.resourceName);
    s.forgetLocked();
    const { current, now } = await s.lockScope(scope);
    const first = Math.max(now, current + 1);
    // Tombstones get first, first + 1, … in sorting order. The new timestamps exceed every
    // existing one of the scope, so the unique index never sees a collision.
    const query = new QueryBuilder({ indexed: this.#s.context.indexed() });
    const where = query.where(scope, { ...options, includeDeleted: false });
    const orderBy = query.orderBy(options.sorting);
    const limit = options.limit === undefined ? '' : `LIMIT ${query.bind(options.limit)}`;
    // Matched on the timestamp as well as the id: unique in the scope, and the one index of the
    // history table. The scope lock keeps both from changing meanwhile.
    const rows = await s.query<{ id: string; last_modified: number }>(
      `WITH doomed AS (
         SELECT parent_id, resource_name, id, last_modified, row_number() OVER (ORDER BY ${orderBy}) AS position
         FROM ${tableOf(scope)} WHERE ${where} ORDER BY ${orderBy} ${limit}
       )
       UPDATE ${tableOf(scope)} AS target SET deleted = TRUE, data = ${query.bind(TOMBSTONE_DATA)}::jsonb,
         last_modified = ${query.bind(first)}::bigint + doomed.position - 1
       FROM doomed
       WHERE target.parent_id = doomed.parent_id AND target.resource_name = doomed.resource_name
         AND target.last_modified = doomed.last_modified AND target.id = doomed.id
       RETURNING target.id, target.last_modified`,
      query.params,
      DYNAMIC,
    );
    if (rows.length === 0) return [];
    const tombstones = rows
      .map((row): Tombstone => ({ id: row.id, last_modified: row.last_modified, deleted: true }))
      .sort((a, b) => a.last_modified - b.last_modified);
    await this.#setScopeTimestamp(scope, tombstones.at(-1)!.last_modified);
    s.writes += tombstones.length;
    for (const tombstone of tombstones) this.#changed(scope, tombstone.id);
    return tombstones;
  }

  async list(scope: Scope, options: ListOptions = {}): Promise<Array<StoredObject | Tombstone>> {
    const rows = (await this.#listRows(scope, options, 'data')) as ObjectRow[];
    return rows.map((row) => (row.deleted ? toTombstone(row) : toLiveObject(row)));
  }

  async listJson(scope: Scope, options: ListOptions = {}): Promise<ListedJson[]> {
    // The data as jsonb's text: the driver does not parse it, nobody serialises it again.
    const rows = (await this.#listRows(scope, options, 'data::text')) as ObjectTextRow[];
    return rows.map((row) => listedJson(row.id, row.last_modified, row.deleted, row.data));
  }

  /** The rows of a listing, their data selected as `data` (jsonb, parsed by the driver) or `data::text`. */
  async #listRows(scope: Scope, options: ListOptions, data: 'data' | 'data::text'): Promise<unknown[]> {
    await this.#s.sendPendingWrites();
    const query = new QueryBuilder({ indexed: this.#s.context.indexed() });
    const where = query.where(scope, options);
    const orderBy = query.orderBy(options.sorting);
    const limit = options.limit === undefined ? '' : `LIMIT ${query.bind(options.limit)}`;
    const columns = `id, last_modified, ${data} AS data, deleted`;
    const fromNewest = await this.#listFromNewest(scope, options, columns);
    if (fromNewest) return fromNewest;
    // A selective filter on a declared field (see #selective), or on data the walk of the newest
    // did not fill a page from: the matches first (through its index, or the scope in physical
    // order), then their order; else the planner walks the scope in the sort's order.
    const matchesFirst = fromNewest === null ? await this.#selective(scope, options) : true;
    const from = `FROM ${tableOf(scope)} WHERE ${where}`;
    const text = matchesFirst
      ? `WITH matched AS MATERIALIZED (SELECT id, last_modified, data, deleted ${from}) SELECT ${columns} FROM matched ORDER BY ${orderBy} ${limit}`
      : `SELECT ${columns} ${from} ORDER BY ${orderBy} ${limit}`;
    return this.#s.query(text, query.params, DYNAMIC);
  }

  /**
   * A page of a listing sorted by columns (timestamp, id) but filtered on data fields without a
   * declared index. The planner cannot estimate how many objects a jsonb comparison keeps: it
   * walks the scope's index in the sort's order, fetching each row at random, through the whole
   * scope when the filter keeps 10 objects in a million (3-10 s at 1M on PostgreSQL, against
   * under 1 s for reading the scope in physical order). So the walk is bounded: the WALK newest
   * objects, filtered. Returns the page when they filled it or were the whole scope; `false` when
   * the rest must be read (in physical order, by the caller); `null` when this does not apply.
   */
  async #listFromNewest(scope: Scope, options: ListOptions, columns: string): Promise<unknown[] | false | null> {
    const { filters = [], sorting, limit } = options;
    if (limit === undefined || tableOf(scope) !== 'objects') return null;
    const query = new QueryBuilder({ indexed: this.#s.context.indexed() });
    const onData = filters.filter((filter) => query.readsData(filter.field));
    if (onData.length === 0 || sorting?.some((sort) => query.readsData(sort.field))) return null;
    const scopeWhere = query.where(scope, {
      ...options,
      filters: filters.filter((filter) => !onData.includes(filter)),
    });
    const orderBy = query.orderBy(sorting);
    const newest = `SELECT id, last_modified, data, deleted FROM objects WHERE ${scopeWhere} ORDER BY ${orderBy} LIMIT ${query.bind(WALK)}`;
    const matching = onData.map((filter) => query.filter(filter)).join(' AND ');
    const rows = await this.#s.query<{ id: string | null; walked: number }>(
      `WITH newest AS MATERIALIZED (${newest})
       SELECT page.*, walked.count AS walked FROM (SELECT count(*)::int AS count FROM newest) AS walked
       LEFT JOIN LATERAL (SELECT ${columns} FROM newest WHERE ${matching} ORDER BY ${orderBy} LIMIT ${query.bind(limit)}) AS page ON true`,
      query.params,
      DYNAMIC,
    );
    const page = rows.filter((row) => row.id !== null);
    return page.length >= limit || (rows[0]?.walked ?? 0) < WALK ? page : false;
  }

  /**
   * Whether a filter of the listing compares a declared field (../declared-indexes.ts) and keeps
   * few objects of the scope. The planner cannot tell: jsonb has no interpolation within a
   * histogram bucket, so it expects half a bucket (0.5% of the scope) at least, and for a page
   * sorted otherwise it walks the scope in that order (by timestamp), through all of it for a
   * filter that keeps 10 objects in a million. So the index is asked first (PROBE matches at most).
   */
  async #selective(scope: Scope, { filters = [], sorting }: ListOptions): Promise<boolean> {
    const indexed = this.#s.context.indexed();
    if (indexed.size === 0 || tableOf(scope) !== 'objects' || indexed.has(sorting?.[0]?.field ?? '')) return false; // a sort on it uses it anyway
    for (const filter of filters) {
      if (!indexed.has(filter.field) || !PROBED_OPERATORS.has(filter.operator)) continue;
      const probe = new QueryBuilder({ indexed });
      const condition = probe.filter(filter);
      const [found] = await this.#s.query<{ count: number }>(
        `SELECT count(*)::int AS count FROM (SELECT 1 FROM objects
           WHERE parent_id = ${probe.bind(scope.parentId)} AND resource_name = ${probe.bind(scope.resourceName)} AND ${condition} LIMIT ${PROBE}) AS probe`,
        probe.params,
        DYNAMIC,
      );
      if ((found?.count ?? PROBE) < PROBE) return true;
    }
    return false;
  }

  async count(scope: Scope, filters: Filter[] = []): Promise<number> {
    await this.#s.sendPendingWrites();
    if (filters.length === 0) {
      // Kept by the writes' own statements (migration 009): one row, however large the scope.
      const [counted] = await this.#s.query<{ live: number }>(
        'SELECT live FROM object_counts WHERE parent_id = $1 AND resource_name = $2',
        [scope.parentId, scope.resourceName],
      );
      return counted?.live ?? 0;
    }
    const query = new QueryBuilder({ indexed: this.#s.context.indexed() });
    const where = query.where(scope, { filters });
    const [row] = await this.#s.query<{ count: number }>(
      `SELECT count(*) AS count FROM ${tableOf(scope)} WHERE ${where}`,
      query.params,
      DYNAMIC,
    );
    return row?.count ?? 0;
  }

  async deleteTree(uri: string): Promise<void> {
    const s = this.#s;
    s.assertWritable();
    // What is pending goes first, else it would be written after the deletion.
    await s.sendPendingWrites();
    s.forgetLocked();
    s.invalidate({ kind: 'tree', uri });
    s.pending.releaseTree(uri);
    // The scope timestamps below the tree are bumped, not dropped (issue 29): a list re-created
    // there starts above every timestamp the old one served, so an old ETag gets 200, not 304,
    // and `_since=<old>` shows the timestamp moved past it with nothing returned (the "server
    // was flushed" signal of Kinto's clients). Bumped rather than deleted and stored afresh as
    // Kinto does: `now` may lie below them (client-supplied timestamps, clock steps back). The
    // rows stay locked until commit, as every write's scope is.
    await s.query(
      `WITH entries AS (DELETE FROM history WHERE parent_id = $1 OR parent_id LIKE $2 ESCAPE '\\'),
       stamped AS (
         UPDATE timestamps SET last_modified = GREATEST(${NOW_MS}, last_modified + 1)
         WHERE parent_id = $1 OR parent_id LIKE $2 ESCAPE '\\'
       )
       DELETE FROM objects WHERE parent_id = $1 OR parent_id LIKE $2 ESCAPE '\\'`,
      [uri, likePrefix(`${uri}/`)],
    );
  }

  async purgeDeleted(scope: Scope, before?: number): Promise<number> {
    const s = this.#s;
    s.assertWritable();
    await s.sendPendingWrites();
    s.forgetLocked();
    const [row] = await s.query<{ count: number }>(
      `WITH purged AS (
         DELETE FROM ${tableOf(scope)} WHERE parent_id = $1 AND resource_name = $2 AND deleted
           AND ($3::bigint IS NULL OR last_modified < $3::bigint)
         RETURNING 1
       )
       SELECT count(*) AS count FROM purged`,
      [scope.parentId, scope.resourceName, before ?? null],
    );
    return row?.count ?? 0;
  }

  async trim(scope: Scope, keep: number, filters: Filter[] = []): Promise<number> {
    const s = this.#s;
    s.assertWritable();
    await s.sendPendingWrites();
    s.forgetLocked();
    if (!Number.isInteger(keep) || keep < 1) throw new StorageError(`trim keeps at least one object (asked ${keep})`);
    const query = new QueryBuilder({ indexed: this.#s.context.indexed() });
    const where = query.where(scope, { filters });
    // The newest `keep` are found walking the timestamp index backwards; the older matches
    // are deleted in the same statement.
    const [row] = await s.query<{ count: number }>(
      `WITH oldest_kept AS (
         SELECT last_modified FROM ${tableOf(scope)} WHERE ${where} ORDER BY last_modified DESC OFFSET ${query.bind(keep - 1)} LIMIT 1
       ),
       trimmed AS (
         DELETE FROM ${tableOf(scope)} WHERE ${where} AND last_modified < (SELECT last_modified FROM oldest_kept) RETURNING 1
       )
       SELECT count(*)::int AS count FROM trimmed`,
      query.params,
      DYNAMIC,
    );
    s.writes += row?.count ?? 0;
    return row?.count ?? 0;
  }

  /** The next timestamp of the scope; the first one bumps it in the database, which locks it. */
  async #allocate(scope: Scope): Promise<number> {
    const next = this.#s.pending.next(scope.parentId, scope.resourceName);
    if (next !== undefined) return next;
    const stamped = await this.#bumpScope(scope);
    this.#s.pending.hold(scope.parentId, scope.resourceName, stamped);
    return stamped;
  }

  /**
   * The timestamp of the next write to the scope: from the scope when this transaction holds
   * it; else, if the caller takes it at commit (`late`) and the scope has no early write of
   * this transaction, NaN until then; else bumped in the database now.
   */
  async #stampFor(scope: Scope, late: boolean | undefined): Promise<number> {
    const { pending } = this.#s;
    const held = pending.next(scope.parentId, scope.resourceName);
    if (held !== undefined) return held;
    if (late && this.#s.mode === 'write') return Number.NaN;
    // An early stamp after late ones of the same scope: send those first (they hold it then).
    if (pending.hasLate(scope.parentId, scope.resourceName)) {
      await this.#s.sendPendingWrites();
      return pending.next(scope.parentId, scope.resourceName)!;
    }
    return this.#allocate(scope);
  }

  /** Queues a write (a live object or a tombstone) and returns the object handed out for it. */
  async #queue<T extends { last_modified: number }>(
    scope: Scope,
    id: string,
    data: Record<string, unknown>,
    deleted: boolean,
    fresh: boolean,
    late: boolean | undefined,
    shape: (lastModified: number) => T,
  ): Promise<T> {
    assertNotHistory(scope);
    const lastModified = await this.#stampFor(scope, late);
    const row: ObjectRow = { id, last_modified: lastModified, data, deleted };
    const object = shape(lastModified);
    const stamped = Number.isNaN(lastModified) ? [row, object] : undefined;
    this.#s.pending.add({
      parentId: scope.parentId,
      resourceName: scope.resourceName,
      id,
      lastModified: stamped ? null : lastModified,
      stamped,
      data,
      deleted,
      fresh,
    });
    this.#s.locked.set(objectKey(scope.parentId, scope.resourceName, id), row);
    this.#s.writes++;
    this.#changed(scope, id);
    return object;
  }

  /** Queues the write of a live object at the scope's next timestamp; returns it as stored. */
  #queueWrite(
    scope: Scope,
    id: string,
    data: Record<string, unknown>,
    { fresh = false, late }: { fresh?: boolean; late?: boolean } = {},
  ): Promise<StoredObject> {
    const { id: _id, last_modified: _lastModified, ...attributes } = structuredClone(data);
    return this.#queue(scope, id, attributes, false, fresh, late, (lastModified) => ({
      ...structuredClone(attributes),
      id,
      last_modified: lastModified,
    }));
  }

  /**
   * Stores the object with a fresh timestamp, in one statement: bumps the scope timestamp
   * (locking it until commit, as every write does) and upserts the row at that timestamp. To
   * `create`, the id must be free (no live object): else nothing is bumped nor written, and
   * null comes back.
   */
  async #writeFresh(
    scope: Scope,
    id: string,
    data: Record<string, unknown>,
    mode: 'create' | 'update',
  ): Promise<StoredObject | null> {
    const s = this.#s;
    assertNotHistory(scope);
    await s.sendPendingWrites(); // this statement stamps the scope in the database
    s.pending.release(scope.parentId, scope.resourceName);
    const { id: _id, last_modified: _lastModified, ...attributes } = data;
    const create = mode === 'create';
    const [row] = await s.query<ObjectRow>(
      `WITH stamp AS (
         INSERT INTO timestamps AS t (parent_id, resource_name, last_modified)
         SELECT $1, $2, ${NOW_MS}
         ${create ? 'WHERE NOT EXISTS (SELECT 1 FROM objects WHERE parent_id = $1 AND resource_name = $2 AND id = $3 AND NOT deleted)' : ''}
         ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = GREATEST(EXCLUDED.last_modified, t.last_modified + 1)
         RETURNING t.last_modified
       )
       INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted)
       SELECT $1, $2, $3, stamp.last_modified, $4::jsonb, FALSE FROM stamp
       ON CONFLICT (parent_id, resource_name, id)
       DO UPDATE SET last_modified = EXCLUDED.last_modified, data = EXCLUDED.data, deleted = FALSE
       ${create ? 'WHERE objects.deleted' : ''}
       RETURNING id, last_modified, data, deleted`,
      [scope.parentId, scope.resourceName, id, JSON.stringify(attributes)],
    );
    if (!row) return null;
    s.pending.hold(scope.parentId, scope.resourceName, row.last_modified);
    s.locked.set(objectKey(scope.parentId, scope.resourceName, id), row);
    s.writes++;
    this.#changed(scope, id);
    return toLiveObject(structuredClone(row));
  }

  /** Records a change of a cached object (buckets, collections). */
  #changed(scope: Scope, id: string): void {
    if (isCachedResource(scope.resourceName))
      this.#s.invalidate({ kind: 'object', key: objectKey(scope.parentId, scope.resourceName, id) });
  }

  /** Creates or replaces the live object `id` with the requested timestamp (§5.2). */
  async #write(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    const s = this.#s;
    assertNotHistory(scope);
    await s.sendPendingWrites();
    s.pending.release(scope.parentId, scope.resourceName);
    s.locked.delete(objectKey(scope.parentId, scope.resourceName, id));
    const { id: _id, last_modified: _lastModified, ...attributes } = data;
    const timestamp = await this.#stamp(scope, id, options?.lastModified);
    const [row] = await s.query<ObjectRow>(
      `INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted)
       VALUES ($1, $2, $3, $4, $5::jsonb, FALSE)
       ON CONFLICT (parent_id, resource_name, id)
       DO UPDATE SET last_modified = EXCLUDED.last_modified, data = EXCLUDED.data, deleted = FALSE
       RETURNING id, last_modified, data, deleted`,
      [scope.parentId, scope.resourceName, id, timestamp, JSON.stringify(attributes)],
    );
    s.writes++;
    this.#changed(scope, id);
    return toLiveObject(row!);
  }

  /**
   * The timestamp of a write to object `id` (protocol-reference §5.2), holding the scope lock.
   * A requested value above the scope timestamp is used and becomes the scope timestamp; one
   * below it is kept in the past without touching the scope timestamp, unless another object
   * of the scope already has it (Kinto answers 409 there; we keep timestamps unique by
   * assigning a fresh one). Otherwise the scope timestamp is bumped.
   */
  async #stamp(scope: Scope, id: string, requested: number | undefined): Promise<number> {
    if (requested === undefined || !Number.isSafeInteger(requested) || requested < 0) return this.#bumpScope(scope);
    const { current } = await this.#s.lockScope(scope);
    if (requested > current) {
      await this.#setScopeTimestamp(scope, requested);
      return requested;
    }
    if (requested < current) {
      const taken = await this.#s.query(
        `SELECT 1 FROM ${tableOf(scope)} WHERE parent_id = $1 AND resource_name = $2 AND last_modified = $3 AND id <> $4`,
        [scope.parentId, scope.resourceName, requested, id],
      );
      if (taken.length === 0) return requested;
    }
    return this.#bumpScope(scope);
  }

  /** Moves the scope timestamp to max(now, current + 1), locking it, and returns it. */
  async #bumpScope(scope: Scope): Promise<number> {
    const [row] = await this.#s.query<{ last_modified: number }>(
      `INSERT INTO timestamps AS t (parent_id, resource_name, last_modified) VALUES ($1, $2, ${NOW_MS})
       ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = GREATEST(EXCLUDED.last_modified, t.last_modified + 1)
       RETURNING t.last_modified`,
      [scope.parentId, scope.resourceName],
    );
    return row!.last_modified;
  }

  async #setScopeTimestamp(scope: Scope, timestamp: number): Promise<void> {
    await this.#s.query('UPDATE timestamps SET last_modified = $3 WHERE parent_id = $1 AND resource_name = $2', [
      scope.parentId,
      scope.resourceName,
      timestamp,
    ]);
  }

  async #find(scope: Scope, id: string, forUpdate = false): Promise<ObjectRow | undefined> {
    const [row] = await this.#s.query<ObjectRow>(
      `SELECT id, last_modified, data, deleted FROM ${tableOf(scope)} WHERE parent_id = $1 AND resource_name = $2 AND id = $3${forUpdate ? ' FOR UPDATE' : ''}`,
      [scope.parentId, scope.resourceName, id],
    );
    return row;
  }
}

/** A row of `listJson`: its data as jsonb's text. */
interface ObjectTextRow {
  id: string;
  last_modified: number;
  data: string;
  deleted: boolean;
}

function toLiveObject(row: ObjectRow): StoredObject {
  return { ...row.data, id: row.id, last_modified: row.last_modified };
}

function toTombstone(row: ObjectRow): Tombstone {
  return { id: row.id, last_modified: row.last_modified, deleted: true };
}
