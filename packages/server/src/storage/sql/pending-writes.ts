/**
 * The object writes a transaction has decided but not sent yet, and the scopes it holds.
 *
 * A transaction's first write to a scope bumps the scope's timestamp in the database, which
 * locks it until commit; from then on nobody else can stamp that scope, so the next writes to
 * it take the following timestamps from here, with no statement. The rows wait here and leave
 * together, in one statement sent with COMMIT (or before the first statement that reads the
 * objects). A batch of 25 creations in one collection thus costs two round trips, not 26.
 *
 * A write may also be stamped at commit (`late`): its scope is then bumped, and locked, by the
 * statement that stores it, sent with COMMIT, so the lock is held only while PostgreSQL runs
 * that statement and commits — never across a round trip nor while the server's event loop
 * serves other requests. Its timestamp is known once the transaction has committed: the objects
 * handed out for it are given their `last_modified` then.
 */
import type { DeferredStatement } from './drivers/types.js';

/** The database clock in integer milliseconds. */
export const NOW_MS = '(floor(extract(epoch FROM clock_timestamp()) * 1000))::bigint';

/** Late rows of one scope (#lateStatements): those with fresh ids inserted, the others upserted. */
const INSERT_FRESH = `, inserted AS (
    INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted)
    SELECT $1, $2, id, stamp.first + position, data::jsonb, deleted FROM stamp, input WHERE fresh
  )`;
const UPSERT = `, upserted AS (
    INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted)
    SELECT $1, $2, id, stamp.first + position, data::jsonb, deleted FROM stamp, input WHERE NOT fresh
    ON CONFLICT (parent_id, resource_name, id)
    DO UPDATE SET last_modified = EXCLUDED.last_modified, data = EXCLUDED.data, deleted = EXCLUDED.deleted
  )`;

export interface PendingRow {
  parentId: string;
  resourceName: string;
  id: string;
  /** null: stamped at commit (late), then written into the objects handed out for its writes. */
  lastModified: number | null;
  /** Late: the objects handed out for this row's writes (the last one is what is stored). */
  stamped?: Array<{ last_modified: number }>;
  /** The object's attributes (a tombstone's: `{"deleted": true}`). */
  data: Record<string, unknown>;
  deleted: boolean;
  /** Its id was generated for this write: inserted, never upserted (a collision fails the commit). */
  fresh: boolean;
}

interface HeldScope {
  parentId: string;
  resourceName: string;
  /** The last timestamp given out (`stored` when none was). */
  last: number;
  /** What the database holds now. */
  stored: number;
  /** The least the next timestamp may be (the database clock when the scope was locked). */
  floor: number;
}

const key = (...parts: string[]) => parts.join('\u0000');

/** A late write: the object handed out for it, and its rank among the scope's late writes. */
interface LateWrite {
  object: { last_modified: number };
  position: number;
}

export class PendingWrites {
  readonly #rows = new Map<string, PendingRow>();
  readonly #scopes = new Map<string, HeldScope>();
  /** Late writes by row: each gets a timestamp of its own, in order, the row stored at its last. */
  readonly #late = new Map<string, LateWrite[]>();
  /** How many late writes each scope has had (their ranks). */
  readonly #lateCounts = new Map<string, number>();

