/**
 * How the objects facet reads a listing on PostgreSQL: which plan a page takes (the planner's
 * own, the newest objects walked and filtered, or the matches first) and the count of a filter.
 */
import { INDEXED_OPERATORS } from '../declared-indexes.js';
import { tableOf } from '../tables.js';
import type { Filter, ListOptions, Scope } from '../types.js';
import { COSTLY, DYNAMIC, type QueryOptions } from './drivers/types.js';
import { QueryBuilder } from './queries.js';
import type { SqlSessionState } from './session-state.js';

/** Index entries a probe reads at most (`selective`). */
const PROBE = 1_000;
/**
 * Newest objects of the scope a filtered listing walks in index order before it reads the whole
 * scope in physical order instead (`listFromNewest`): enough to fill a page of a filter that
 * keeps one object in a few hundred, few enough to cost a few ms when it does not.
 */
const WALK = 2_000;

/** The rows of a listing, their data selected as `data` (jsonb, parsed by the driver) or `data::text`. */
export async function listRows(
  s: SqlSessionState,
  scope: Scope,
  options: ListOptions,
  data: 'data' | 'data::text',
): Promise<unknown[]> {
  await s.sendPendingWrites();
  const query = new QueryBuilder({ indexed: s.context.indexed() });
  const where = query.where(scope, options);
  const orderBy = query.orderBy(options.sorting);
  const limit = options.limit === undefined ? '' : `LIMIT ${query.bind(options.limit)}`;
  const columns = `id, last_modified, ${data} AS data, deleted`;
  const fromNewest = await listFromNewest(s, scope, options, columns);
  if (fromNewest) return fromNewest;
  // A selective filter on a declared field (see `selective`), or on data the walk of the newest
  // did not fill a page from: the matches first (through its index, or the scope in physical
  // order), then their order; else the planner walks the scope in the sort's order.
  const matchesFirst = fromNewest === null ? await selective(s, scope, options) : true;
  const from = `FROM ${tableOf(scope)} WHERE ${where}`;
  if (typeof matchesFirst === 'string') {
    // The matches of a selective declared field read in its index's order, at most PROBE (the
    // probe counted fewer): only that index gives this order from its first entry, so the planner
    // takes it whatever its statistics say (the whole table's: a small collection beside a big one).
    const rows = await s.query<{ matched: number }>(
      `WITH matched AS MATERIALIZED (
         SELECT id, last_modified, data, deleted ${from} ORDER BY ${matchesFirst} LIMIT ${PROBE})
       SELECT ${columns}, (SELECT count(*)::int FROM matched) AS matched FROM matched ORDER BY ${orderBy} ${limit}`,
      query.params,
      DYNAMIC,
    );
    // As many as PROBE: more were written since the probe; read them all, as below.
    if ((rows[0]?.matched ?? 0) < PROBE) return rows;
  }
  const text = matchesFirst
    ? `WITH matched AS MATERIALIZED (SELECT id, last_modified, data, deleted ${from})
       SELECT ${columns} FROM matched ORDER BY ${orderBy} ${limit}`
    : `SELECT ${columns} ${from} ORDER BY ${orderBy} ${limit}`;
  return s.query(text, query.params, costOf(query, options));
}

/**
 * A listing or count whose filters or sort read data fields (no index serves them: every object
 * of the scope may be read, at a cost the caller chooses) runs in its owner's share of the costly
 * statements; one on columns and declared fields only is as cheap as its index makes it.
 */
