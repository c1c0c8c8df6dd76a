/**
 * Finding the objects a URL addresses in storage: their scope, their references from the route
 * parameters, their parents' existence, their ACL, and the locking read of a write.
 */
import { ERRNO, objectNotFound } from '../errors.js';
import type { Permissions, ReadOptions, Scope, StoredObject, StorageSession } from '../storage/types.js';
import { objectRef, type ObjectRef, type ResourceDefinition } from './definition.js';

import type { RouteParams } from './request.js';

export type { RouteParams };

/**
 * How a write reads the object it changes: locked until commit, so that its preconditions and
 * the write are one atomic step (exactly one of racing `If-Match` writes wins), and a PATCH
 * applies to the version it replaces.
 */
export const FOR_UPDATE: ReadOptions = { forUpdate: true };

export function scopeOf(ref: { def: ResourceDefinition; parentUri: string }): Scope {
  return { resourceName: ref.def.name, parentId: ref.parentUri };
}

/** Each ancestor of a definition, from the root down, with the route parameter naming its id. */
const ANCESTORS = new WeakMap<ResourceDefinition, Array<{ def: ResourceDefinition; param: string }>>();

/** The ancestors of `def`, worked out once per definition (asked by every request). */
function ancestorsOf(def: ResourceDefinition): Array<{ def: ResourceDefinition; param: string }> {
  let ancestors = ANCESTORS.get(def);
  if (!ancestors) {
    ancestors = [];
    for (let current = def.parent; current; current = current.parent)
      ancestors.unshift({ def: current, param: `${current.name}_id` });
    ANCESTORS.set(def, ancestors);
  }
  return ancestors;
}

/** The parent object addressed by the URL (null for top-level resources). */
export function parentRefFromParams(def: ResourceDefinition, params: RouteParams): ObjectRef | null {
  let parent: ObjectRef | null = null;
  for (const ancestor of ancestorsOf(def)) parent = objectRef(ancestor.def, params[ancestor.param] ?? '', parent);
  return parent;
}

export function objectRefFromParams(def: ResourceDefinition, params: RouteParams): ObjectRef {
  return objectRef(def, params[`${def.name}_id`] ?? '', parentRefFromParams(def, params));
}

/** 404 (errno 111) unless every ancestor exists; returns the direct parent object. */
export async function ensureParents(session: StorageSession, parent: ObjectRef | null): Promise<StoredObject | null> {
  if (!parent) return null;
  let found: StoredObject | null = null;
  for (const ref of [...parent.ancestors, parent]) {
    found = await session.objects.get(scopeOf(ref), ref.id);
    if (!found) throw objectNotFound(ref.def.name, ref.id, ERRNO.MISSING_RESOURCE);
  }
  return found;
}

/** The ACL stored for `uri` ({} when none). */
export async function aclOf(session: StorageSession, uri: string): Promise<Permissions> {
  return (await session.permissions.get([uri])).get(uri) ?? {};
}
