/**
 * `permissions.entries` on PostgreSQL for a plain walk by URI (the default `-uri`, or `uri`, no
 * filter, no grant from the settings), a page at a time: the statement reads only the page's
 * ACEs, from the (principal, object_id) index, and the entries are built here from them (kind and
 * ids from the URI's shape, implied permissions once per kind and held set), the same as the
 * whole listing's statement builds them (permission-entries.ts), so a page costs its own size.
 */
import { compareStrings } from '../filters/json-order.js';
import type { PermissionEntriesQuery, PermissionEntry } from '../types.js';
import { DYNAMIC } from './drivers/types.js';
import { QueryBuilder } from './queries.js';
import type { SqlSessionState } from './session-state.js';

/** The number of segments of a URI (`/buckets/b` has three: '', 'buckets', 'b'). */
export function segmentsOf(uri: string): string {
  return `(length(${uri}) - length(replace(${uri}, '/', '')) + 1)`;
}

/** The kind of object a URI names, from its shape; NULL for a URI that is not listed (twin of `entryOfUri`). */
export function kindOf(uri: string, segments = segmentsOf(uri)): string {
  const part = (n: number) => `split_part(${uri}, '/', ${n})`;
  return `CASE
    WHEN ${part(1)} <> '' THEN NULL
    WHEN ${segments} = 3 AND ${part(2)} = 'buckets' THEN 'bucket'
    WHEN ${segments} = 5 AND ${part(2)} = 'buckets' AND ${part(4)} = 'collections' THEN 'collection'
    WHEN ${segments} = 5 AND ${part(2)} = 'buckets' AND ${part(4)} = 'groups' THEN 'group'
    WHEN ${segments} = 7 AND ${part(2)} = 'buckets' AND ${part(4)} = 'collections'
      AND ${part(6)} = 'records' THEN 'record'
    WHEN ${segments} = 3 AND ${part(2)} = 'accounts' THEN 'account'
  END`;
}

/** Whether `entries` may go page by page (`listPermissionPage`). */
export function walksByUri(query: PermissionEntriesQuery): boolean {
  return (
    query.limit !== undefined &&
    query.limit > 0 &&
    query.globalGrants.length === 0 &&
    (query.filters ?? []).length === 0 &&
    query.sorting.length === 1 &&
    query.sorting[0]!.field === 'uri'
  );
}

/**
 * The URIs of one page walked by URI, in order, each with the permissions one principal's ACEs
 * give on it, separated by spaces (the names are the resources' own: read, write, record:create…,
 * checked on every write and import); a URI held through several principals has a row for each.
 * One branch per principal: its next `limit` URIs from the keyset, a range of the (principal,
 * object_id) index read in order and grouped as it passes, which the LIMIT stops (so never a read
 * of the rest of a principal's ACEs, whatever the statistics say). The branches' ordered runs are
 * merged (Merge Append) and cut at `limit` rows: no sort, no hash. Each URI of the first `limit`
 * is among the first `limit` of every principal holding it, so its rows are all there, unless the
 * cut fell among them (`listPermissionPage` reads on from the URI before). (Before: the page's last
 * URI searched first, each principal's next URIs aggregated and sorted, then each principal's
 * range read again and sorted: 40-100 ms a page of 10,000 under load.)
 * URIs of no listed kind count in `limit` here (testing their shape in SQL cost 2 µs a row):
 * `listPermissionPage` drops them and reads on when they made the page short.
 */
