/**
 * The SQL storage backend: one implementation of `Storage` over PostgreSQL, and over PGlite
 * (embedded PostgreSQL) for the data directories of earlier versions, through the `SqlDriver`
 * primitive.
 *
 * Timestamps (protocol-reference §5): each scope has a row in `timestamps`. A write bumps that
 * row to max(database now, scope timestamp + 1), which row-locks it until commit, and stamps
 * its object with it (pending-writes.ts: the transaction's next writes to the scope take the
 * next values; a request's own write is bumped and stored by its final statement). Writers to
 * one scope therefore serialise, even across server processes, and a `_since` poll that reads
 * the scope timestamp before the objects can never return an ETag that a later-committing
 * write undercuts (Kinto issues #602 and #3393). The clock is the database's, not the process's.
 */
import { backoffDelay, sleep } from '../../retry.js';
import { BackendError, ObjectNotFoundError, StorageError, UnicityError } from '../errors.js';
import {
  HISTORY_RESOURCE,
  type Filter,
  type ListOptions,
  type OutboxInput,
  type OutboxTarget,
  type PermissionEntriesQuery,
  type ReadOptions,
  type PermissionEntry,
  type Permissions,
  type PoolStats,
  type Scope,
  type StorageSession,
  type StoreChannels,
  type StoredObject,
  type Tombstone,
  type WriteOptions,
} from '../types.js';
import { createPgDriver, type PgDriverOptions } from './drivers/pg.js';
import { createPgliteDriver, type PgliteDriverOptions } from './drivers/pglite.js';
import { sqlState, type DeferredStatement, type QueryOptions, type Row, type SqlConnection, type SqlDriver, type SqlTransaction } from './drivers/types.js';
import { EmbeddedMaintenance } from './maintenance.js';
import { checkMigrations, migrate } from './migrate.js';
import { likePrefix, nullableTextColumn, QueryBuilder } from './queries.js';
import { forgetAclsBelow, SessionStorage } from '../session-storage.js';
import { NOW_MS, PendingWrites } from './pending-writes.js';
import {
  decodeInvalidations,
  encodeInvalidations,
  isCachedAclUri,
  isCachedResource,
  NOTIFY_CHANNEL,
  objectKey,
  SharedCache,
  type Invalidation,
} from './shared-cache.js';

/**
 * The table holding a scope's objects. History entries have their own (migration 006): an
 * append-only log keyed by timestamp, so that however long it grows, writes only ever append
 * to it, and never land among its old pages in the table every write inserts into.
 */
function tableOf(scope: Scope): 'objects' | 'history' {
  return scope.resourceName === HISTORY_RESOURCE ? 'history' : 'objects';
}


/** A copy of an ACL, so that callers never change the session's memo. */
function copyAcl(acl: Permissions): Permissions {
  return Object.fromEntries(Object.entries(acl).map(([permission, principals]) => [permission, [...principals]]));
}

/** An ACL as the database gives it back: principals sorted and unique, no empty permission. */
function normalisedAcl(acl: Permissions): Permissions {
  const normalised: Permissions = {};
  for (const permission of Object.keys(acl).sort()) {
    const principals = [...new Set(acl[permission])].sort();
    if (principals.length > 0) normalised[permission] = principals;
  }
  return normalised;
}

/** What a tombstone's `data` holds, so that a `deleted` filter matches tombstones as in Kinto. */
const TOMBSTONE_DATA = '{"deleted": true}';

/** Statements whose text is built per call (filters, sorting): not kept prepared. */
const DYNAMIC: QueryOptions = { dynamic: true };

const RETRYABLE_STATES = new Set(['40001', '40P01']); // serialization failure, deadlock
const MAX_TRANSACTION_ATTEMPTS = 4;
/** Up to 20, 40, 60 ms, jittered so that deadlocked peers do not collide again. */
const RETRY_BACKOFF = { firstMs: 20, maxMs: 60, linear: true, jitter: true };
const MAX_SNAPSHOT_ATTEMPTS = 10;

/** The fields of a permission entry that are columns (text, NULL when the entry lacks them). */
const ENTRY_COLUMNS = Object.fromEntries(
  ['uri', 'resource_name', 'id', 'bucket_id', 'collection_id', 'group_id', 'record_id', 'account_id'].map((name) => [name, nullableTextColumn(name)]),
);

interface PermissionEntryRow extends Row {
  permissions: string[];
  [field: string]: unknown;
}

interface ObjectRow extends Row {
  id: string;
  last_modified: number;
  data: Record<string, unknown>;
  deleted: boolean;
}

/**
 * Thrown inside a snapshot that asks for the timestamp of a scope never written nor read:
 * a read-only snapshot cannot store it, so `snapshot()` stores it outside and starts over.
 */
class UninitialisedScope extends Error {
  constructor(readonly scope: Scope) {
    super(`scope ${scope.parentId}/${scope.resourceName} has no timestamp yet`);
  }
}

type SessionMode = 'write' | 'read' | 'snapshot';

/** What every session of one storage shares. */
interface SessionContext {
  cache: SharedCache;
  /** The statement announcing invalidations to the other processes (none: one process only). */
  notify?: (payload: string) => DeferredStatement;
}

/** The operations, run on one connection: a write transaction, a snapshot or autocommit reads. */
class SqlSession implements StorageSession {
  readonly #db: SqlConnection | SqlTransaction;
  readonly #mode: SessionMode;
  readonly #context: SessionContext;
  /**
   * The ACLs this session has read or written, by URI (not kept by the storage's shared
   * reader). A request reads its object's ancestors' ACLs to authorise it and writes the
   * object's own; the next sub-requests of a batch and the history writer find them here
   * instead of asking again. Within a transaction they are what it saw and left.
   */
  readonly #acls: Map<string, Permissions> | null;
  /**
   * ACLs written but not yet sent: they go in one statement, at commit (with COMMIT, no round
   * trip of their own) or before the first statement that reads the table.
   */
  readonly #pendingAcls = new Map<string, Permissions>();
  /** Object writes not sent yet, and the scopes this transaction holds (pending-writes.ts). */
  readonly #pending = new PendingWrites();
  /**
   * Objects this transaction read locked (`forUpdate`) or wrote, as it left them (null: none):
   * nobody else can change them before it ends. In a read session: those it preloaded.
   */
  readonly #locked = new Map<string, ObjectRow | null>();
  /** What this transaction changed of what the shared cache holds. */
  readonly #invalidations: Invalidation[] = [];
  /** Set by a change too wide to track (a tree, every group): the shared cache is no longer asked. */
  #bypassCache = false;
  /** Objects this session wrote (for the embedded store's maintenance). */
  writes = 0;