function costOf(query: QueryBuilder, { filters = [], sorting = [] }: ListOptions): QueryOptions {
  const onData = [...filters, ...sorting].some(({ field }) => query.readsData(field));
  return onData ? COSTLY : DYNAMIC;
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
async function listFromNewest(
  s: SqlSessionState,
  scope: Scope,
  options: ListOptions,
  columns: string,
): Promise<unknown[] | false | null> {
  const { filters = [], sorting, limit } = options;
  if (limit === undefined || tableOf(scope) !== 'objects') return null;
  const query = new QueryBuilder({ indexed: s.context.indexed() });
  const onData = filters.filter((filter) => query.readsData(filter.field));
  if (onData.length === 0 || sorting?.some((sort) => query.readsData(sort.field))) return null;
  const scopeWhere = query.where(scope, {
    ...options,
    filters: filters.filter((filter) => !onData.includes(filter)),
  });
  const orderBy = query.orderBy(sorting);
  const newest = `SELECT id, last_modified, data, deleted FROM objects WHERE ${scopeWhere}
    ORDER BY ${orderBy} LIMIT ${query.bind(WALK)}`;
  const matching = onData.map((filter) => query.filter(filter)).join(' AND ');
  const rows = await s.query<{ id: string | null; walked: number }>(
    `WITH newest AS MATERIALIZED (${newest})
     SELECT page.*, walked.count AS walked FROM (SELECT count(*)::int AS count FROM newest) AS walked
     LEFT JOIN LATERAL (
       SELECT ${columns} FROM newest WHERE ${matching} ORDER BY ${orderBy} LIMIT ${query.bind(limit)}
     ) AS page ON true`,
    query.params,
    COSTLY,
  );
  const page = rows.filter((row) => row.id !== null);
  return page.length >= limit || (rows[0]?.walked ?? 0) < WALK ? page : false;
}

/**
 * Whether a filter of the listing compares a declared field (../declared-indexes.ts) and keeps
 * few objects of the scope: that field's ordered key (its index's expression), else false. The
 * planner cannot tell: jsonb has no interpolation within a histogram bucket, so it expects half a
 * bucket (0.5% of the scope) at least, and for a page sorted otherwise it walks the scope in that
 * order (by timestamp), through all of it for a filter that keeps 10 objects in a million. So the
 * index is asked first (PROBE matches at most), in its own order: with a LIMIT, only the index
 * gives that order from its first entry, so the probe reads it even where the statistics (the
 * whole table's, dominated by a bigger collection) expect most of the scope to match.
 */
async function selective(s: SqlSessionState, scope: Scope, { filters = [], sorting }: ListOptions) {
  const indexed = s.context.indexed();
  // A sort on a declared field uses its index anyway.
  if (indexed.size === 0 || tableOf(scope) !== 'objects' || indexed.has(sorting?.[0]?.field ?? '')) return false;
  for (const filter of filters) {
    if (!indexed.has(filter.field) || !INDEXED_OPERATORS.has(filter.operator)) continue;
    const probe = new QueryBuilder({ indexed });
    const condition = probe.filter(filter);
    const ordered = probe.field(filter.field).ordered!;
    const [found] = await s.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM (
         SELECT 1 FROM objects
         WHERE parent_id = ${probe.bind(scope.parentId)} AND resource_name = ${probe.bind(scope.resourceName)}
           AND ${condition}
         ORDER BY ${ordered} LIMIT ${PROBE}
       ) AS probe`,
      probe.params,
      DYNAMIC,
    );
    if ((found?.count ?? PROBE) < PROBE) return ordered;
  }
  return false;
}

/** Live objects matching the filters (`ObjectStore.count`). */
export async function countObjects(s: SqlSessionState, scope: Scope, filters: Filter[]): Promise<number> {
  await s.sendPendingWrites();
  if (filters.length === 0) {
    // Kept by the writes' own statements (migration 009): one row, however large the scope.
    const [counted] = await s.query<{ live: number }>(
      'SELECT live FROM object_counts WHERE parent_id = $1 AND resource_name = $2',
      [scope.parentId, scope.resourceName],
    );
    return counted?.live ?? 0;
  }
  const query = new QueryBuilder({ indexed: s.context.indexed() });
  const where = query.where(scope, { filters });
  const [row] = await s.query<{ count: number }>(
    `SELECT count(*) AS count FROM ${tableOf(scope)} WHERE ${where}`,
    query.params,
    costOf(query, { filters }),
  );
  return row?.count ?? 0;
}