export function permissionPageStatement(
  query: PermissionEntriesQuery,
  rowLimit = query.limit!,
): { text: string; params: unknown[] } | null {
  const builder = new QueryBuilder({ columns: {} });
  const order = query.sorting[0]!.direction === -1 ? 'DESC' : 'ASC';
  const after = query.after?.uri;
  // The URIs' range, from the keyset, always with both bounds: every URI is in ['/', '0') ('0'
  // follows '/'; others are not listed). Without statistics (right after a bulk load) the planner
  // expects 0.5% of a principal's rows in a range of two bounds, against 33% with one: enough to
  // group them in order rather than hash them all (10,000 URIs spilled to disk: 130 ms a page).
  const from = typeof after === 'string' ? builder.bind(after) : null;
  const range =
    order === 'DESC'
      ? `object_id >= '/' AND object_id < ${from ?? "'0'"}`
      : `object_id ${from ? '>' : '>='} ${from ?? "'/'"} AND object_id < '0'`;
  const limit = builder.bind(query.limit);
  const branches = [...new Set(query.principals)].map(
    (principal) =>
      `(SELECT object_id, string_agg(permission, ' ') AS held FROM access_control_entries
        WHERE principal = ${builder.bind(principal)} AND ${range}
        GROUP BY object_id ORDER BY object_id ${order} LIMIT ${limit})`,
  );
  if (branches.length === 0) return null;
  const text = `SELECT object_id, held FROM (${branches.join(' UNION ALL ')}) AS page
    ORDER BY object_id ${order} LIMIT ${builder.bind(rowLimit)}`;
  return { text, params: builder.params };
}

/** Whether `uri` has `name` as the segment from `start` to `end` (a slash), without slicing it. */
const isSegment = (uri: string, start: number, end: number, name: string) =>
  end - start === name.length && uri.startsWith(name, start);

/**
 * The entry of `uri` with `permissions`, shaped as the whole listing's statement shapes it (its
 * kind from the URI's shape, as `kindOf`: null for a URI of no listed kind), its ids sliced from
 * the URI where its slashes are: a page of 10,000 entries split into segment arrays was most of
 * the garbage its walk made.
 */
export function entryOfUri(
  uri: string,
  held: string,
  expand: (kind: string, held: string) => string[],
): PermissionEntry | null {
  const permissions = (kind: string) => expand(kind, held);
  const a = uri.charCodeAt(0) === 47 ? uri.indexOf('/', 1) : -1;
  if (a < 0) return null;
  const b = uri.indexOf('/', a + 1);
  if (isSegment(uri, 1, a, 'accounts')) {
    if (b >= 0) return null;
    const id = uri.slice(a + 1);
    return {
      uri,
      resource_name: 'account',
      id,
      account_id: id,
      permissions: permissions('account'),
    } as PermissionEntry;
  }
  if (!isSegment(uri, 1, a, 'buckets')) return null;
  if (b < 0) {
    const id = uri.slice(a + 1);
    return { uri, resource_name: 'bucket', id, bucket_id: id, permissions: permissions('bucket') } as PermissionEntry;
  }
  const c = uri.indexOf('/', b + 1);
  if (c < 0) return null;
  const d = uri.indexOf('/', c + 1);
  const collection = isSegment(uri, b + 1, c, 'collections');
  if (d < 0) {
    const id = uri.slice(c + 1);
    const bucket_id = uri.slice(a + 1, b);
    if (collection)
      return {
        uri,
        resource_name: 'collection',
        id,
        bucket_id,
        collection_id: id,
        permissions: permissions('collection'),
      } as PermissionEntry;
    if (isSegment(uri, b + 1, c, 'groups'))
      return {
        uri,
        resource_name: 'group',
        id,
        bucket_id,
        group_id: id,
        permissions: permissions('group'),
      } as PermissionEntry;
    return null;
  }
  const e = uri.indexOf('/', d + 1);
  if (!collection || e < 0 || uri.indexOf('/', e + 1) >= 0 || !isSegment(uri, d + 1, e, 'records')) return null;
  const id = uri.slice(e + 1);
  return {
    uri,
    resource_name: 'record',
    id,
    bucket_id: uri.slice(a + 1, b),
    collection_id: uri.slice(c + 1, d),
    record_id: id,
    permissions: permissions('record'),
  } as PermissionEntry;
}

/**
 * The permissions held (names separated by spaces, in any order, repeats possible) and those
 * they imply, sorted: computed once per (kind, held), a copy for each entry.
 */
