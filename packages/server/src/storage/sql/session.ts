/**
 * A SQL session as callers see it: one facet per concern over the state they share
 * (session-state.ts), and the one call that spans two of them, `preload`.
 */
import { tableOf } from '../tables.js';
import type { Permissions, Scope, StorageSession } from '../types.js';
import { SqlNonces } from './nonces.js';
import { SqlObjects } from './objects.js';
import { SqlOutbox } from './outbox.js';
import { byKey } from './object-rows.js';
import { SqlPermissions } from './permissions.js';
import type { ObjectRow, SqlSessionState } from './session-state.js';
import { isCachedResource, objectKey } from './shared-cache.js';

export class SqlSession implements StorageSession {
  readonly objects: SqlObjects;
  readonly permissions: SqlPermissions;
  readonly outbox: SqlOutbox;
  readonly nonces: SqlNonces;
  readonly #s: SqlSessionState;

  constructor(state: SqlSessionState) {
    this.#s = state;
    this.objects = new SqlObjects(state);
    this.permissions = new SqlPermissions(state);
    this.outbox = new SqlOutbox(state);
    this.nonces = new SqlNonces(state);
  }

  /**
   * Reads the object and its ACL in one statement (a read session only): the `objects.get` and
   * the `permissions.get` of it that follow answer from memory. A single-record GET is then one
   * statement, its ancestors' ACLs and objects coming from the shared cache.
   */
  async preload(scope: Scope, id: string, uri: string): Promise<void> {
    const s = this.#s;
    if (s.mode === 'write' || isCachedResource(scope.resourceName) || tableOf(scope) !== 'objects') return;
    const [row] = await s.query<ObjectRow & { acl: Array<[string, string]> }>(
      `SELECT o.id, o.last_modified, o.data, o.deleted,
         (SELECT coalesce(
           jsonb_agg(jsonb_build_array(a.permission, a.principal) ORDER BY a.permission, a.principal COLLATE "C"),
           '[]')
          FROM access_control_entries a WHERE a.object_id = $4) AS acl
       FROM (VALUES (1)) AS one LEFT JOIN objects o ON ${byKey('o')}`,
      [scope.parentId, scope.resourceName, id, uri],
    );
    const acl: Permissions = {};
    for (const [permission, principal] of row!.acl) {
      acl[permission] ??= [];
      acl[permission].push(principal);
    }
    s.acls.remember(uri, acl);
    s.locked.set(
      objectKey(scope.parentId, scope.resourceName, id),
      row!.id === null
        ? null
        : { id: row!.id, last_modified: row!.last_modified, data: row!.data, deleted: row!.deleted },
    );
  }
}
