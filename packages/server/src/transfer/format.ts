/**
 * The export format of `quire export` / `quire import`: NDJSON, one JSON value per line, keys
 * sorted at every level (the same store content gives the same bytes, whichever backend it
 * comes from: PostgreSQL's jsonb reorders keys, SQLite keeps them as written).
 *
 *   {"format":"quire-export","version":1}                                  first line
 *   {"object":{…,"id","last_modified"[,"deleted"]},"parent":"/buckets/b","permissions":{…},"resource":"collection"}
 *   {"scope":{"parent":"/buckets/b","resource":"collection","timestamp":1700000000000}}
 *
 * An object line holds the object as stored (a tombstone is `{id, last_modified, deleted: true}`)
 * and, when it has any, its access-control entries (`permissions`, principals sorted). A scope
 * line comes after the objects of its scope: the scope timestamp (the collection's ETag).
 * Group memberships are not written: import derives them from the groups' `members`.
 */
import type { Permissions, Scope, StoredObject, Tombstone } from '../storage/types.js';

export const FORMAT = 'quire-export';
export const VERSION = 1;

export interface HeaderLine {
  format: string;
  version: number;
}

export interface ObjectLine {
  resource: string;
  parent: string;
  object: StoredObject | Tombstone;
  permissions?: Permissions;
}

export interface ScopeLine {
  scope: { resource: string; parent: string; timestamp: number };
}

export type Line = ObjectLine | ScopeLine;

/** Plural URL segments of the resources whose objects have a URI (and so may have ACLs). */
export const PLURALS: Record<string, string> = {
  bucket: 'buckets',
  collection: 'collections',
  group: 'groups',
  record: 'records',
  account: 'accounts',
};

export function objectUri(scope: Scope, id: string): string | null {
  const plural = PLURALS[scope.resourceName];
  return plural ? `${scope.parentId}/${plural}/${id}` : null;
}

/** JSON with keys sorted at every level (code-unit order), compact. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return item;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(item).sort()) {
      // defineProperty: a `__proto__` key stays an own property.
      Object.defineProperty(sorted, key, {
        value: (item as Record<string, unknown>)[key],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return sorted;
  });
}