function expander(implied: PermissionEntriesQuery['implied']) {
  const memo = new Map<string, Map<string, string[]>>();
  return (kind: string, held: string): string[] => {
    let byHeld = memo.get(kind);
    if (!byHeld) {
      byHeld = new Map();
      memo.set(kind, byHeld);
    }
    let permissions = byHeld.get(held);
    if (!permissions) {
      const table = Object.hasOwn(implied, kind) ? implied[kind]! : {};
      const all = new Set(held.split(' '));
      for (const permission of [...all])
        if (Object.hasOwn(table, permission)) for (const more of table[permission]!) all.add(more);
      permissions = [...all].sort(compareStrings);
      byHeld.set(held, permissions);
    }
    return permissions.slice();
  };
}

/**
 * How many of `rows` (of `permissionPageStatement`, in order; a URI held through several
 * principals has a row for each) hold the first `limit` URIs, which are exact (see there), and
 * how many URIs that is; without the URI a cut at the statement's `rowLimit` fell in (`cut`).
 */
function wholeRows(rows: ReadonlyArray<{ object_id: string }>, limit: number, cut: boolean) {
  let whole = 0;
  let uris = 0;
  for (let i = 0; i < rows.length && uris < limit; uris++, whole = i) {
    const uri = rows[i]!.object_id;
    while (i < rows.length && rows[i]!.object_id === uri) i++;
    if (i === rows.length && cut) break;
  }
  return { whole, uris };
}

export async function listPermissionPage(
  session: SqlSessionState,
  query: PermissionEntriesQuery,
): Promise<PermissionEntry[]> {
  const expand = expander(query.implied);
  const limit = query.limit!;
  const entries: PermissionEntry[] = [];
  // Rows for twice the URIs asked, with several principals: when two hold the same URIs, a page
  // still comes in one statement, and when one holds most (the usual case) the cut never falls.
  for (let after = query.after, rowLimit = new Set(query.principals).size > 1 ? 2 * limit : limit; ; ) {
    const statement = permissionPageStatement({ ...query, ...(after ? { after } : {}) }, rowLimit);
    if (!statement) break;
    const rows = await session.query<{ object_id: string; held: string }>(statement.text, statement.params, DYNAMIC);
    const { whole, uris } = wholeRows(rows, limit, rows.length === rowLimit);
    if (uris === 0 && rows.length === rowLimit) {
      rowLimit *= 2; // one URI held through more principals than the rows asked for
      continue;
    }
    for (let i = 0; i < whole; ) {
      const uri = rows[i]!.object_id;
      let held = rows[i++]!.held;
      for (; i < whole && rows[i]!.object_id === uri; i++) held = `${held} ${rows[i]!.held}`;
      const entry = entryOfUri(uri, held, expand);
      if (entry) entries.push(entry);
    }
    // Fewer URIs than asked, none cut: the listing ends here. Enough entries: the page is whole.
    if ((uris < limit && rows.length < rowLimit) || entries.length >= limit) break;
    after = { uri: rows[whole - 1]!.object_id };
  }
  return withExtraEntries(entries, query);
}

/** The extra entries (the root) of the page's range put in their place, and the page cut at `limit`. */
function withExtraEntries(entries: PermissionEntry[], query: PermissionEntriesQuery): PermissionEntry[] {
  const direction = query.sorting[0]!.direction;
  const after = query.after?.uri;
  const extra = query.extraEntries
    .filter((x) => typeof after !== 'string' || compareStrings(x.uri, after) * direction > 0)
    .map((x) => ({ uri: x.uri, resource_name: x.resource_name, permissions: x.permissions }) as PermissionEntry);
  const all = extra.length === 0 ? entries : [...entries, ...extra];
  if (extra.length > 0) all.sort((a, b) => compareStrings(a.uri, b.uri) * direction);
  return all.slice(0, query.limit);
}
