/**
 * The object writes a transaction has decided but not sent yet, and the scopes it holds.
 *
 * A transaction's first write to a scope bumps the scope's timestamp in the database, which
 * locks it until commit; from then on nobody else can stamp that scope, so the next writes to
 * it take the following timestamps from here, with no statement. The rows wait here and leave
 * together, in one statement sent with COMMIT (or before the first statement that reads the
 * objects). A batch of 25 creations in one collection thus costs two round trips, not 26.
 */
import type { DeferredStatement } from './drivers/types.js';

export interface PendingRow {
  parentId: string;
  resourceName: string;
  id: string;
  lastModified: number;
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

export class PendingWrites {
  readonly #rows = new Map<string, PendingRow>();
  readonly #scopes = new Map<string, HeldScope>();

  add(row: PendingRow): void {
    const rowKey = key(row.parentId, row.resourceName, row.id);
    // A fresh row written again stays an insert.
    const fresh = row.fresh || (this.#rows.get(rowKey)?.fresh ?? false);
    this.#rows.set(rowKey, { ...row, fresh });
  }

  /** The scope is locked by this transaction with `stored` in the database; the next timestamp is at least `floor`. */
  hold(parentId: string, resourceName: string, stored: number, floor = stored + 1): void {
    this.#scopes.set(key(parentId, resourceName), { parentId, resourceName, last: stored, stored, floor });
  }

  /** The database moved the scope's timestamp by itself: ask it again next time. */
  release(parentId: string, resourceName: string): void {
    this.#scopes.delete(key(parentId, resourceName));
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
   * The statement storing every pending row and moving the held scopes' timestamps to the last
   * one given out, or null when there is nothing to send. Afterwards nothing is pending.
   */
  take(): DeferredStatement | null {
    const stamps = [...this.#scopes.values()].filter((scope) => scope.last > scope.stored);
    if (this.#rows.size === 0 && stamps.length === 0) return null;
    const columns = (rows: PendingRow[]) => [
      rows.map((row) => row.parentId),
      rows.map((row) => row.resourceName),
      rows.map((row) => row.id),
      rows.map((row) => row.lastModified),
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
       FROM unnest($${first}::text[], $${first + 1}::text[], $${first + 2}::text[], $${first + 3}::bigint[], $${first + 4}::text[], $${first + 5}::boolean[])
         AS row(parent_id, resource_name, id, last_modified, data, deleted)`;
    return {
      // Arrays rather than JSON: the planner then knows how many rows come.
      text: `WITH stamped AS (
               UPDATE timestamps AS t SET last_modified = s.last_modified
               FROM unnest($1::text[], $2::text[], $3::bigint[]) AS s(parent_id, resource_name, last_modified)
               WHERE t.parent_id = s.parent_id AND t.resource_name = s.resource_name AND t.last_modified < s.last_modified
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
