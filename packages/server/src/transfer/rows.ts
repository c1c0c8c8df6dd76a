/**
 * Checked lines (validate.ts) as the store takes them (storage/bulk-import.ts), a batch at a time:
 * each object with its URI, normalised ACL, group members and file location, and after each run of
 * objects of one scope that scope's largest `last_modified` (which its timestamp is raised to, as
 * `objects.import` did per call), so that the store need not look for it among the rows.
 */
import { INDEX_RESOURCE } from '../attachments/file-index.js';
import type { BulkLoader, BulkObject, BulkScope } from '../storage/bulk-import.js';
import type { Permissions } from '../storage/types.js';
import { type Line, objectUri } from './format.js';
import { isTombstone } from './validate.js';

/** The ACL as the store keeps it (acl-memo.ts `normalisedAcl`), without copying a one-principal list; null: empty. */
function aclOf(permissions: Permissions): Permissions | null {
  let acl: Permissions | null = null;
  for (const permission of Object.keys(permissions).sort()) {
    const principals = permissions[permission]!;
    const kept = principals.length <= 1 ? principals : [...new Set(principals)].sort();
    if (kept.length === 0) continue;
    acl ??= {};
    acl[permission] = kept;
  }
  return acl;
}

function bulkObject(line: Exclude<Line, { scope: unknown }>, number: number): BulkObject {
  const { resource, parent, object, permissions } = line;
  const deleted = isTombstone(object);
  const uri = objectUri({ resourceName: resource, parentId: parent }, object.id);
  const { id, last_modified: lastModified, ...attributes } = object as Record<string, unknown>;
  const acl = uri && permissions && !deleted ? aclOf(permissions) : null;
  const members = (object as Record<string, unknown>).members;
  return {
    line: number,
    resource,
    parent,
    id: id as string,
    lastModified: lastModified as number,
    deleted,
    data: deleted ? '' : JSON.stringify(attributes),
    uri,
    acl,
    members:
      uri && resource === 'group' && !deleted && Array.isArray(members) ? [...new Set(members as string[])] : null,
    location: resource === INDEX_RESOURCE && !deleted ? ((object as Record<string, unknown>).location as string) : null,
  };
}

/** Collects the rows of checked lines and hands them to the loader `size` at a time. */
export class RowBatcher {
  readonly #loader: BulkLoader;
  readonly #size: number;
  #items: Array<BulkObject | BulkScope> = [];
  /** The run of objects under way: its scope and largest timestamp. */
  #run: BulkScope | null = null;
  objects = 0;

  constructor(loader: BulkLoader, size: number) {
    this.#loader = loader;
    this.#size = size;
  }

  /** Adds a line; true when a batch is full (then `flush`). */
  push(line: Line, number: number): boolean {
    if ('scope' in line) {
      this.#endRun();
      const { resource, parent, timestamp } = line.scope;
      this.#items.push({ line: number, resource, parent, timestamp, given: true });
    } else {
      const object = bulkObject(line, number);
      const run = this.#run;
      if (run && run.resource === object.resource && run.parent === object.parent) {
        run.timestamp = Math.max(run.timestamp, object.lastModified);
        run.line = number;
      } else {
        this.#endRun();
        this.#run = {
          line: number,
          resource: object.resource,
          parent: object.parent,
          timestamp: object.lastModified,
          given: false,
        };
      }
      this.#items.push(object);
      this.objects++;
    }
    return this.#items.length >= this.#size;
  }

  #endRun(): void {
    if (this.#run) this.#items.push(this.#run);
    this.#run = null;
  }

  /** Hands what is collected to the loader (`end`: the last run's timestamp too). */
  async flush(end = false): Promise<void> {
    if (end) this.#endRun();
    if (this.#items.length === 0) return;
    const items = this.#items;
    this.#items = [];
    await this.#loader.add(items);
  }
}
