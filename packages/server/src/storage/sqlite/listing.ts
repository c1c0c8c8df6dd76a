/**
 * How the objects facet reads a listing on SQLite: through a declared index when a filter on its
 * field keeps few objects, else as the planner chooses; and the count of a filter.
 */
import { INDEXED_OPERATORS, indexName } from '../declared-indexes.js';
import { tableOf } from '../tables.js';
import type { Filter, ListOptions, Scope } from '../types.js';
import type { Row } from './connection.js';
import { QueryBuilder } from './queries.js';
import type { SqliteSessionState } from './session-state.js';

/** Index entries a probe reads at most (`selectiveIndex`). */
const PROBE = 1_000;

export interface ObjectRow extends Row {
  id: string;
  last_modified: number;
  /** JSON text. */
  data: string;
  deleted: number;
}

/** The rows of a listing, their data as JSON text (`json(data)`). */
export function listRows(s: SqliteSessionState, scope: Scope, options: ListOptions): ObjectRow[] {
  const query = new QueryBuilder({ indexed: s.indexed });
  const where = query.where(scope, options);
  const orderBy = query.orderBy(options.sorting);
  const limit = options.limit === undefined ? '' : `LIMIT ${query.bind(options.limit)}`;
  const index = tableOf(scope) === 'objects' ? selectiveIndex(s, scope, options) : null;
  return s.db.all<ObjectRow>(
    `SELECT id, last_modified, json(data) AS data, deleted FROM ${tableOf(scope)} ${index ? `INDEXED BY ${index}` : ''}
     WHERE ${where} ORDER BY ${orderBy} ${limit}`,
    query.params,
  );
}

/**
 * The declared index (../declared-indexes.ts) to read a listing through, when one of its
 * filters compares a declared field and selects few objects of the scope. SQLite cannot tell
 * from its statistics how many a range of an expression index holds: it walks the scope in the
 * sort's order (by timestamp) instead, and for a filter that keeps 10 objects in a million,
 * through all of it. So the index is asked (at most PROBE entries, the index alone) before
 * the planner is told; a filter that keeps more is left to it (a page of them comes soon).
 */
function selectiveIndex(s: SqliteSessionState, scope: Scope, { filters = [], sorting }: ListOptions): string | null {
  const indexed = s.indexed;
  if (indexed.size === 0 || indexed.has(sorting?.[0]?.field ?? '')) return null; // a sort on it uses it anyway
  let best: { name: string; count: number } | null = null;
  for (const filter of filters) {
    if (!indexed.has(filter.field) || !INDEXED_OPERATORS.has(filter.operator)) continue;
    const probe = new QueryBuilder({ indexed });
    const condition = probe.filter(filter);
    const name = indexName(filter.field);
    let count: number = PROBE;
    try {
      count =
        s.db.get<{ count: number }>(
          `SELECT count(*) AS count FROM (
             SELECT 1 FROM objects INDEXED BY ${name}
             WHERE parent_id = ${probe.bind(scope.parentId)} AND resource_name = ${probe.bind(scope.resourceName)}
               AND ${condition}
             LIMIT ${PROBE}
           )`,
          probe.params,
        )?.count ?? PROBE;
    } catch {
      continue; // dropped since this session began: the listing goes without it
    }
    if (count < PROBE && (!best || count < best.count)) best = { name, count };
  }
  return best?.name ?? null;
}

/** Live objects matching the filters (`ObjectStore.count`). */
export function countObjects(s: SqliteSessionState, scope: Scope, filters: Filter[]): number {
  if (filters.length === 0) {
    // Kept by the writes' triggers (migration 2): one row, however large the scope.
    return (
      s.db.get<{ live: number }>('SELECT live FROM object_counts WHERE parent_id = ? AND resource_name = ?', [
        scope.parentId,
        scope.resourceName,
      ])?.live ?? 0
    );
  }
  const query = new QueryBuilder({ indexed: s.indexed });
  const where = query.where(scope, { filters });
  return (
    s.db.get<{ count: number }>(`SELECT count(*) AS count FROM ${tableOf(scope)} WHERE ${where}`, query.params)
      ?.count ?? 0
  );
}
