/**
 * The objects facet of a SQLite session: objects, tombstones and scope timestamps
 * (protocol-reference §5). Writers are serialised by the database's write lock, so a
 * transaction reads a scope timestamp nobody can change before it commits, and stamps with
 * max(Date.now(), current + 1). A `_since` poll reads the scope timestamp and the objects from
 * one snapshot: a write committing after it started gets a timestamp above the one it saw.
 */
import { ObjectNotFoundError, StorageError, UnicityError } from '../errors.js';
import { assertNotHistory, tableOf } from '../tables.js';
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
import { listedJson } from '../listed-json.js';
import { isCachedResource, objectKey } from '../sql/shared-cache.js';
import { readCollectionTimestamps, readScopeTimestamps } from './collection-timestamps.js';
import { countObjects, listRows, type ObjectRow } from './listing.js';
import { belowRange, QueryBuilder } from './queries.js';
import type { SqliteSessionState } from './session-state.js';

/** What a tombstone's `data` holds, so that a `deleted` filter matches tombstones as in Kinto. */
const TOMBSTONE_DATA = '{"deleted":true}';

export class SqliteObjects implements ObjectStore {
  readonly #s: SqliteSessionState;

  constructor(state: SqliteSessionState) {
    this.#s = state;
  }

  async timestamps(resourceName: string, parentIds: string[]): Promise<Map<string, number>> {
    return readScopeTimestamps(this.#s, resourceName, parentIds);
  }

  async collectionTimestamps(query: CollectionTimestampsQuery): Promise<CollectionTimestamp[]> {
    return readCollectionTimestamps(this.#s, query);
  }

  async timestamp(scope: Scope): Promise<number> {
    const s = this.#s;
    if (s.mode === 'write') return s.current(scope).current;
    const key = objectKey(scope.parentId, scope.resourceName, '');
    const cached = s.cache?.timestamp(key);
    if (cached !== undefined) return cached;
    const row = s.db.get<{ last_modified: number }>(
      'SELECT last_modified FROM timestamps WHERE parent_id = ? AND resource_name = ?',
      [scope.parentId, scope.resourceName],
    );
    if (row) {
      s.cache?.storeTimestamp(key, row.last_modified); // in the statement's synchronous step (read-cache.ts)
      return row.last_modified;
    }
    if (s.storeTimestamp) return s.storeTimestamp(scope);
    throw new UninitialisedScope(scope);
  }

  /** `forUpdate` has nothing to lock: a transaction holds the database's write lock from its start. */
  async get(scope: Scope, id: string, _options?: ReadOptions): Promise<StoredObject | null> {
    const shared = this.#s.cache?.shared;
    if (!shared || !isCachedResource(scope.resourceName)) {
      const row = this.#find(scope, id);
      return row && !row.deleted ? toLiveObject(row) : null;
    }
    // A bucket or a collection (the parents of every record read), kept between read sessions.
    const key = objectKey(scope.parentId, scope.resourceName, id);
    const cached = shared.object(key);
    if (cached !== undefined)
      return cached && { ...structuredClone(cached.data), id: cached.id, last_modified: cached.last_modified };
    const token = shared.token;
    const row = this.#find(scope, id);
    const live = row && !row.deleted ? row : null;
    shared.storeObject(
      token,
      key,
      live && {
        id: live.id,
        last_modified: live.last_modified,
        data: JSON.parse(live.data) as Record<string, unknown>,
      },
    );
    return live && toLiveObject(live);
  }

  async create(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    this.#s.assertWritable();
    this.#s.wrote(scope);
    // No lock to take first: the transaction holds the database's write lock. A new id needs
    // no look: the insert itself refuses a live object of that id (#upsert).
    if (!options?.newId) {
      const existing = this.#find(scope, id);
      if (existing && !existing.deleted)
        throw new UnicityError(`${scope.resourceName} ${id} already exists`, toLiveObject(existing));
    }
    return this.#write(scope, id, data, options);
  }

  async update(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    this.#s.assertWritable();
    this.#s.wrote(scope);
    return this.#write(scope, id, data, options);
  }

  async insertMany(
    scope: Scope,
    objects: Array<{ id: string; data: Record<string, unknown> }>,
  ): Promise<StoredObject[]> {
    this.#s.assertWritable();
    this.#s.wrote(scope);
    assertNotHistory(scope);
    if (objects.length === 0) return [];
    const first = this.#bumpScope(scope, objects.length);
    // In process, a statement per object costs a few microseconds: no need for one statement.
    return objects.map(({ id, data }, position) => this.#upsert(scope, id, data, first + position));
  }

  async import(scope: Scope, objects: Array<StoredObject | Tombstone>, scopeTimestamp?: number): Promise<void> {
    const s = this.#s;
    s.assertWritable();
    s.wrote(scope);
    const table = tableOf(scope);
    // History rows are keyed by timestamp (ids are not unique there).
    const key = table === 'history' ? 'last_modified' : 'id';
    let newest = scopeTimestamp ?? 0;
    for (const object of objects) {
      const { id, last_modified: lastModified, ...attributes } = object;
      const deleted = (object as Partial<Tombstone>).deleted === true;
      s.db.run(
        `INSERT INTO ${table} (parent_id, resource_name, id, last_modified, data, deleted)
         VALUES (?, ?, ?, ?, jsonb(?), ?)
         ON CONFLICT (parent_id, resource_name, ${key}) DO UPDATE SET id = excluded.id,
           last_modified = excluded.last_modified, data = excluded.data, deleted = excluded.deleted`,
        [
          scope.parentId,
          scope.resourceName,
          id,
          lastModified,
          deleted ? TOMBSTONE_DATA : JSON.stringify(attributes),
          deleted ? 1 : 0,
        ],
      );
      if (scopeTimestamp === undefined) newest = Math.max(newest, lastModified);
    }
    if (newest === 0) return;
    s.db.run(
      `INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES (?, ?, ?)
       ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = max(last_modified, excluded.last_modified)`,
      [scope.parentId, scope.resourceName, newest],
    );
  }

  async delete(scope: Scope, id: string, options?: WriteOptions): Promise<Tombstone> {
    this.#s.assertWritable();
    this.#s.wrote(scope);
    const existing = this.#find(scope, id);
    if (!existing || existing.deleted) throw new ObjectNotFoundError(scope.resourceName, id);
    const timestamp = this.#stamp(scope, id, options?.lastModified);
    // Matched on the timestamp too: the key of the history table.
    this.#s.db.run(
      `UPDATE ${tableOf(scope)} SET deleted = 1, data = jsonb(?), last_modified = ?
       WHERE parent_id = ? AND resource_name = ? AND last_modified = ? AND id = ?`,
      [TOMBSTONE_DATA, timestamp, scope.parentId, scope.resourceName, existing.last_modified, id],
    );
    return { id, last_modified: timestamp, deleted: true };
  }

  async deleteAll(scope: Scope, options: Omit<ListOptions, 'includeDeleted'> = {}): Promise<Tombstone[]> {
    const s = this.#s;
    s.assertWritable();
    s.wrote(scope);
    const { current, now } = s.current(scope);
    const query = new QueryBuilder({ indexed: this.#s.indexed });
    const where = query.where(scope, { ...options, includeDeleted: false });
    const orderBy = query.orderBy(options.sorting);
    const limit = options.limit === undefined ? '' : `LIMIT ${query.bind(options.limit)}`;
    const doomed = s.db.all<{ id: string; last_modified: number }>(
      `SELECT id, last_modified FROM ${tableOf(scope)} WHERE ${where} ORDER BY ${orderBy} ${limit}`,
      query.params,
    );
    if (doomed.length === 0) return [];
    // Tombstones get first, first + 1, … in sorting order: above every timestamp of the scope,
    // so the unique index never sees a collision.
    const first = Math.max(now, current + 1);
    const tombstones = doomed.map(({ id, last_modified }, position): Tombstone => {
      const timestamp = first + position;
      s.db.run(
        `UPDATE ${tableOf(scope)} SET deleted = 1, data = jsonb(?), last_modified = ?
         WHERE parent_id = ? AND resource_name = ? AND last_modified = ? AND id = ?`,
        [TOMBSTONE_DATA, timestamp, scope.parentId, scope.resourceName, last_modified, id],
      );
      return { id, last_modified: timestamp, deleted: true };
    });
    s.setScopeTimestamp(scope, tombstones.at(-1)!.last_modified);
    return tombstones;
  }

  async list(scope: Scope, options: ListOptions = {}): Promise<Array<StoredObject | Tombstone>> {
    return listRows(this.#s, scope, options).map((row) =>
      row.deleted ? { id: row.id, last_modified: row.last_modified, deleted: true } : toLiveObject(row),
    );
  }

  async listJson(scope: Scope, options: ListOptions = {}): Promise<ListedJson[]> {
    return listRows(this.#s, scope, options).map((row) =>
      listedJson(row.id, row.last_modified, row.deleted === 1, row.data),
    );
  }

  async count(scope: Scope, filters: Filter[] = []): Promise<number> {
    return countObjects(this.#s, scope, filters);
  }

  async deleteTree(uri: string): Promise<void> {
    this.#s.assertWritable();
    this.#s.wrote(null);
    const [low, high] = belowRange(uri);
    for (const table of ['objects', 'history']) {
      this.#s.db.run(`DELETE FROM ${table} WHERE parent_id = ? OR (parent_id >= ? AND parent_id < ?)`, [
        uri,
        low,
        high,
      ]);
    }
    // The scope timestamps below the tree are bumped, not dropped (issue 29; sql/scope-writes.ts
    // says why): a list re-created there starts above every timestamp the old one served.
    this.#s.db.run(
      'UPDATE timestamps SET last_modified = max(?, last_modified + 1) ' +
        'WHERE parent_id = ? OR (parent_id >= ? AND parent_id < ?)',
      [Date.now(), uri, low, high],
    );
  }

  async purgeDeleted(scope: Scope, before?: number): Promise<number> {
    this.#s.assertWritable();
    const params = [scope.parentId, scope.resourceName];
    const older = before === undefined ? '' : `AND last_modified < ?`;
    return this.#s.db.run(
      `DELETE FROM ${tableOf(scope)} WHERE parent_id = ? AND resource_name = ? AND deleted ${older}`,
      before === undefined ? params : [...params, before],
    );
  }

  async trim(scope: Scope, keep: number, filters: Filter[] = []): Promise<number> {
    this.#s.assertWritable();
    if (!Number.isInteger(keep) || keep < 1) throw new StorageError(`trim keeps at least one object (asked ${keep})`);
    const query = new QueryBuilder({ indexed: this.#s.indexed });
    const where = query.where(scope, { filters });
    // The newest `keep` are found walking the timestamp index backwards; older matches go.
    const oldestKept = this.#s.db.get<{ last_modified: number }>(
      `SELECT last_modified FROM ${tableOf(scope)} WHERE ${where}
       ORDER BY last_modified DESC LIMIT 1 OFFSET ${query.bind(keep - 1)}`,
      query.params,
    );
    if (!oldestKept) return 0;
    return this.#s.db.run(
      `DELETE FROM ${tableOf(scope)} WHERE ${where} AND last_modified < ${query.bind(oldestKept.last_modified)}`,
      query.params,
    );
  }

  /** Creates or replaces the live object `id` with a fresh (or the requested) timestamp. */
  #write(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): StoredObject {
    assertNotHistory(scope);
    return this.#upsert(scope, id, data, this.#stamp(scope, id, options?.lastModified), options?.newId === true);
  }

