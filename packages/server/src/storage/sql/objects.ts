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
 * Locks are taken object first (its row, or its key while it has none), scope second.
 *
 * Here: one object's reads and writes. Scope timestamps are in scope-timestamps.ts, those read
 * many at once in collection-timestamps.ts, listings in listing.ts, writes of many objects in
 * scope-writes.ts.
 */
import { ObjectNotFoundError, UnicityError } from '../errors.js';
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
import { listedJson } from '../listed-json.js';
import { readCollectionTimestamps, readScopeTimestamps } from './collection-timestamps.js';
import { countObjects, listRows } from './listing.js';
import { byKey, changedObject, TOMBSTONE_DATA, toLiveObject, toTombstone } from './object-rows.js';
import { NOW_MS } from './pending-writes.js';
import * as scopeWrites from './scope-writes.js';
import { readScopeTimestamp, stampFor, stampWrite } from './scope-timestamps.js';
import type { ObjectRow, SqlSessionState } from './session-state.js';
import { isCachedResource, objectKey } from './shared-cache.js';

/** Its object is live ($1 parent, $2 resource, $3 id). */
const LIVE_OBJECT = 'SELECT 1 FROM objects WHERE parent_id = $1 AND resource_name = $2 AND id = $3 AND NOT deleted';

/** The advisory lock of an object's key ($1 parent, $2 resource, $3 id): see #lockObject. */
const OBJECT_KEY_LOCK = "hashtextextended('quire.object:' || $1 || chr(1) || $2 || chr(1) || $3, 0)";

/** A row of `listJson`: its data as jsonb's text. */
interface ObjectTextRow {
  id: string;
  last_modified: number;
  data: string;
  deleted: boolean;
}

export class SqlObjects implements ObjectStore {
  readonly #s: SqlSessionState;

  constructor(state: SqlSessionState) {
    this.#s = state;
  }

