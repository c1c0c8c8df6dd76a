/**
 * Partial replicas (capability `partial_replicas`): a client that keeps only the records matching
 * its filters polls with `_since=T&<filters>&_unmatched=true`. A plain filtered `_since` listing
 * cannot tell it that a record it holds was edited so that it no longer matches (the record is
 * simply not listed, and no tombstone says so); with `_unmatched`, the listing is of every change
 * since T, and each record changed since T that does not match now comes as a stub
 * `{"id", "last_modified", "deleted": true, "unmatched": true}` (tombstones as usual), which the
 * client drops if held. Only with a lower bound on `last_modified` (a poll: a cold listing needs no
 * stubs) and at least one filter on another field; the original server ignores `_unmatched`, like
 * any `_` parameter, and so does this one when `partial_replicas_enabled` is off.
 *
 * How: the page is read without the subset's filters (its bounds, order, keyset and permissions as
 * any listing), then one statement on the page's ids with the subset's filters says which match:
 * the store's own filter semantics, never a second implementation of them.
 */
import { invalidParameter } from '../errors.js';
import type { Filter, ListedJson, Scope, StorageSession } from '../storage/types.js';
import type { ListQuery } from './querystring.js';

export const UNMATCHED_PARAM = '_unmatched';

export const PARTIAL_REPLICAS_CAPABILITY = {
  description:
    'Filtered _since listings with _unmatched=true also list the records changed since that no longer match, ' +
    'as {id, last_modified, deleted: true, unmatched: true}.',
  url: 'https://github.com/quire/quire#partial-replicas-_unmatched',
  param: UNMATCHED_PARAM,
};

/** Ids looked up per statement (one bound parameter each). */
const IDS_PER_STATEMENT = 1000;

export interface UnmatchedListing {
  /** What the page is read with: the listing's `last_modified` bounds only. */
  listFilters: Filter[];
  /** The subset's filters: what a listed record must match to be listed whole. */
  subset: Filter[];
}

function asked(query: ListQuery): boolean {
  const values = query.params.filter(([name]) => name === UNMATCHED_PARAM).map(([, value]) => value);
  const last = values.at(-1);
  if (last === undefined || last === 'false' || last === '0') return false;
  if (last === 'true' || last === '1') return true;
  throw invalidParameter('querystring', UNMATCHED_PARAM, `${JSON.stringify(last)} is not a boolean`);
}

/** The listing a GET with `_unmatched=true` asks for, or null when it is a plain one. */
export function unmatchedListing(enabled: boolean, query: ListQuery, requested: Filter[]): UnmatchedListing | null {
  if (!enabled || !asked(query)) return null;
  const bounds = requested.filter((filter) => filter.field === 'last_modified');
  const subset = requested.filter((filter) => filter.field !== 'last_modified');
  const polled = bounds.some((filter) => filter.operator === 'gt' || filter.operator === 'min');
  return polled && subset.length > 0 ? { listFilters: bounds, subset } : null;
}

/** The page's records that do not match `subset` (tombstones aside) replaced by their stubs. */
export async function markUnmatched(
  session: StorageSession,
  scope: Scope,
  listing: UnmatchedListing,
  visible: Filter[],
  items: ListedJson[],
): Promise<ListedJson[]> {
  const live = items.filter((item) => !item.deleted).map((item) => item.id);
  const matching = new Set<string>();
  for (let start = 0; start < live.length; start += IDS_PER_STATEMENT) {
    const ids = live.slice(start, start + IDS_PER_STATEMENT);
    const rows = await session.objects.listJson(scope, {
      filters: [...listing.subset, ...visible, { field: 'id', operator: 'in', value: ids }],
      sorting: [{ field: 'last_modified', direction: -1 }],
      limit: ids.length,
    });
    for (const row of rows) matching.add(row.id);
  }
  return items.map((item) =>
    item.deleted || matching.has(item.id)
      ? item
      : {
          ...item,
          deleted: true,
          json: JSON.stringify({ id: item.id, last_modified: item.last_modified, deleted: true, unmatched: true }),
        },
  );
}
