/**
 * The ACLs one session has read or written, by URI. A request reads its object's ancestors'
 * ACLs to authorise it and writes the object's own; the next sub-requests of a batch and the
 * history writer find them here instead of asking again. Within a transaction they are what it
 * saw and left. Both backends keep one per session.
 */
import type { Permissions } from './types.js';

/** A copy of an ACL, so that callers never change what a memo or cache holds. */
export function copyAcl(acl: Permissions): Permissions {
  return Object.fromEntries(Object.entries(acl).map(([permission, principals]) => [permission, [...principals]]));
}

/** An ACL as the database gives it back: principals sorted and unique, no empty permission. */
export function normalisedAcl(acl: Permissions): Permissions {
  const normalised: Permissions = {};
  for (const permission of Object.keys(acl).sort()) {
    const principals = [...new Set(acl[permission])].sort();
    if (principals.length > 0) normalised[permission] = principals;
  }
  return normalised;
}

export class AclMemo {
  readonly #acls = new Map<string, Permissions>();

  /** A copy of the ACL known for `uri` (undefined: not known). */
  get(uri: string): Permissions | undefined {
    const acl = this.#acls.get(uri);
    return acl && copyAcl(acl);
  }

  /**
   * The ACLs of `uris` this memo knows (else `fallback`, e.g. a shared cache, does), and the
   * URIs left to read: those map to `{}` until `addEntries` fills them in.
   */
  lookup(
    uris: string[],
    fallback?: (uri: string) => Permissions | undefined,
  ): { acls: Map<string, Permissions>; missing: string[] } {
    const acls = new Map<string, Permissions>();
    const missing: string[] = [];
    for (const uri of uris) {
      const known = this.get(uri) ?? fallback?.(uri);
      if (known) acls.set(uri, known);
      else {
        acls.set(uri, {});
        missing.push(uri);
      }
    }
    return { acls, missing };
  }

  /** Remembers an ACL as read from the database or written by the session (a copy of it). */
  remember(uri: string, acl: Permissions): void {
    this.#acls.set(uri, copyAcl(acl));
  }

  /** The ACLs below `uri` (and that of `uri` itself, if asked) are gone. */
  forgetTree(uri: string, itself: boolean): void {
    const prefix = `${uri}/`;
    for (const known of this.#acls.keys()) if (known.startsWith(prefix)) this.#acls.set(known, {});
    if (itself) this.#acls.set(uri, {});
  }
}

/** Adds rows of `access_control_entries`, in (permission, principal) order, to the ACLs of `acls`. */
export function addEntries(
  acls: Map<string, Permissions>,
  rows: Iterable<{ object_id: string; permission: string; principal: string }>,
): void {
  for (const { object_id, permission, principal } of rows) {
    const acl = acls.get(object_id)!;
    acl[permission] ??= [];
    acl[permission].push(principal);
  }
}
