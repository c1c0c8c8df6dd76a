/**
 * The `WHERE` of a scope's listing, the same in both SQL dialects: the scope, live objects
 * unless tombstones are asked for, each filter, then the keyset continuation. Each dialect's
 * query builder (sql/queries.ts, sqlite/queries.ts) writes the parts in its own SQL.
 */
import { sortingOrDefault } from './keyset.js';
import type { Filter, ListOptions, Scope, Sort } from './types.js';

/** What a dialect's query builder writes for `scopeWhere`. */
export interface ConditionWriter {
  /** Binds a value and returns its placeholder. */
  bind(value: string): string;
  /** The condition of one filter. */
  filter(filter: Filter): string;
  /** Keyset continuation: rows strictly after `after` in `sorting` order. */
  after(sorting: Sort[], after: Record<string, unknown>): string;
}

/** `WHERE` conditions selecting the scope's objects matching the options. */
export function scopeWhere(
  writer: ConditionWriter,
  scope: Scope,
  { filters = [], sorting, after, includeDeleted = false }: ListOptions,
): string {
  const conditions = [
    `parent_id = ${writer.bind(scope.parentId)}`,
    `resource_name = ${writer.bind(scope.resourceName)}`,
  ];
  if (!includeDeleted) conditions.push('NOT deleted');
  for (const filter of filters) conditions.push(writer.filter(filter));
  if (after !== undefined) conditions.push(writer.after(sortingOrDefault(sorting), after));
  return conditions.join(' AND ');
}