  /**
   * Stores the live object. With `newId`, a live object of that id is not replaced: the
   * creation fails, and so does the transaction, even if `fn` goes on (WriteOptions.newId).
   */
  #upsert(scope: Scope, id: string, data: Record<string, unknown>, timestamp: number, newId = false): StoredObject {
    const { id: _id, last_modified: _lastModified, ...attributes } = data;
    const text = JSON.stringify(attributes);
    const changed = this.#s.db.run(
      `INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted) VALUES (?, ?, ?, ?, jsonb(?), 0)
       ON CONFLICT (parent_id, resource_name, id) DO UPDATE SET last_modified = excluded.last_modified,
         data = excluded.data, deleted = 0
       ${newId ? 'WHERE deleted' : ''}`,
      [scope.parentId, scope.resourceName, id, timestamp, text],
    );
    if (changed === 0) {
      this.#s.failure = new UnicityError(`${scope.resourceName} ${id} already exists`);
      throw this.#s.failure;
    }
    // What a read would give back (a copy, in JSON's terms), without asking the database.
    return toLiveObject({ id, last_modified: timestamp, data: text, deleted: 0 });
  }

  /**
   * The timestamp of a write to object `id` (protocol-reference §5.2). A requested value above
   * the scope timestamp is used and becomes the scope timestamp; one below it is kept in the
   * past without touching the scope timestamp, unless another object of the scope already has
   * it (then a fresh one is assigned, keeping timestamps unique). Otherwise the scope is bumped.
   */
  #stamp(scope: Scope, id: string, requested: number | undefined): number {
    if (requested === undefined || !Number.isSafeInteger(requested) || requested < 0) return this.#bumpScope(scope, 1);
    const { current } = this.#s.current(scope);
    if (requested > current) {
      this.#s.setScopeTimestamp(scope, requested);
      return requested;
    }
    if (requested < current) {
      const taken = this.#s.db.get(
        `SELECT 1 AS taken FROM ${tableOf(scope)} WHERE parent_id = ? AND resource_name = ?
          AND last_modified = ? AND id <> ?`,
        [scope.parentId, scope.resourceName, requested, id],
      );
      if (!taken) return requested;
    }
    return this.#bumpScope(scope, 1);
  }

  /** Reserves `count` timestamps from max(now, scope timestamp + 1) on; returns the first. */
  #bumpScope(scope: Scope, count: number): number {
    const now = Date.now();
    const row = this.#s.db.get<{ last_modified: number }>(
      `INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES (?, ?, ?)
       ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = max(?, last_modified + 1) + ?
       RETURNING last_modified`,
      [scope.parentId, scope.resourceName, now + count - 1, now, count - 1],
    );
    return row!.last_modified - count + 1;
  }

  #find(scope: Scope, id: string): ObjectRow | undefined {
    return this.#s.db.get<ObjectRow>(
      `SELECT id, last_modified, json(data) AS data, deleted FROM ${tableOf(scope)}
       WHERE parent_id = ? AND resource_name = ? AND id = ?`,
      [scope.parentId, scope.resourceName, id],
    );
  }
}

function toLiveObject(row: ObjectRow): StoredObject {
  const object = JSON.parse(row.data) as StoredObject;
  object.id = row.id;
  object.last_modified = row.last_modified;
  return object;
}
