/**
 * The embedded store's import loader (bulk-import.ts opens its transaction): objects go into
 * their tables as they come, `ROWS` per prepared multi-row INSERT, their access-control entries
 * and group members likewise, and the tables' own keys find what repeats. Each object's rowid is
 * its line plus the table's largest rowid before the import, so that a row found in the way names
 * the line that put it there.
 *
 * A multi-row INSERT that meets a key already taken fails whole (SQLite undoes that statement
 * only); its rows then go one by one, each looked up first: an object given again (refused, or
 * with `replace` the earlier one removed with its ACL and members), a timestamp another object of
 * the scope holds (refused). Parents are looked up once per run of objects under one parent.
 */
import type Database from 'better-sqlite3';
import {
  type BulkLoader,
  type BulkObject,
  type BulkScope,
  type Conflict,
  ImportConflict,
  containerOf,
  throwIfAborted,
} from '../bulk-import.js';
import { belowRange } from './queries.js';
import type { Connection } from './connection.js';

/** Rows per multi-row INSERT: 64 objects × 7 parameters, well within SQLite's 32,766. */
const ROWS = 64;
/** Objects held before they are written (a conflict is then found at most this many lines late). */
const PENDING = 8 * ROWS;
/** What a tombstone keeps as data, as the store writes it (objects.ts). */
const TOMBSTONE_DATA = '{"deleted":true}';

type Table = 'objects' | 'history';
const tableOf = (object: BulkObject): Table => (object.resource === 'history' ? 'history' : 'objects');
const isContainer = (object: BulkObject) => object.resource === 'bucket' || object.resource === 'collection';

/** Multi-row INSERT statements of a given number of rows, prepared once. */
class Inserts {
  readonly #statements = new Map<string, Database.Statement>();
  constructor(readonly db: Database.Database) {}

  run(head: string, row: string, count: number, params: unknown[]): void {
    const key = `${head}|${count}`;
    let statement = this.#statements.get(key);
    if (!statement) {
      statement = this.db.prepare(`${head} VALUES ${Array(count).fill(row).join(', ')}`);
      this.#statements.set(key, statement);
    }
    statement.run(params);
  }

  /** Runs `params` (`width` per row) in statements of ROWS rows at most. */
  runAll(head: string, row: string, width: number, params: unknown[]): void {
    for (let start = 0; start < params.length; start += ROWS * width) {
      const slice = params.slice(start, start + ROWS * width);
      this.run(head, row, slice.length / width, slice);
    }
  }
}

const OBJECT_INSERT = (table: Table) =>
  `INSERT INTO ${table} (rowid, parent_id, resource_name, id, last_modified, data, deleted)`;
const OBJECT_ROW = '(?, ?, ?, ?, ?, jsonb(?), ?)';

function isConstraint(error: unknown): boolean {
  return (
    typeof (error as { code?: unknown }).code === 'string' &&
    (error as { code: string }).code.startsWith('SQLITE_CONSTRAINT')
  );
}

export class SqliteBulkLoader implements BulkLoader {
  readonly #c: Connection;
  readonly #inserts: Inserts;
  readonly #offsets: Record<Table, number>;
  readonly #replace: boolean;
  readonly #signal: AbortSignal | undefined;
  #pending: BulkObject[] = [];
  /** The containers among the pending objects, by URI (their latest version). */
  #pendingContainers = new Map<string, BulkObject>();
  /** The parent checked last, and whether it was live. */
  #lastParent: { uri: string; live: boolean } | null = null;
  replaced = 0;
  /** Live attachment index entries written (their files are checked at the end). */
  files = 0;

  constructor(connection: Connection, offsets: Record<Table, number>, replace: boolean, signal?: AbortSignal) {
    this.#c = connection;
    this.#inserts = new Inserts(connection.db);
    this.#offsets = offsets;
    this.#replace = replace;
    this.#signal = signal;
  }