  timestamp(scope: Scope): Promise<number> {
    return readScopeTimestamp(this.#s, scope);
  }

  timestamps(resourceName: string, parentIds: string[]): Promise<Map<string, number>> {
    return readScopeTimestamps(this.#s, resourceName, parentIds);
  }

  collectionTimestamps(query: CollectionTimestampsQuery): Promise<CollectionTimestamp[]> {
    return readCollectionTimestamps(this.#s, query);
  }

  async list(scope: Scope, options: ListOptions = {}): Promise<Array<StoredObject | Tombstone>> {
    const rows = (await listRows(this.#s, scope, options, 'data')) as ObjectRow[];
    return rows.map((row) => (row.deleted ? toTombstone(row) : toLiveObject(row)));
  }

  async listJson(scope: Scope, options: ListOptions = {}): Promise<ListedJson[]> {
    // The data as jsonb's text: the driver does not parse it, nobody serialises it again.
    const rows = (await listRows(this.#s, scope, options, 'data::text')) as ObjectTextRow[];
    return rows.map((row) => listedJson(row.id, row.last_modified, row.deleted, row.data));
  }

  count(scope: Scope, filters: Filter[] = []): Promise<number> {
    return countObjects(this.#s, scope, filters);
  }

  insertMany(scope: Scope, objects: Array<{ id: string; data: Record<string, unknown> }>): Promise<StoredObject[]> {
    return scopeWrites.insertMany(this.#s, scope, objects);
  }

  import(scope: Scope, objects: Array<StoredObject | Tombstone>, scopeTimestamp?: number): Promise<void> {
    return scopeWrites.importObjects(this.#s, scope, objects, scopeTimestamp);
  }

  deleteAll(scope: Scope, options: Omit<ListOptions, 'includeDeleted'> = {}): Promise<Tombstone[]> {
    return scopeWrites.deleteAll(this.#s, scope, options);
  }

  deleteTree(uri: string): Promise<void> {
    return scopeWrites.deleteTree(this.#s, uri);
  }

  purgeDeleted(scope: Scope, before?: number): Promise<number> {
    return scopeWrites.purgeDeleted(this.#s, scope, before);
  }

  trim(scope: Scope, keep: number, filters: Filter[] = []): Promise<number> {
    return scopeWrites.trim(this.#s, scope, keep, filters);
  }

  /**
   * Not async: what the session knows or the shared cache holds (a record preloaded with its ACL,
   * its bucket and collection) is answered without a promise chain of its own, copied once.
   */
  get(scope: Scope, id: string, options?: ReadOptions): Promise<StoredObject | null> {
    const s = this.#s;
    const known = s.known(scope, id);
    if (known) {
      const copy = () => (known.row && !known.row.deleted ? liveCopy(known.row) : null);
      // A write of this transaction not stamped yet: sent first, so that it has its timestamp.
      if (known.row && Number.isNaN(known.row.last_modified)) return s.sendPendingWrites().then(copy);
      return Promise.resolve(copy());
    }
    if (options?.forUpdate === true && s.mode === 'write') return this.#getForUpdate(scope, id);
    if (!isCachedResource(scope.resourceName)) return this.#getLive(scope, id);
    const key = objectKey(scope.parentId, scope.resourceName, id);
    const useCache = s.cacheable('object', key);
    const cached = useCache ? s.context.cache.object(key) : undefined;
    if (cached !== undefined) return Promise.resolve(cached && liveCopy(cached));
    return this.#getAndCache(scope, id, key, useCache);
  }

  async #getForUpdate(scope: Scope, id: string): Promise<StoredObject | null> {
    const row = await this.#lockObject(scope, id);
    this.#s.locked.set(objectKey(scope.parentId, scope.resourceName, id), row ?? null);
    return row && !row.deleted ? liveCopy(row) : null;
  }

  async #getLive(scope: Scope, id: string): Promise<StoredObject | null> {
    const row = await this.#find(scope, id);
    return row && !row.deleted ? toLiveObject(row) : null;
  }

  async #getAndCache(scope: Scope, id: string, key: string, useCache: boolean): Promise<StoredObject | null> {
    const { cache } = this.#s.context;
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
      const known = await this.#known(scope, id);
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
    const existing = await this.#lockObject(scope, id);
    if (existing && !existing.deleted)
      throw new UnicityError(`${scope.resourceName} ${id} already exists`, toLiveObject(existing));
    return this.#write(scope, id, data, options);
  }

  async update(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    this.#s.assertWritable();
    if (options?.lastModified === undefined) return this.#queueWrite(scope, id, data, { late: options?.stampAtCommit });
    return this.#write(scope, id, data, options);
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
           SELECT $1, $2, ${NOW_MS} WHERE EXISTS (SELECT 1 FROM objects WHERE ${byKey()} AND NOT deleted)
           ON CONFLICT (parent_id, resource_name)
           DO UPDATE SET last_modified = GREATEST(EXCLUDED.last_modified, t.last_modified + 1)
           RETURNING t.last_modified
         )
         UPDATE objects SET deleted = TRUE, data = $4::jsonb, last_modified = stamp.last_modified FROM stamp
         WHERE ${byKey('objects')} AND NOT deleted
         RETURNING objects.last_modified`,
        [scope.parentId, scope.resourceName, id, TOMBSTONE_DATA],
      );
      if (!row) throw new ObjectNotFoundError(scope.resourceName, id);
      s.pending.hold(scope.parentId, scope.resourceName, row.last_modified);
      s.writes++;
      changedObject(s, scope, id);
      return { id, last_modified: row.last_modified, deleted: true };
    }
    const existing = await this.#lockObject(scope, id);
    if (!existing || existing.deleted) throw new ObjectNotFoundError(scope.resourceName, id);
    const timestamp = await stampWrite(s, scope, id, options?.lastModified);
    await s.query(
      `UPDATE ${tableOf(scope)} SET deleted = TRUE, data = $4::jsonb, last_modified = $5 WHERE ${byKey()}`,
      [scope.parentId, scope.resourceName, id, TOMBSTONE_DATA, timestamp],
    );
    s.writes++;
    changedObject(this.#s, scope, id);
    return { id, last_modified: timestamp, deleted: true };
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
    const lastModified = await stampFor(this.#s, scope, late);
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
    changedObject(this.#s, scope, id);
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
      `WITH key_lock AS (SELECT ${create ? `pg_advisory_xact_lock(${OBJECT_KEY_LOCK})` : 'NULL'})
       , stamp AS (
         INSERT INTO timestamps AS t (parent_id, resource_name, last_modified)
         SELECT $1, $2, ${NOW_MS} FROM key_lock
         ${create ? `WHERE NOT EXISTS (${LIVE_OBJECT})` : ''}
         ON CONFLICT (parent_id, resource_name)
           DO UPDATE SET last_modified = GREATEST(EXCLUDED.last_modified, t.last_modified + 1)
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
    changedObject(this.#s, scope, id);
    return toLiveObject(structuredClone(row));
  }

  /** Creates or replaces the live object `id` with the requested timestamp (§5.2). */
  async #write(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    const s = this.#s;
    assertNotHistory(scope);
    await s.sendPendingWrites();
    s.pending.release(scope.parentId, scope.resourceName);
    s.locked.delete(objectKey(scope.parentId, scope.resourceName, id));
    const { id: _id, last_modified: _lastModified, ...attributes } = data;
    const timestamp = await stampWrite(s, scope, id, options?.lastModified);
    const [row] = await s.query<ObjectRow>(
      `INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted)
       VALUES ($1, $2, $3, $4, $5::jsonb, FALSE)
       ON CONFLICT (parent_id, resource_name, id)
       DO UPDATE SET last_modified = EXCLUDED.last_modified, data = EXCLUDED.data, deleted = FALSE
       RETURNING id, last_modified, data, deleted`,
      [scope.parentId, scope.resourceName, id, timestamp, JSON.stringify(attributes)],
    );
    s.writes++;
    changedObject(this.#s, scope, id);
    return toLiveObject(row!);
  }

  /**
   * Locks object `id` until commit: its row, or, while it has none, its key (an advisory lock
   * every creation by id takes too), then looks again: a creation that committed while we
   * waited is visible to that new statement. Writers thus take an object before its scope,
   * never the other way round: no deadlock between a creation and a change of one id.
   */
  async #lockObject(scope: Scope, id: string): Promise<ObjectRow | undefined> {
    const row = await this.#find(scope, id, true);
    if (row) return row;
    await this.#s.query(`SELECT pg_advisory_xact_lock(${OBJECT_KEY_LOCK}) AS locked`, [
      scope.parentId,
      scope.resourceName,
      id,
    ]);
    return this.#find(scope, id, true);
  }

  /**
   * What this transaction knows of the object (`SqlSessionState.known`), its timestamp given:
   * a write stamped at commit (a batch's) is sent first when something reads it back.
   */
  async #known(scope: Scope, id: string): Promise<{ row: ObjectRow | null } | undefined> {
    const known = this.#s.known(scope, id);
    if (known?.row && Number.isNaN(known.row.last_modified)) await this.#s.sendPendingWrites();
    return known;
  }

  async #find(scope: Scope, id: string, forUpdate = false): Promise<ObjectRow | undefined> {
    const [row] = await this.#s.query<ObjectRow>(
      `SELECT id, last_modified, data, deleted FROM ${tableOf(scope)}
       WHERE ${byKey()}${forUpdate ? ' FOR UPDATE' : ''}`,
      [scope.parentId, scope.resourceName, id],
    );
    return row;
  }
}

/** The object of a row someone else keeps (this session, the shared cache): its data deep-copied once. */
function liveCopy(row: { id: string; last_modified: number; data: Record<string, unknown> }): StoredObject {
  return { ...structuredClone(row.data), id: row.id, last_modified: row.last_modified };
}
