/**
 * The ACLs a transaction has written but not sent: they go in one statement, at commit (with
 * COMMIT, no round trip of their own) or before the first statement that reads the table.
 */
import type { Permissions } from '../types.js';
import type { DeferredStatement } from './drivers/types.js';

export class PendingAcls {
  readonly #acls = new Map<string, Permissions>();

  /** `acl` replaces every entry of `uri` (a later one for the same URI wins). */
  set(uri: string, acl: Permissions): void {
    this.#acls.set(uri, acl);
  }

  /** The statement writing every pending ACL, if any; they are no longer pending. */
  take(): DeferredStatement | null {
    if (this.#acls.size === 0) return null;
    // Parallel arrays rather than JSON: the planner knows their length (a jsonb function is
    // guessed at 100 rows apiece, and a guess of a million rows once made it JIT-compile).
    const entries: [string[], string[], string[]] = [[], [], []];
    for (const [uri, acl] of this.#acls) {
      for (const [permission, principals] of Object.entries(acl)) {
        for (const principal of principals) {
          entries[0].push(uri);
          entries[1].push(permission);
          entries[2].push(principal);
        }
      }
    }
    const uris = [...this.#acls.keys()];
    this.#acls.clear();
    return {
      text: `WITH wanted AS (
               SELECT * FROM unnest($2::text[], $3::text[], $4::text[]) AS wanted(object_id, permission, principal)
             ),
             dropped AS (
               DELETE FROM access_control_entries AS old
               WHERE old.object_id = ANY($1::text[])
                 AND NOT EXISTS (
                   SELECT 1 FROM wanted
                   WHERE (wanted.object_id, wanted.permission, wanted.principal)
                       = (old.object_id, old.permission, old.principal)
                 )
             )
             INSERT INTO access_control_entries (object_id, permission, principal)
             SELECT object_id, permission, principal FROM wanted
             ON CONFLICT DO NOTHING`,
      params: [uris, ...entries],
    };
  }
}