  async add(items: ReadonlyArray<BulkObject | BulkScope>): Promise<void> {
    for (const item of items) {
      if ('timestamp' in item) {
        if (item.given) this.#checkParent(item.line, item.parent);
        this.#raise(item);
        continue;
      }
      this.#checkParent(item.line, item.parent);
      this.#pending.push(item);
      if (item.uri && isContainer(item)) {
        this.#pendingContainers.set(item.uri, item);
        if (this.#lastParent?.uri === item.uri) this.#lastParent = { uri: item.uri, live: !item.deleted };
      }
      if (item.location !== null) this.files++;
      if (this.#pending.length >= PENDING) this.flush();
    }
  }

  async check(): Promise<void> {
    this.flush();
    const files = this.#fileConflict(Number.MAX_SAFE_INTEGER);
    if (files) throw new ImportConflict(files);
  }

  /**
   * Refuses with `conflict`, unless a line before it is refused too: the pending objects (all
   * before it) are written first, and the files named twice before it looked for.
   */
  #refuse(conflict: Conflict): never {
    this.flush();
    throw new ImportConflict(this.#fileConflict('line' in conflict ? conflict.line : 0) ?? conflict);
  }

  /** The first live index entry before `before` that names a file an earlier one names. */
  #fileConflict(before: number): Conflict | null {
    if (this.files === 0) return null;
    const offset = this.#offsets.objects;
    const row = this.#c.get<{ line: number; earlier: number; location: string }>(
      `SELECT line, earlier, location FROM (
         SELECT rowid - ? AS line, lag(rowid - ?) OVER (PARTITION BY location ORDER BY rowid) AS earlier, location
         FROM (SELECT rowid, data ->> '$.location' AS location FROM objects
               WHERE resource_name = 'attachment' AND NOT deleted AND rowid > ? AND rowid < ?))
       WHERE earlier IS NOT NULL ORDER BY line LIMIT 1`,
      [offset, offset, offset, offset + before],
    );
    return row ? { kind: 'file-taken', line: row.line, earlier: row.earlier, location: row.location } : null;
  }