  add(row: PendingRow): void {
    const rowKey = key(row.parentId, row.resourceName, row.id);
    // A fresh row written again stays an insert.
    const fresh = row.fresh || (this.#rows.get(rowKey)?.fresh ?? false);
    this.#rows.set(rowKey, { ...row, fresh });
    if (row.lastModified === null) {
      const scopeKey = key(row.parentId, row.resourceName);
      const position = this.#lateCounts.get(scopeKey) ?? 0;
      this.#lateCounts.set(scopeKey, position + 1);
      const writes = this.#late.get(rowKey) ?? [];
      for (const object of row.stamped ?? []) writes.push({ object, position });
      this.#late.set(rowKey, writes);
    } else {
      this.#late.delete(rowKey);
    }
  }

  /** Whether any row waits for its timestamp (stamped at commit). */
  anyLate(): boolean {
    return this.#late.size > 0;
  }

  /** Whether rows of the scope wait for their timestamps (stamped at commit). */
  hasLate(parentId: string, resourceName: string): boolean {
    for (const row of this.#rows.values())
      if (row.lastModified === null && row.parentId === parentId && row.resourceName === resourceName) return true;
    return false;
  }

  /** The scope is locked by this transaction with `stored` in the database; the next timestamp is at least `floor`. */
  hold(parentId: string, resourceName: string, stored: number, floor = stored + 1): void {
    this.#scopes.set(key(parentId, resourceName), { parentId, resourceName, last: stored, stored, floor });
  }

  /** The database moved the scope's timestamp by itself: ask it again next time. */
  release(parentId: string, resourceName: string): void {
    this.#scopes.delete(key(parentId, resourceName));
  }

  /** The database moved the timestamps of every scope below `uri` (a deleted tree): ask it again for those. */
  releaseTree(uri: string): void {
    for (const [scopeKey, scope] of this.#scopes) {
      if (scope.parentId === uri || scope.parentId.startsWith(`${uri}/`)) this.#scopes.delete(scopeKey);
    }
  }

  /** The next timestamp of a scope this transaction holds (undefined: it holds none yet). */
  next(parentId: string, resourceName: string): number | undefined {
    const held = this.#scopes.get(key(parentId, resourceName));
    if (!held) return undefined;
    held.last = Math.max(held.last + 1, held.floor);
    return held.last;
  }

  /** The scope's timestamp as this transaction sees it, when it holds the scope. */
  timestamp(parentId: string, resourceName: string): number | undefined {
    return this.#scopes.get(key(parentId, resourceName))?.last;
  }

  /**
   * The statements storing every pending row and moving the held scopes' timestamps to the last
   * one given out (none when there is nothing to send); afterwards nothing is pending. Late
   * rows get a statement per scope, which stamps them and, once it has run, holds the scope.
   */
  take(): DeferredStatement[] {
    const late = [...this.#rows.values()].filter((row) => row.lastModified === null);
    const statements = this.#lateStatements(late);
    for (const row of late) this.#rows.delete(key(row.parentId, row.resourceName, row.id));
    this.#late.clear();
    this.#lateCounts.clear();
    const stamped = this.#stampedStatement();
    return stamped ? [stamped, ...statements] : statements;
  }

  /** Per scope, one statement: bump the timestamp by the rows' count (locking it), store them above it. */
  #lateStatements(rows: PendingRow[]): DeferredStatement[] {
    const byScope = new Map<string, PendingRow[]>();
    for (const row of rows) {
      const scopeKey = key(row.parentId, row.resourceName);
      byScope.set(scopeKey, [...(byScope.get(scopeKey) ?? []), row]);
    }
    // In key order: two transactions stamping the same scopes at commit lock them in one order.
    const ordered = [...byScope.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return ordered.map(([, scopeRows]) => {
      const { parentId, resourceName } = scopeRows[0]!;
      const count = this.#lateCounts.get(key(parentId, resourceName))!;
      const writes = scopeRows.map((row) => this.#late.get(key(row.parentId, row.resourceName, row.id))!);
      // A row is stored at the rank of its last write; every write's object gets its own rank.
      const positions = writes.map((rowWrites) => rowWrites.at(-1)!.position);
      // Only the INSERTs that have rows: each fires the objects' statement triggers (counts), rows or not.
      const fresh = scopeRows.some((row) => row.fresh);
      const replacing = scopeRows.some((row) => !row.fresh);
      return {
        text: `WITH stamp AS (
                 INSERT INTO timestamps AS t (parent_id, resource_name, last_modified)
                 VALUES ($1, $2, ${NOW_MS} + $3::bigint - 1)
                 ON CONFLICT (parent_id, resource_name)
                 DO UPDATE SET last_modified = GREATEST(${NOW_MS}, t.last_modified + 1) + $3::bigint - 1
                 RETURNING t.last_modified - $3::bigint + 1 AS first
               ),
               input AS (
                 SELECT * FROM unnest($4::text[], $5::text[], $6::boolean[], $7::boolean[], $8::bigint[])
                   AS input(id, data, deleted, fresh, position)
               )
               ${fresh ? INSERT_FRESH : ''}
               ${replacing ? UPSERT : ''}
               SELECT first FROM stamp`,
        params: [
          parentId,
          resourceName,
          count,
          scopeRows.map((row) => row.id),
          scopeRows.map((row) => JSON.stringify(row.data)),
          scopeRows.map((row) => row.deleted),
          scopeRows.map((row) => row.fresh),
          positions,
        ],
        onRows: ([stamp]) => {
          const first = Number(stamp!.first);
          for (const rowWrites of writes)
            for (const { object, position } of rowWrites) object.last_modified = first + position;
          this.hold(parentId, resourceName, first + count - 1);
        },
      };
    });
  }

  /** The rows already stamped, and the held scopes' timestamps. */
  #stampedStatement(): DeferredStatement | null {
    const stamps = [...this.#scopes.values()].filter((scope) => scope.last > scope.stored);
    if (this.#rows.size === 0 && stamps.length === 0) return null;
    const columns = (rows: PendingRow[]) => [
      rows.map((row) => row.parentId),
      rows.map((row) => row.resourceName),
      rows.map((row) => row.id),
      rows.map((row) => row.lastModified!),
      rows.map((row) => JSON.stringify(row.data)),
      rows.map((row) => row.deleted),
    ];
    const rows = [...this.#rows.values()];
    const params = [
      stamps.map((scope) => scope.parentId),
      stamps.map((scope) => scope.resourceName),
      stamps.map((scope) => scope.last),
      ...columns(rows.filter((row) => row.fresh)),
      ...columns(rows.filter((row) => !row.fresh)),
    ];
    for (const scope of stamps) scope.stored = scope.last;
    this.#rows.clear();
    const values = (first: number) =>
      `SELECT parent_id, resource_name, id, last_modified, data::jsonb, deleted
       FROM unnest($${first}::text[], $${first + 1}::text[], $${first + 2}::text[],
                   $${first + 3}::bigint[], $${first + 4}::text[], $${first + 5}::boolean[])
         AS row(parent_id, resource_name, id, last_modified, data, deleted)`;
    return {
      // Arrays rather than JSON: the planner then knows how many rows come.
      text: `WITH stamped AS (
               UPDATE timestamps AS t SET last_modified = s.last_modified
               FROM unnest($1::text[], $2::text[], $3::bigint[]) AS s(parent_id, resource_name, last_modified)
               WHERE t.parent_id = s.parent_id AND t.resource_name = s.resource_name
                 AND t.last_modified < s.last_modified
             ),
             inserted AS (
               INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted) ${values(4)}
             )
             INSERT INTO objects (parent_id, resource_name, id, last_modified, data, deleted) ${values(10)}
             ON CONFLICT (parent_id, resource_name, id)
             DO UPDATE SET last_modified = EXCLUDED.last_modified, data = EXCLUDED.data, deleted = EXCLUDED.deleted`,
      params,
    };
  }
}