  constructor(db: SqlConnection | SqlTransaction, mode: SessionMode, context: SessionContext, { memo = true } = {}) {
    this.#db = db;
    this.#mode = mode;
    this.#context = context;
    this.#acls = memo ? new Map() : null;
    if ('atCommit' in db) db.atCommit(() => this.#atCommit());
  }

  /** What the shared cache must forget once this transaction committed. */
  get invalidations(): readonly Invalidation[] {
    return this.#invalidations;
  }

  /** The statements that end the transaction: pending objects, pending ACLs, then the announcement. */
  #atCommit(): DeferredStatement[] {
    const statements: DeferredStatement[] = [];
    statements.push(...this.#pending.take());
    const acls = this.#takePendingAcls();
    if (acls) statements.push(acls);
    if (this.#invalidations.length > 0 && this.#context.notify) statements.push(this.#context.notify(encodeInvalidations(this.#invalidations)));
    return statements;
  }

  #invalidate(invalidation: Invalidation): void {
    this.#invalidations.push(invalidation);
    if (invalidation.kind !== 'object' && invalidation.kind !== 'acl') this.#bypassCache = true;
  }

  /** Whether the shared cache may answer for `key`: not once this transaction changed it. */
  #cacheable(kind: 'object' | 'acl', key: string): boolean {
    if (this.#bypassCache) return false;
    return !this.#invalidations.some((invalidation) =>
      invalidation.kind === kind && (kind === 'object' ? (invalidation as { key: string }).key : (invalidation as { uri: string }).uri) === key,
    );
  }