  #checkParent(line: number, parent: string): void {
    if (parent === '') return;
    if (this.#lastParent?.uri !== parent) {
      const pending = this.#pendingContainers.get(parent);
      let live: boolean | null = pending ? !pending.deleted : null;
      if (live === null) {
        const key = containerOf(parent);
        const row = key
          ? this.#c.get<{ deleted: number }>(
              'SELECT deleted FROM objects WHERE parent_id = ? AND resource_name = ? AND id = ?',
              [key.parent, key.resource, key.id],
            )
          : undefined;
        if (!row) this.#refuse({ kind: 'parent-missing', line, parent });
        live = !row!.deleted;
      }
      this.#lastParent = { uri: parent, live };
    }
    if (!this.#lastParent!.live) this.#refuse({ kind: 'parent-deleted', line, parent });
  }

  /** Raises a scope timestamp, never lowering it (0: nothing to raise, as `objects.import`). */
  #raise(scope: BulkScope): void {
    if (scope.timestamp <= 0) return;
    this.#c.run(
      `INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES (?, ?, ?)
       ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = max(last_modified, excluded.last_modified)`,
      [scope.parent, scope.resource, scope.timestamp],
    );
  }

  /** Writes the pending objects, then their ACLs and group members. */
  flush(): void {
    const pending = this.#pending;
    if (pending.length === 0) return;
    throwIfAborted(this.#signal);
    this.#pending = [];
    this.#pendingContainers = new Map();
    const superseded = new Set<number>();
    for (let start = 0; start < pending.length; ) {
      const table = tableOf(pending[start]!);
      let end = start + 1;
      while (end < pending.length && end - start < ROWS && tableOf(pending[end]!) === table) end++;
      const rows = pending.slice(start, end);
      try {
        const params: unknown[] = [];
        for (const row of rows) this.#pushParams(params, row);
        this.#inserts.run(OBJECT_INSERT(table), OBJECT_ROW, rows.length, params);
      } catch (error) {
        if (!isConstraint(error)) throw error;
        try {
          for (const row of rows) this.#insertOne(row, superseded);
        } catch (conflict) {
          if (!(conflict instanceof ImportConflict) || !('line' in conflict.conflict)) throw conflict;
          throw new ImportConflict(this.#fileConflict(conflict.conflict.line) ?? conflict.conflict);
        }
      }
      start = end;
    }
    const kept = superseded.size ? pending.filter((row) => !superseded.has(row.line)) : pending;
    const aces: unknown[] = [];
    const members: unknown[] = [];
    for (const row of kept) {
      if (row.uri && row.acl)
        for (const [permission, principals] of Object.entries(row.acl))
          for (const principal of principals) aces.push(row.uri, permission, principal);
      if (row.uri && row.members) for (const principal of row.members) members.push(row.uri, principal);
    }
    this.#inserts.runAll(
      'INSERT OR IGNORE INTO access_control_entries (object_id, permission, principal)',
      '(?, ?, ?)',
      3,
      aces,
    );
    this.#inserts.runAll('INSERT OR IGNORE INTO group_members (group_uri, principal)', '(?, ?)', 2, members);
  }

  #pushParams(params: unknown[], row: BulkObject): void {
    params.push(
      this.#offsets[tableOf(row)] + row.line,
      row.parent,
      row.resource,
      row.id,
      row.lastModified,
      row.deleted ? TOMBSTONE_DATA : row.data,
      row.deleted ? 1 : 0,
    );
  }

  /** One object, looked up first: what repeats is refused, or (replace) replaces the earlier line. */
  #insertOne(row: BulkObject, superseded: Set<number>): void {
    const table = tableOf(row);
    const offset = this.#offsets[table];
    const history = table === 'history';
    const earlier = this.#c.get<{ rowid: number }>(
      history
        ? 'SELECT rowid FROM history WHERE parent_id = ? AND resource_name = ? AND last_modified = ?'
        : 'SELECT rowid FROM objects WHERE parent_id = ? AND resource_name = ? AND id = ?',
      [row.parent, row.resource, history ? row.lastModified : row.id],
    );
    if (earlier) {
      const repeated: Conflict = {
        kind: 'repeated',
        line: row.line,
        earlier: earlier.rowid - offset,
        resource: row.resource,
        parent: row.parent,
        id: row.id,
        stamp: row.lastModified,
      };
      if (!this.#replace) throw new ImportConflict(repeated);
      if (row.uri && isContainer(row) && row.deleted) this.#refuseIfChildren(row);
      this.#c.run(`DELETE FROM ${table} WHERE rowid = ?`, [earlier.rowid]);
      if (row.uri) {
        this.#c.run('DELETE FROM access_control_entries WHERE object_id = ?', [row.uri]);
        this.#c.run('DELETE FROM group_members WHERE group_uri = ?', [row.uri]);
      }
      superseded.add(earlier.rowid - offset);
      this.replaced++;
    }
    if (!history) {
      const taken = this.#c.get<{ rowid: number; id: string }>(
        'SELECT rowid, id FROM objects WHERE parent_id = ? AND resource_name = ? AND last_modified = ?',
        [row.parent, row.resource, row.lastModified],
      );
      if (taken)
        throw new ImportConflict({
          kind: 'timestamp-taken',
          line: row.line,
          earlier: taken.rowid - offset,
          resource: row.resource,
          lastModified: row.lastModified,
          id: taken.id,
        });
    }
    const params: unknown[] = [];
    this.#pushParams(params, row);
    this.#inserts.run(OBJECT_INSERT(table), OBJECT_ROW, 1, params);
  }

  /** A container given again as deleted, with objects already under it: refused, naming one of them. */
  #refuseIfChildren(row: BulkObject): void {
    const [low, high] = belowRange(row.uri!);
    const child = this.#c.get<{ line: number }>(
      `SELECT min(line) AS line FROM (
         SELECT rowid - ? AS line FROM objects WHERE parent_id = ? OR (parent_id >= ? AND parent_id < ?)
         UNION ALL SELECT rowid - ? FROM history WHERE parent_id = ? OR (parent_id >= ? AND parent_id < ?))`,
      [this.#offsets.objects, row.uri, low, high, this.#offsets.history, row.uri, low, high],
    );
    if (child?.line != null)
      throw new ImportConflict({
        kind: 'deleted-with-children',
        line: row.line,
        child: child.line,
        resource: row.resource,
        id: row.id,
      });
  }
}
