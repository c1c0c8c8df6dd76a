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

/** The kind of object a URI names, from its shape; NULL for a URI that is not listed (twin of `kindOfUri`). */
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
    query.globalGrants.length === 0 &&
    (query.filters ?? []).length === 0 &&
    query.sorting.length === 1 &&
    query.sorting[0]!.field === 'uri'
  );
}

/**
 * The (uri, permission) pairs of one page walked by URI, in order: each principal's next URIs
 * from the (principal, object_id) index (a LIMIT per principal, so never a scan of another
 * principal's rows, whatever the estimates), the page's last URI among them, then each
 * principal's ACEs from its keyset to that last URI: a range of the same index, read in order
 * (probing the primary key for each of 10,000 URIs cost 300 ms). `OFFSET 0` keeps that range a
 * subquery per principal: pulled up, it was planned as a scan of every ACE and a hash join.
 * URIs of no listed kind count in `limit` here (testing their shape in SQL cost 2 µs a row, most
 * of the statement): `listPermissionPage` drops them and reads on when they made the page short.
 */
export function permissionPageStatement(query: PermissionEntriesQuery): { text: string; params: unknown[] } {
  const builder = new QueryBuilder({ columns: {} });
  const principals = `${builder.bind(query.principals)}::text[]`;
  const descending = query.sorting[0]!.direction === -1;
  const order = descending ? 'DESC' : 'ASC';
  const after = query.after?.uri;
  const keyset = typeof after === 'string' ? builder.bind(after) : null;
  const beyond = (column: string) => (keyset ? `AND ${column} ${descending ? '<' : '>'} ${keyset}` : '');
  const limit = builder.bind(query.limit);
  const last = `(SELECT ${descending ? 'min' : 'max'}(next.object_id) FROM (
      SELECT DISTINCT next.object_id FROM unnest(${principals}) AS caller(principal)
      CROSS JOIN LATERAL (
        SELECT DISTINCT c.object_id FROM access_control_entries c
        WHERE c.principal = caller.principal ${beyond('c.object_id')}
        ORDER BY c.object_id ${order} LIMIT ${limit}
      ) AS next
      ORDER BY next.object_id ${order} LIMIT ${limit}) AS next)`;
  const text = `SELECT a.object_id, a.permission FROM unnest(${principals}) AS caller(principal)
    CROSS JOIN LATERAL (
      SELECT a.object_id, a.permission FROM access_control_entries a
      WHERE a.principal = caller.principal ${beyond('a.object_id')} AND a.object_id ${descending ? '>=' : '<='} ${last}
      OFFSET 0
    ) AS a
    ORDER BY a.object_id ${order}`;
  return { text, params: builder.params };
}

/** The kind of object a URI's segments name (null: not listed), as the statements' `kindOf`. */
export function kindOfUri(parts: readonly string[]): string | null {
  if (parts[0] !== '') return null;
  const n = parts.length;
  if (parts[1] === 'accounts') return n === 3 ? 'account' : null;
  if (parts[1] !== 'buckets') return null;
  if (n === 3) return 'bucket';
  if (n === 5) return parts[3] === 'collections' ? 'collection' : parts[3] === 'groups' ? 'group' : null;
  return n === 7 && parts[3] === 'collections' && parts[5] === 'records' ? 'record' : null;
}

/** The entry of `uri`, as the whole listing's statement shapes it. */
function entryOf(uri: string, parts: string[], kind: string, permissions: string[]): PermissionEntry {
  const entry: Record<string, unknown> = { uri, resource_name: kind, id: parts[parts.length - 1] };
  if (parts[1] === 'buckets') entry.bucket_id = parts[2];
  if (parts[3] === 'collections') entry.collection_id = parts[4];
  if (parts[3] === 'groups') entry.group_id = parts[4];
  if (parts[5] === 'records') entry.record_id = parts[6];
  if (parts[1] === 'accounts') entry.account_id = parts[2];
  entry.permissions = permissions;
  return entry as PermissionEntry;
}

/** The permissions held (distinct, in any order) and those they imply, sorted: once per (kind, held set). */
function expander(implied: PermissionEntriesQuery['implied']) {
  const memo = new Map<string, string[]>();
  return (kind: string, held: string[]): string[] => {
    const key = `${kind}\n${held.sort(compareStrings).join('\n')}`;
    let permissions = memo.get(key);
    if (!permissions) {
      const table = Object.hasOwn(implied, kind) ? implied[kind]! : {};
      const all = new Set(held);
      for (const permission of held)
        if (Object.hasOwn(table, permission)) for (const more of table[permission]!) all.add(more);
      permissions = [...all].sort(compareStrings);
      memo.set(key, permissions);
    }
    return [...permissions];
  };
}

export async function listPermissionPage(
  session: SqlSessionState,
  query: PermissionEntriesQuery,
): Promise<PermissionEntry[]> {
  const expand = expander(query.implied);
  const limit = query.limit!;
  const entries: PermissionEntry[] = [];
  for (let after = query.after; ; ) {
    const { text, params } = permissionPageStatement({ ...query, ...(after ? { after } : {}) });
    const rows = await session.query<{ object_id: string; permission: string }>(text, params, DYNAMIC);
    let uris = 0;
    for (let i = 0; i < rows.length; uris++) {
      const uri = rows[i]!.object_id;
      const held: string[] = [];
      for (; i < rows.length && rows[i]!.object_id === uri; i++)
        if (!held.includes(rows[i]!.permission)) held.push(rows[i]!.permission);
      const parts = uri.split('/');
      const kind = kindOfUri(parts);
      if (kind !== null) entries.push(entryOf(uri, parts, kind, expand(kind, held)));
    }
    // Fewer URIs than asked: the listing ends here. Enough entries: the page is whole.
    if (uris < limit || entries.length >= limit) break;
    after = { uri: rows.at(-1)!.object_id };
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