  /** Sends the pending object writes now: a statement is about to read or stamp the objects. */
  async #sendPendingWrites(): Promise<void> {
    for (const statement of this.#pending.take()) {
      const rows = await this.#query(statement.text, statement.params); // not inside `onRows?.(…)`, which would skip it
      statement.onRows?.(rows);
    }
  }

  /** What this transaction knows of an object without asking: what it wrote, or read locked. */
  #known(scope: Scope, id: string): { row: ObjectRow | null } | undefined {
    const key = objectKey(scope.parentId, scope.resourceName, id);
    return this.#locked.has(key) ? { row: this.#locked.get(key)! } : undefined;
  }

  /** The next timestamp of the scope; the first one bumps it in the database, which locks it. */
  async #allocate(scope: Scope): Promise<number> {
    const next = this.#pending.next(scope.parentId, scope.resourceName);
    if (next !== undefined) return next;
    const stamped = await this.#bumpScope(scope);
    this.#pending.hold(scope.parentId, scope.resourceName, stamped);
    return stamped;
  }

  /**
   * The timestamp of the next write to the scope: from the scope when this transaction holds
   * it; else, if the caller takes it at commit (`late`) and the scope has no early write of
   * this transaction, NaN until then; else bumped in the database now.
   */
  async #stampFor(scope: Scope, late: boolean | undefined): Promise<number> {
    const held = this.#pending.next(scope.parentId, scope.resourceName);
    if (held !== undefined) return held;
    if (late && this.#mode === 'write') return Number.NaN;
    // An early stamp after late ones of the same scope: send those first (they hold it then).
    if (this.#pending.hasLate(scope.parentId, scope.resourceName)) {
      await this.#sendPendingWrites();
      return this.#pending.next(scope.parentId, scope.resourceName)!;
    }
    return this.#allocate(scope);
  }

  /** Queues a write (a live object or a tombstone) and returns the object handed out for it. */
  async #queue<T extends { last_modified: number }>(scope: Scope, id: string, data: Record<string, unknown>, deleted: boolean, fresh: boolean, late: boolean | undefined, shape: (lastModified: number) => T): Promise<T> {
    this.#assertNotHistory(scope);
    const lastModified = await this.#stampFor(scope, late);
    const row: ObjectRow = { id, last_modified: lastModified, data, deleted };
    const object = shape(lastModified);
    const stamped = Number.isNaN(lastModified) ? [row, object] : undefined;
    this.#pending.add({ parentId: scope.parentId, resourceName: scope.resourceName, id, lastModified: stamped ? null : lastModified, stamped, data, deleted, fresh });
    this.#locked.set(objectKey(scope.parentId, scope.resourceName, id), row);
    this.writes++;
    this.#changedObject(scope, id);
    return object;
  }

  /** Queues the write of a live object at the scope's next timestamp; returns it as stored. */
  #queueWrite(scope: Scope, id: string, data: Record<string, unknown>, { fresh = false, late }: { fresh?: boolean; late?: boolean } = {}): Promise<StoredObject> {
    const { id: _id, last_modified: _lastModified, ...attributes } = structuredClone(data);
    return this.#queue(scope, id, attributes, false, fresh, late, (lastModified) => ({ ...structuredClone(attributes), id, last_modified: lastModified }));
  }

  /** The stored timestamps of these scopes of one resource, in one statement (scopes never written are absent). */
  async scopeTimestamps(resourceName: string, parentIds: string[]): Promise<Map<string, number>> {
    if (parentIds.length === 0) return new Map();
    const rows = await this.#query<{ parent_id: string; last_modified: number }>(
      'SELECT parent_id, last_modified FROM timestamps WHERE resource_name = $1 AND parent_id = ANY($2::text[])',
      [resourceName, parentIds],
    );
    return new Map(rows.map((row) => [row.parent_id, Number(row.last_modified)]));
  }

  async resourceTimestamp(scope: Scope): Promise<number> {
    const params = [scope.parentId, scope.resourceName];
    if (this.#pending.hasLate(scope.parentId, scope.resourceName)) await this.#sendPendingWrites();
    const held = this.#pending.timestamp(scope.parentId, scope.resourceName);
    if (held !== undefined) return held;
    if (this.#mode === 'snapshot') {
      const [row] = await this.#query<{ last_modified: number }>(
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
      const [row] = await this.#query<{ last_modified: number }>(
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
    const known = this.#known(scope, id);
    if (known) return known.row && !known.row.deleted ? toLiveObject(structuredClone(known.row)) : null;
    if (options?.forUpdate === true && this.#mode === 'write') {
      let row = await this.#find(scope, id, true);
      if (!row && this.#pending.timestamp(scope.parentId, scope.resourceName) === undefined) {
        // Nothing to lock: hold the scope instead, then look again (a creation that committed
        // while we waited for the scope is visible to this new statement).
        const { current, now } = await this.#lockScope(scope);
        this.#pending.hold(scope.parentId, scope.resourceName, current, Math.max(now, current + 1));
        row = await this.#find(scope, id, true);
      }
      this.#locked.set(objectKey(scope.parentId, scope.resourceName, id), row ?? null);
      return row && !row.deleted ? toLiveObject(structuredClone(row)) : null;
    }
    if (!isCachedResource(scope.resourceName)) {
      const row = await this.#find(scope, id);
      return row && !row.deleted ? toLiveObject(row) : null;
    }
    const { cache } = this.#context;
    const key = objectKey(scope.parentId, scope.resourceName, id);
    const useCache = this.#cacheable('object', key);
    const cached = useCache ? cache.object(key) : undefined;
    if (cached !== undefined) return cached && toLiveObject(structuredClone({ ...cached, deleted: false }));
    const token = cache.token;
    const row = await this.#find(scope, id);
    const live = row && !row.deleted ? row : null;
    if (useCache) cache.storeObject(token, key, live && { id: live.id, last_modified: live.last_modified, data: live.data });
    return live && toLiveObject(live);
  }

  /**
   * Reads the object and its ACL in one statement (a read session only): the `get` and the
   * `getPermissions` of it that follow answer from memory. A single-record GET is then one
   * statement, its ancestors' ACLs and objects coming from the shared cache.
   */
  async preload(scope: Scope, id: string, uri: string): Promise<void> {
    if (this.#mode === 'write' || !this.#acls || isCachedResource(scope.resourceName) || tableOf(scope) !== 'objects') return;
    const [row] = await this.#query<ObjectRow & { acl: Array<[string, string]> }>(
      `SELECT o.id, o.last_modified, o.data, o.deleted,
         (SELECT coalesce(jsonb_agg(jsonb_build_array(a.permission, a.principal) ORDER BY a.permission, a.principal COLLATE "C"), '[]')
          FROM access_control_entries a WHERE a.object_id = $4) AS acl
       FROM (VALUES (1)) AS one LEFT JOIN objects o ON o.parent_id = $1 AND o.resource_name = $2 AND o.id = $3`,
      [scope.parentId, scope.resourceName, id, uri],
    );
    const acl: Permissions = {};
    for (const [permission, principal] of row!.acl) (acl[permission] ??= []).push(principal);
    this.#acls.set(uri, acl);
    this.#locked.set(objectKey(scope.parentId, scope.resourceName, id), row!.id === null ? null : { id: row!.id, last_modified: row!.last_modified, data: row!.data, deleted: row!.deleted });
  }

  async create(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    this.#assertWritable();
    if (options?.lastModified === undefined) {
      // Known free (read locked, or a new id): queued. Else one statement checks that the id is
      // free, bumps the scope timestamp (locking it) and stores the object (replacing a
      // tombstone); nothing comes back when the id is taken.
      const known = this.#known(scope, id);
      if (known?.row && !known.row.deleted) throw new UnicityError(`${scope.resourceName} ${id} already exists`, toLiveObject(structuredClone(known.row)));
      if (known || options?.newId) return this.#queueWrite(scope, id, data, { fresh: !known, late: options?.stampAtCommit });
      const stored = await this.#writeFresh(scope, id, data, 'create');
      if (stored) return stored;
    }
    // Taken, or so it seemed: lock, then look (what concurrent writers committed is then
    // visible and stays so), and refuse with the live object or write after all.
    await this.#sendPendingWrites();
    await this.#lockScope(scope);
    const existing = await this.#find(scope, id);
    if (existing && !existing.deleted) throw new UnicityError(`${scope.resourceName} ${id} already exists`, toLiveObject(existing));
    return this.#write(scope, id, data, options);
  }

  async update(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    this.#assertWritable();
    if (options?.lastModified === undefined) return this.#queueWrite(scope, id, data, { late: options?.stampAtCommit });
    return this.#write(scope, id, data, options);
  }

  async insertMany(scope: Scope, objects: Array<{ id: string; data: Record<string, unknown> }>): Promise<StoredObject[]> {
    this.#assertWritable();
    this.#assertNotHistory(scope);
    if (objects.length === 0) return [];
    await this.#sendPendingWrites();
    this.#pending.release(scope.parentId, scope.resourceName);
    this.#forgetLocked();
    const items = objects.map(({ id, data }) => {
      const { id: _id, last_modified: _lastModified, ...attributes } = data;
      return { id, data: attributes };
    });
    // One statement: bump the scope timestamp by n (locking it, as every write does) and insert
    // the rows at first, first + 1, ... — all above every timestamp of the scope.
    const rows = await this.#query<ObjectRow>(
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
    this.writes += rows.length;
    for (const row of rows) this.#changedObject(scope, row.id);
    return rows.map(toLiveObject).sort((a, b) => a.last_modified - b.last_modified);
  }

  async importObjects(scope: Scope, objects: Array<StoredObject | Tombstone>, scopeTimestamp?: number): Promise<void> {
    this.#assertWritable();
    await this.#sendPendingWrites();
    this.#pending.release(scope.parentId, scope.resourceName);
    this.#forgetLocked();
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
    await this.#query(
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
    this.writes += items.length;
    for (const item of items) this.#changedObject(scope, item.id);
  }

  async delete(scope: Scope, id: string, options?: WriteOptions): Promise<Tombstone> {
    this.#assertWritable();
    const known = options?.lastModified === undefined && tableOf(scope) === 'objects' ? this.#known(scope, id) : undefined;
    if (known) {
      // Read locked or written by this transaction: the tombstone is queued like any write.
      if (!known.row || known.row.deleted) throw new ObjectNotFoundError(scope.resourceName, id);
      return this.#queue(scope, id, { deleted: true }, true, false, options?.stampAtCommit, (lastModified): Tombstone => ({ id, last_modified: lastModified, deleted: true }));
    }
    await this.#sendPendingWrites(); // what follows stamps the scope in the database
    this.#pending.release(scope.parentId, scope.resourceName);
    this.#locked.delete(objectKey(scope.parentId, scope.resourceName, id));
    if (options?.lastModified === undefined && tableOf(scope) === 'objects') {
      // One statement: bump the scope timestamp (locking it) and leave the tombstone there,
      // unless the object is not live (then nothing changes).
      const [row] = await this.#query<{ last_modified: number }>(
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
      this.#pending.hold(scope.parentId, scope.resourceName, row.last_modified);
      this.writes++;
      this.#changedObject(scope, id);
      return { id, last_modified: row.last_modified, deleted: true };
    }
    await this.#lockScope(scope);
    const existing = await this.#find(scope, id);
    if (!existing || existing.deleted) throw new ObjectNotFoundError(scope.resourceName, id);
    const timestamp = await this.#stamp(scope, id, options?.lastModified);
    await this.#query(
      `UPDATE ${tableOf(scope)} SET deleted = TRUE, data = $4::jsonb, last_modified = $5
       WHERE parent_id = $1 AND resource_name = $2 AND id = $3`,
      [scope.parentId, scope.resourceName, id, TOMBSTONE_DATA, timestamp],
    );
    this.writes++;
    this.#changedObject(scope, id);
    return { id, last_modified: timestamp, deleted: true };
  }

  async deleteAll(scope: Scope, options: Omit<ListOptions, 'includeDeleted'> = {}): Promise<Tombstone[]> {
    this.#assertWritable();
    await this.#sendPendingWrites();
    this.#pending.release(scope.parentId, scope.resourceName);
    this.#forgetLocked();
    const { current, now } = await this.#lockScope(scope);
    const first = Math.max(now, current + 1);
    // Tombstones get first, first + 1, … in sorting order. The new timestamps exceed every
    // existing one of the scope, so the unique index never sees a collision.
    const query = new QueryBuilder();
    const where = query.where(scope, { ...options, includeDeleted: false });
    const orderBy = query.orderBy(options.sorting);
    const limit = options.limit === undefined ? '' : `LIMIT ${query.bind(options.limit)}`;
    // Matched on the timestamp as well as the id: unique in the scope, and the one index of the
    // history table. The scope lock keeps both from changing meanwhile.
    const rows = await this.#query<{ id: string; last_modified: number }>(
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
    this.writes += tombstones.length;
    for (const tombstone of tombstones) this.#changedObject(scope, tombstone.id);
    return tombstones;
  }

  async list(scope: Scope, options: ListOptions = {}): Promise<Array<StoredObject | Tombstone>> {
    await this.#sendPendingWrites();
    const query = new QueryBuilder();
    const where = query.where(scope, options);
    const orderBy = query.orderBy(options.sorting);
    const limit = options.limit === undefined ? '' : `LIMIT ${query.bind(options.limit)}`;
    const rows = await this.#query<ObjectRow>(
      `SELECT id, last_modified, data, deleted FROM ${tableOf(scope)} WHERE ${where} ORDER BY ${orderBy} ${limit}`,
      query.params,
      DYNAMIC,
    );
    return rows.map((row) => (row.deleted ? toTombstone(row) : toLiveObject(row)));
  }

  async count(scope: Scope, filters: Filter[] = []): Promise<number> {
    await this.#sendPendingWrites();
    const query = new QueryBuilder();
    const where = query.where(scope, { filters });
    const [row] = await this.#query<{ count: number }>(`SELECT count(*) AS count FROM ${tableOf(scope)} WHERE ${where}`, query.params, DYNAMIC);
    return row?.count ?? 0;
  }

  async deleteTree(uri: string): Promise<void> {
    this.#assertWritable();
    // What is pending goes first, else it would be written after the deletion.
    await this.#sendPendingWrites();
    await this.#sendPendingAcls();
    this.#forgetLocked();
    this.#invalidate({ kind: 'tree', uri });
    // Outbox items first: a drainer holding some of them is waited for, and the objects it
    // stored are then visible to (and removed by) the next statement.
    await this.#query(`DELETE FROM outbox WHERE key = $1 OR key LIKE $2 ESCAPE '\\'`, [uri, likePrefix(`${uri}/`)]);
    // The scope timestamps stay: a collection deleted then re-created keeps increasing
    // timestamps, so clients holding an old ETag never mistake new data for old.
    await this.#query(
      `WITH entries AS (DELETE FROM history WHERE parent_id = $1 OR parent_id LIKE $2 ESCAPE '\\')
       DELETE FROM objects WHERE parent_id = $1 OR parent_id LIKE $2 ESCAPE '\\'`,
      [uri, likePrefix(`${uri}/`)],
    );
    await this.#query(`DELETE FROM access_control_entries WHERE object_id LIKE $1 ESCAPE '\\'`, [likePrefix(`${uri}/`)]);
    await this.#query(`DELETE FROM group_members WHERE group_uri LIKE $1 ESCAPE '\\'`, [likePrefix(`${uri}/`)]);
    this.#forgetAcls(uri, false);
  }

  async purgeDeleted(scope: Scope, before?: number): Promise<number> {
    this.#assertWritable();
    await this.#sendPendingWrites();
    this.#forgetLocked();
    const [row] = await this.#query<{ count: number }>(
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

  async trimScope(scope: Scope, keep: number, filters: Filter[] = []): Promise<number> {
    this.#assertWritable();
    await this.#sendPendingWrites();
    this.#forgetLocked();
    if (!Number.isInteger(keep) || keep < 1) throw new StorageError(`trimScope keeps at least one object (asked ${keep})`);
    const query = new QueryBuilder();
    const where = query.where(scope, { filters });
    // The newest `keep` are found walking the timestamp index backwards; the older matches
    // are deleted in the same statement.
    const [row] = await this.#query<{ count: number }>(
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
    this.writes += row?.count ?? 0;
    return row?.count ?? 0;
  }

  async getPermissions(uris: string[]): Promise<Map<string, Permissions>> {
    const result = new Map<string, Permissions>();
    const missing: string[] = [];
    const { cache } = this.#context;
    for (const uri of uris) {
      const known = this.#acls?.get(uri) ?? (isCachedAclUri(uri) && this.#cacheable('acl', uri) ? cache.acl(uri) : undefined);
      if (known) result.set(uri, copyAcl(known));
      else {
        result.set(uri, {});
        missing.push(uri);
      }
    }
    if (missing.length === 0) return result;
    const token = cache.token;
    const rows = await this.#query<{ object_id: string; permission: string; principal: string }>(
      `SELECT object_id, permission, principal FROM access_control_entries
       WHERE object_id = ANY($1::text[]) ORDER BY object_id, permission, principal COLLATE "C"`,
      [missing],
    );
    for (const { object_id, permission, principal } of rows) {
      const permissions = result.get(object_id)!;
      (permissions[permission] ??= []).push(principal);
    }
    for (const uri of missing) {
      this.#acls?.set(uri, copyAcl(result.get(uri)!));
      if (isCachedAclUri(uri) && this.#cacheable('acl', uri)) cache.storeAcl(token, uri, copyAcl(result.get(uri)!));
    }
    return result;
  }

  async setPermissions(uri: string, permissions: Permissions): Promise<void> {
    this.#assertWritable();
    const acl = normalisedAcl(permissions);
    this.#pendingAcls.set(uri, acl);
    this.#acls?.set(uri, acl);
    if (isCachedAclUri(uri)) this.#invalidate({ kind: 'acl', uri });
  }

  /** The statement writing every pending ACL (each replaces the object's entries), if any. */
  #takePendingAcls(): DeferredStatement | null {
    if (this.#pendingAcls.size === 0) return null;
    // Parallel arrays rather than JSON: the planner knows their length (a jsonb function is
    // guessed at 100 rows apiece, and a guess of a million rows once made it JIT-compile).
    const entries: [string[], string[], string[]] = [[], [], []];
    for (const [uri, acl] of this.#pendingAcls) {
      for (const [permission, principals] of Object.entries(acl)) {
        for (const principal of principals) {
          entries[0].push(uri);
          entries[1].push(permission);
          entries[2].push(principal);
        }
      }
    }
    const uris = [...this.#pendingAcls.keys()];
    this.#pendingAcls.clear();
    return {
      text: `WITH wanted AS (
               SELECT * FROM unnest($2::text[], $3::text[], $4::text[]) AS wanted(object_id, permission, principal)
             ),
             dropped AS (
               DELETE FROM access_control_entries AS old
               WHERE old.object_id = ANY($1::text[])
                 AND NOT EXISTS (SELECT 1 FROM wanted WHERE (wanted.object_id, wanted.permission, wanted.principal) = (old.object_id, old.permission, old.principal))
             )
             INSERT INTO access_control_entries (object_id, permission, principal) SELECT object_id, permission, principal FROM wanted
             ON CONFLICT DO NOTHING`,
      params: [uris, ...entries],
    };
  }

  /** Sends the pending ACLs now: a statement is about to read or change the table. */
  async #sendPendingAcls(): Promise<void> {
    const statement = this.#takePendingAcls();
    if (statement) await this.#query(statement.text, statement.params);
  }

  async deletePermissionsTree(uri: string): Promise<void> {
    this.#assertWritable();
    await this.#sendPendingAcls();
    this.#invalidate({ kind: 'tree', uri });
    const params = [uri, likePrefix(`${uri}/`)];
    await this.#query(
      `WITH members AS (DELETE FROM group_members WHERE group_uri = $1 OR group_uri LIKE $2 ESCAPE '\\')
       DELETE FROM access_control_entries WHERE object_id = $1 OR object_id LIKE $2 ESCAPE '\\'`,
      params,
    );
    this.#forgetAcls(uri, true);
  }

  #forgetAcls(uri: string, itself: boolean): void {
    if (this.#acls) forgetAclsBelow(this.#acls, uri, itself);
  }

  async enqueue(topic: string, items: OutboxInput[]): Promise<void> {
    this.#assertWritable();
    // A plain INSERT per item (requests touch one bucket, so one item), run at commit in
    // COMMIT's own round trip.
    const db = this.#db;
    if (!('beforeCommit' in db)) throw new StorageError('enqueue needs a write transaction');
    for (const { key, payload } of items) {
      db.beforeCommit('INSERT INTO outbox (topic, key, payload) VALUES ($1, $2, $3)', [topic, key, JSON.stringify(payload)]);
    }
  }

  async moveOutboxToScope(topic: string, key: string, limit: number, { scope, whileExists }: OutboxTarget): Promise<number> {
    this.#assertWritable();
    await this.#sendPendingWrites();
    this.#pending.release(scope.parentId, scope.resourceName);
    // The lock comes first: two movers of one scope take their items one after the other,
    // so the timestamps follow the order of the items.
    const { current, now } = await this.#lockScope(scope);
    // One statement, the data never leaves the database: take the items, store each element
    // of their payloads at first, first + 1..., and move the scope timestamp to the last one.
    const [row] = await this.#query<{ taken: number }>(
      // The oldest `limit` items are those this statement sees up to the last one chosen (rows
      // of transactions still open are invisible to both). A range, not `seq IN (chosen)`:
      // planned as a semi-join, that subquery is rescanned per row and each rescan skips the
      // rows already deleted, taking more than `limit`.
      `WITH chosen AS MATERIALIZED (
         SELECT seq FROM outbox WHERE topic = $1 AND key = $2 ORDER BY seq LIMIT $3 FOR UPDATE
       ),
       taken AS (
         DELETE FROM outbox WHERE topic = $1 AND key = $2 AND seq <= (SELECT max(seq) FROM chosen)
         RETURNING seq, payload
       ),
       stored AS (
         INSERT INTO ${tableOf(scope)} (parent_id, resource_name, id, last_modified, data, deleted)
         SELECT $4, $5, gen_random_uuid()::text, $6::bigint + row_number() OVER (ORDER BY taken.seq, element.position) - 1, element.value, FALSE
         FROM taken CROSS JOIN LATERAL jsonb_array_elements(taken.payload::jsonb) WITH ORDINALITY AS element(value, position)
         WHERE EXISTS (SELECT 1 FROM objects WHERE parent_id = $7 AND resource_name = $8 AND id = $9 AND NOT deleted)
         RETURNING last_modified
       ),
       stamped AS (
         UPDATE timestamps SET last_modified = (SELECT max(last_modified) FROM stored)
         WHERE parent_id = $4 AND resource_name = $5 AND EXISTS (SELECT 1 FROM stored)
       )
       SELECT count(*)::int AS taken FROM taken`,
      [topic, key, limit, scope.parentId, scope.resourceName, Math.max(now, current + 1), whileExists.scope.parentId, whileExists.scope.resourceName, whileExists.id],
    );
    this.writes += row?.taken ?? 0;
    return row?.taken ?? 0;
  }

  async outboxKeys(topic: string, key?: string): Promise<string[]> {
    const rows = await this.#query<{ key: string }>(
      key === undefined
        ? 'SELECT DISTINCT key FROM outbox WHERE topic = $1 ORDER BY key'
        : 'SELECT key FROM outbox WHERE topic = $1 AND key = $2 LIMIT 1',
      key === undefined ? [topic] : [topic, key],
    );
    return rows.map((row) => row.key);
  }

  async storeNonce(nonce: string, ttlSeconds: number): Promise<void> {
    this.#assertWritable();
    await this.#query(
      `INSERT INTO pagination_nonces (nonce, expires_at)
       VALUES ($1, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint + $2::bigint * 1000)
       ON CONFLICT (nonce) DO NOTHING`,
      [nonce, ttlSeconds],
    );
  }

  async consumeNonce(nonce: string): Promise<boolean> {
    this.#assertWritable();
    await this.#query('DELETE FROM pagination_nonces WHERE expires_at < floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint', []);
    const rows = await this.#query<{ nonce: string }>('DELETE FROM pagination_nonces WHERE nonce = $1 RETURNING nonce', [nonce]);
    return rows.length === 1;
  }

  async setGroupMembers(groupUri: string, members: string[]): Promise<void> {
    this.#assertWritable();
    this.#invalidate({ kind: 'groups' });
    await this.#query(
      `WITH dropped AS (DELETE FROM group_members WHERE group_uri = $1 AND NOT (principal = ANY($2::text[])))
       INSERT INTO group_members (group_uri, principal) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
      [groupUri, members],
    );
  }

  async listGroupsOf(principals: string[]): Promise<string[]> {
    const { cache } = this.#context;
    const key = principals.join('\n');
    const cached = this.#bypassCache ? undefined : cache.groups(key);
    if (cached) return [...cached];
    const token = cache.token;
    const rows = await this.#query<{ group_uri: string }>(
      'SELECT DISTINCT group_uri FROM group_members WHERE principal = ANY($1::text[]) ORDER BY group_uri',
      [principals],
    );
    const groups = rows.map((row) => row.group_uri);
    if (!this.#bypassCache) cache.storeGroups(token, key, groups);
    return [...groups];
  }

  async listAuthorizedIds(parentUri: string, childPath: string, principals: string[], permissions: string[]): Promise<string[]> {
    await this.#sendPendingAcls();
    const prefix = `${parentUri}/${childPath}/`;
    const rows = await this.#query<{ id: string }>(
      // A caller in thousands of groups has thousands of principals: join them (hashed) rather
      // than test each row against the whole list.
      `SELECT DISTINCT substr(object_id, char_length($2::text) + 1) AS id
       FROM access_control_entries ace JOIN unnest($3::text[]) AS caller(principal) ON ace.principal = caller.principal
       WHERE object_id LIKE $1 ESCAPE '\\' AND permission = ANY($4::text[])
         AND strpos(substr(object_id, char_length($2::text) + 1), '/') = 0
       ORDER BY id`,
      [likePrefix(prefix), prefix, principals, permissions],
    );
    return rows.map((row) => row.id);
  }

  async listPermissionEntries(query: PermissionEntriesQuery): Promise<PermissionEntry[]> {
    await this.#sendPendingWrites();
    await this.#sendPendingAcls();
    const builder = new QueryBuilder({ columns: ENTRY_COLUMNS });
    const principals = builder.bind(query.principals);
    const grants = builder.bindJson(query.globalGrants.map(({ resourceName, plural, permission }) => ({ resource_name: resourceName, plural, permission })));
    const implied = builder.bindJson(
      Object.entries(query.implied).flatMap(([resourceName, table]) =>
        Object.entries(table).flatMap(([held, permissions]) => permissions.map((permission) => ({ resource_name: resourceName, held, implied: permission }))),
      ),
    );
    const extra = builder.bindJson(query.extraEntries);
    const conditions = (query.filters ?? []).map((filter) => builder.filter(filter));
    if (query.after) conditions.push(builder.after(query.sorting, query.after));
    const limit = query.limit === undefined ? '' : `LIMIT ${builder.bind(query.limit)}`;
    // Built for a caller with many groups and objects: principals are joined (hashed) rather
    // than compared one by one; ids come from the shape of each URI (['', 'buckets', 'b',
    // 'collections', 'c'] for a collection), other URIs are not listed; the implied
    // permissions are computed once per distinct (kind, held permissions) pair; jsonb is built
    // only for the rows of the page.
    const rows = await this.#query<PermissionEntryRow>(
      `WITH held(uri, permission) AS (
         SELECT ace.object_id, ace.permission
         FROM access_control_entries ace JOIN unnest(${principals}::text[]) AS caller(principal) ON ace.principal = caller.principal
         UNION ALL
         SELECT o.parent_id || '/' || g.plural || '/' || o.id, g.permission
         FROM jsonb_to_recordset(${grants}) AS g(resource_name text, plural text, permission text)
         JOIN objects o ON o.resource_name = g.resource_name AND NOT o.deleted
       ),
       per_object AS (
         SELECT uri, array_agg(DISTINCT permission ORDER BY permission) AS held, string_to_array(uri, '/') AS p
         FROM held GROUP BY uri
       ),
       typed AS (
         SELECT uri, held, p,
           CASE
             WHEN cardinality(p) = 3 AND p[1] = '' AND p[2] = 'buckets' THEN 'bucket'
             WHEN cardinality(p) = 5 AND p[1] = '' AND p[2] = 'buckets' AND p[4] = 'collections' THEN 'collection'
             WHEN cardinality(p) = 5 AND p[1] = '' AND p[2] = 'buckets' AND p[4] = 'groups' THEN 'group'
             WHEN cardinality(p) = 7 AND p[1] = '' AND p[2] = 'buckets' AND p[4] = 'collections' AND p[6] = 'records' THEN 'record'
             WHEN cardinality(p) = 3 AND p[1] = '' AND p[2] = 'accounts' THEN 'account'
           END AS resource_name
         FROM per_object
       ),
       combos AS (
         SELECT c.resource_name, c.held,
           (SELECT jsonb_agg(DISTINCT permission ORDER BY permission) FROM (
              SELECT unnest(c.held) AS permission
              UNION SELECT i.implied FROM jsonb_to_recordset(${implied}) AS i(resource_name text, held text, implied text)
              WHERE i.resource_name = c.resource_name AND i.held = ANY(c.held)
            ) AS expanded) AS permissions
         FROM (SELECT DISTINCT resource_name, held FROM typed WHERE resource_name IS NOT NULL) AS c
       ),
       entries AS (
         SELECT t.uri, t.resource_name, p[cardinality(p)] AS id,
           CASE WHEN p[2] = 'buckets' THEN p[3] END AS bucket_id,
           CASE WHEN p[4] = 'collections' THEN p[5] END AS collection_id,
           CASE WHEN p[4] = 'groups' THEN p[5] END AS group_id,
           CASE WHEN p[6] = 'records' THEN p[7] END AS record_id,
           CASE WHEN p[2] = 'accounts' THEN p[3] END AS account_id,
           combos.permissions
         FROM typed t JOIN combos ON combos.resource_name = t.resource_name AND combos.held = t.held
         UNION ALL
         SELECT x.uri, x.resource_name, NULL, NULL, NULL, NULL, NULL, NULL, x.permissions
         FROM jsonb_to_recordset(${extra}) AS x(uri text, resource_name text, permissions jsonb)
       )
       SELECT uri, resource_name, id, bucket_id, collection_id, group_id, record_id, account_id, permissions
       FROM (SELECT *, jsonb_build_object('permissions', permissions) AS data FROM entries) AS entry
       ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''}
       ORDER BY ${builder.orderBy(query.sorting)}
       ${limit}`,
      builder.params,
      DYNAMIC,
    );
    return rows.map(({ permissions, ...fields }) => {
      const entry: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(fields)) if (value !== null) entry[name] = value;
      return { ...entry, permissions } as PermissionEntry;
    });
  }

  /**
   * Stores the object with a fresh timestamp, in one statement: bumps the scope timestamp
   * (locking it until commit, as every write does) and upserts the row at that timestamp. To
   * `create`, the id must be free (no live object): else nothing is bumped nor written, and
   * null comes back.
   */
  async #writeFresh(scope: Scope, id: string, data: Record<string, unknown>, mode: 'create' | 'update'): Promise<StoredObject | null> {
    this.#assertNotHistory(scope);
    await this.#sendPendingWrites(); // this statement stamps the scope in the database
    this.#pending.release(scope.parentId, scope.resourceName);
    const { id: _id, last_modified: _lastModified, ...attributes } = data;
    const create = mode === 'create';
    const [row] = await this.#query<ObjectRow>(
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
    this.#pending.hold(scope.parentId, scope.resourceName, row.last_modified);
    this.#locked.set(objectKey(scope.parentId, scope.resourceName, id), row);
    this.writes++;
    this.#changedObject(scope, id);
    return toLiveObject(structuredClone(row));
  }

  /** Rows read locked are still locked, but a statement may have changed them: read them again. */
  #forgetLocked(): void {
    this.#locked.clear();
  }

  /** Records a change of a cached object (buckets, collections). */
  #changedObject(scope: Scope, id: string): void {
    if (isCachedResource(scope.resourceName)) this.#invalidate({ kind: 'object', key: objectKey(scope.parentId, scope.resourceName, id) });
  }

  /** Creates or replaces the live object `id` with the requested timestamp (§5.2). */
  async #write(scope: Scope, id: string, data: Record<string, unknown>, options?: WriteOptions): Promise<StoredObject> {
    this.#assertNotHistory(scope);
    await this.#sendPendingWrites();
    this.#pending.release(scope.parentId, scope.resourceName);
    this.#locked.delete(objectKey(scope.parentId, scope.resourceName, id));
    const { id: _id, last_modified: _lastModified, ...attributes } = data;
    const timestamp = await this.#stamp(scope, id, options?.lastModified);
    const [row] = await this.#query<ObjectRow>(
      `INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted)
       VALUES ($1, $2, $3, $4, $5::jsonb, FALSE)
       ON CONFLICT (parent_id, resource_name, id)
       DO UPDATE SET last_modified = EXCLUDED.last_modified, data = EXCLUDED.data, deleted = FALSE
       RETURNING id, last_modified, data, deleted`,
      [scope.parentId, scope.resourceName, id, timestamp, JSON.stringify(attributes)],
    );
    this.writes++;
    this.#changedObject(scope, id);
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
    const { current } = await this.#lockScope(scope);
    if (requested > current) {
      await this.#setScopeTimestamp(scope, requested);
      return requested;
    }
    if (requested < current) {
      const taken = await this.#query(
        `SELECT 1 FROM ${tableOf(scope)} WHERE parent_id = $1 AND resource_name = $2 AND last_modified = $3 AND id <> $4`,
        [scope.parentId, scope.resourceName, requested, id],
      );
      if (taken.length === 0) return requested;
    }
    return this.#bumpScope(scope);
  }

  /** Locks the scope's timestamp row until commit (storing `now` if it has none yet). */
  async #lockScope(scope: Scope): Promise<{ current: number; now: number }> {
    const [row] = await this.#query<{ current: number; now: number }>(
      `INSERT INTO timestamps AS t (parent_id, resource_name, last_modified) VALUES ($1, $2, ${NOW_MS})
       ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = t.last_modified
       RETURNING t.last_modified AS current, ${NOW_MS} AS now`,
      [scope.parentId, scope.resourceName],
    );
    return row!;
  }

  /** Moves the scope timestamp to max(now, current + 1), locking it, and returns it. */
  async #bumpScope(scope: Scope): Promise<number> {
    const [row] = await this.#query<{ last_modified: number }>(
      `INSERT INTO timestamps AS t (parent_id, resource_name, last_modified) VALUES ($1, $2, ${NOW_MS})
       ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = GREATEST(EXCLUDED.last_modified, t.last_modified + 1)
       RETURNING t.last_modified`,
      [scope.parentId, scope.resourceName],
    );
    return row!.last_modified;
  }

  async #setScopeTimestamp(scope: Scope, timestamp: number): Promise<void> {
    await this.#query('UPDATE timestamps SET last_modified = $3 WHERE parent_id = $1 AND resource_name = $2', [
      scope.parentId,
      scope.resourceName,
      timestamp,
    ]);
  }

  async #find(scope: Scope, id: string, forUpdate = false): Promise<ObjectRow | undefined> {
    const [row] = await this.#query<ObjectRow>(
      `SELECT id, last_modified, data, deleted FROM ${tableOf(scope)} WHERE parent_id = $1 AND resource_name = $2 AND id = $3${forUpdate ? ' FOR UPDATE' : ''}`,
      [scope.parentId, scope.resourceName, id],
    );
    return row;
  }

  async #query<R extends Row>(text: string, params: readonly unknown[], options?: QueryOptions): Promise<R[]> {
    try {
      return await this.#db.query<R>(text, params, options);
    } catch (error) {
      if (sqlState(error) === '23505') throw new UnicityError('integrity constraint violated', undefined, { cause: error });
      throw error;
    }
  }

  /** History entries come from `moveOutboxToScope` only (types.ts). */
  #assertNotHistory(scope: Scope): void {
    if (tableOf(scope) !== 'objects') throw new StorageError(`objects of ${scope.resourceName} scopes are only appended by moveOutboxToScope`);
  }

  #assertWritable(): void {
    if (this.#mode !== 'write') throw new StorageError('this session is read only');
  }
}

export interface SqlStorageOptions {
  /** The embedded store's stand-in for autovacuum (maintenance.ts); PostgreSQL has its own. */
  maintenance?: EmbeddedMaintenance;
  /** Entries of each kind in the shared read cache (shared-cache.ts). */
  cacheMaxEntries?: number;
}

export class SqlStorage extends SessionStorage {
  readonly backend: string;
  migrationsApplied: readonly string[] = [];
  readonly #driver: SqlDriver;
  /** Reads outside any transaction (autocommit, any pooled connection). */
  readonly #reader: SqlSession;
  readonly #maintenance: EmbeddedMaintenance | undefined;
  readonly #cache: SharedCache;
  readonly #context: SessionContext;
  readonly channels?: StoreChannels;

  constructor(driver: SqlDriver, { maintenance, cacheMaxEntries = 10_000 }: SqlStorageOptions = {}) {
    super();
    this.#driver = driver;
    this.backend = driver.name;
    this.#maintenance = maintenance;
    // Several processes may share the database: the cache waits for the channel that tells
    // it what they change. Alone in the process (PGlite), it has nothing to wait for.
    const shared = driver.listen !== undefined && driver.notify !== undefined;
    this.#cache = new SharedCache({ maxEntries: cacheMaxEntries, enabled: !shared });
    this.#context = { cache: this.#cache, ...(shared ? { notify: (payload: string) => driver.notify!(NOTIFY_CHANNEL, payload) } : {}) };
    driver.listen?.(NOTIFY_CHANNEL, {
      message: (payload) => this.#cache.invalidate(decodeInvalidations(payload)),
      connected: () => this.#cache.setEnabled(true),
      disconnected: () => this.#cache.setEnabled(false),
    });
    this.#reader = new SqlSession(driver, 'read', this.#context, { memo: false });
    if (shared) {
      this.channels = {
        listen: (channel, listener) => driver.listen!(channel, listener),
        notify: async (channel, payload) => {
          const statement = driver.notify!(channel, payload);
          await driver.query(statement.text, statement.params);
        },
      };
    }
  }

  /**
   * READ COMMITTED is enough: the scope locks serialise writers, and each statement after a
   * lock sees what the previous holder committed. Deadlocks and serialization failures are
   * retried (`fn` runs again). Use the given session only: on PGlite a call to the storage
   * itself inside `fn` waits for the transaction to end.
   */
  async transaction<T>(fn: (session: StorageSession) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let session: SqlSession | undefined;
      try {
        const result = await this.#driver.transaction((connection) => fn((session = new SqlSession(connection, 'write', this.#context))), {
          isolation: 'read committed',
        });
        this.#maintenance?.written(session?.writes ?? 0);
        return result;
      } catch (error) {
        // A queued write that met a taken key failed the COMMIT's round trip.
        if (sqlState(error) === '23505' && !(error instanceof UnicityError)) throw new UnicityError('integrity constraint violated', undefined, { cause: error });
        if (attempt >= MAX_TRANSACTION_ATTEMPTS || !RETRYABLE_STATES.has(sqlState(error) ?? '')) throw error;
        await sleep(backoffDelay(RETRY_BACKOFF, attempt - 1));
      } finally {
        // Committed or not (a failed COMMIT may still have committed): forget what it touched.
        if (session) this.#cache.invalidate(session.invalidations);
      }
    }
  }

  /**
   * One REPEATABLE READ READ ONLY transaction: the timestamp and the objects read belong to
   * the same snapshot. A scope without a timestamp gets one stored outside the snapshot,
   * then `fn` runs again on a new snapshot that sees it (`fn` must only read).
   */
  async snapshot<T>(fn: (session: StorageSession) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#driver.transaction((connection) => fn(new SqlSession(connection, 'snapshot', this.#context)), {
          isolation: 'repeatable read',
          readOnly: true,
        });
      } catch (error) {
        if (!(error instanceof UninitialisedScope)) throw error;
        if (attempt >= MAX_SNAPSHOT_ATTEMPTS) throw new BackendError('snapshot: too many uninitialised scopes', { cause: error });
        await this.#reader.resourceTimestamp(error.scope);
      }
    }
  }

  /** Autocommit reads, with the session's own ACL memo: no transaction, no round trip for it. */
  async read<T>(fn: (session: StorageSession) => Promise<T>): Promise<T> {
    return fn(new SqlSession(this.#driver, 'read', this.#context));
  }

  protected readOnce<T>(fn: (session: StorageSession) => Promise<T>): Promise<T> {
    return fn(this.#reader);
  }

  stats(): PoolStats | null {
    return this.#driver.stats?.() ?? null;
  }

  async ping(): Promise<boolean> {
    try {
      await this.#driver.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Empties every table of Quire's schema but the migration registry, so tables added by later
   * migrations are flushed too. Names come from the catalog and are quoted, never user input.
   */
  async flush(): Promise<void> {
    const tables = await this.#driver.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'`,
    );
    if (tables.length === 0) return;
    const list = tables.map(({ name }) => `"${name.replace(/"/g, '""')}"`).join(', ');
    const everything = encodeInvalidations([{ kind: 'all' }]);
    await this.#driver.transaction(async (tx) => {
      await tx.query(`TRUNCATE ${list}`, [], DYNAMIC);
      const notify = this.#driver.notify?.(NOTIFY_CHANNEL, everything);
      if (notify) tx.beforeCommit(notify.text, notify.params);
    });
    this.#cache.invalidate([{ kind: 'all' }]);
  }

  async close(): Promise<void> {
    await this.#maintenance?.idle();
    await this.#driver.close();
  }
}

export interface PostgresStorageOptions extends PgDriverOptions, Pick<SqlStorageOptions, 'cacheMaxEntries'> {
  /** Apply pending migrations at start (else only check, and fail when some are pending). */
  autoMigrate?: boolean;
}

/** PostgreSQL storage. Without `autoMigrate`, fails with MigrationRequiredError when the schema is behind. */
export async function createPostgresStorage({ autoMigrate = false, cacheMaxEntries, ...options }: PostgresStorageOptions): Promise<SqlStorage> {
  const driver = createPgDriver(options); // validates the schema name used below
  let applied: string[] = [];
  try {
    if (autoMigrate) {
      if (options.schema !== undefined) {
        const schema = options.schema;
        await driver.transaction(async (tx) => {
          // Concurrent CREATE SCHEMA IF NOT EXISTS can still collide: serialise them.
          await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`quire.schema:${schema}`]);
          await tx.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
        });
      }
      applied = await migrate(driver);
    } else {
      await checkMigrations(driver);
    }
  } catch (error) {
    await driver.close();
    throw error;
  }
  const storage = new SqlStorage(driver, { cacheMaxEntries });
  storage.migrationsApplied = applied;
  return storage;
}

/** Embedded storage (PGlite), in memory or persisted in `dataDir`; always migrated at start. */
export async function createPgliteStorage(options: PgliteDriverOptions = {}): Promise<SqlStorage> {
  const driver = createPgliteDriver(options);
  const maintenance = new EmbeddedMaintenance(driver);
  let applied: string[];
  try {
    applied = await migrate(driver);
    await maintenance.start();
  } catch (error) {
    await driver.close();
    throw error;
  }
  const storage = new SqlStorage(driver, { maintenance });
  storage.migrationsApplied = applied;
  return storage;
}

/** `[uri, permission, principal]` triples → `{uri: {permission: [principals, sorted]}}`. */
function toLiveObject(row: ObjectRow): StoredObject {
  return { ...row.data, id: row.id, last_modified: row.last_modified };
}

function toTombstone(row: ObjectRow): Tombstone {
  return { id: row.id, last_modified: row.last_modified, deleted: true };
}
