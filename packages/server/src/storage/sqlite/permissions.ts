/**
 * The permissions facet of a SQLite session: access control entries by object URI, group
 * memberships, and the queries over them (`entries`: permission-entries.ts).
 */
import { addEntries, copyAcl, normalisedAcl } from '../acl-memo.js';
import { isCachedAclUri } from '../sql/shared-cache.js';
import { CONTAINER_DEPTH, isContainerUri } from '../collection-timestamps.js';
import type { PermissionEntriesQuery, PermissionEntry, PermissionStore, Permissions } from '../types.js';
import { listPermissionEntries } from './permission-entries.js';
import { belowRange } from './queries.js';
import type { SqliteSessionState } from './session-state.js';

export class SqlitePermissions implements PermissionStore {
  readonly #s: SqliteSessionState;

  constructor(state: SqliteSessionState) {
    this.#s = state;
  }

  async get(uris: string[]): Promise<Map<string, Permissions>> {
    const s = this.#s;
    const shared = s.cache?.shared;
    const { acls: result, missing } = s.acls.lookup(uris, (uri) => {
      const acl = shared && isCachedAclUri(uri) ? shared.acl(uri) : undefined;
      return acl && copyAcl(acl);
    });
    if (missing.length === 0) return result;
    const token = shared?.token ?? -1;
    const rows = s.db.all<{ object_id: string; permission: string; principal: string }>(
      `SELECT object_id, permission, principal FROM access_control_entries
       WHERE object_id IN (SELECT value FROM json_each(?)) ORDER BY object_id, permission, principal`,
      [JSON.stringify(missing)],
    );
    addEntries(result, rows);
    for (const uri of missing) {
      s.acls.remember(uri, result.get(uri)!);
      // Stored in the statement's synchronous step (read-cache.ts).
      if (shared && isCachedAclUri(uri)) shared.storeAcl(token, uri, copyAcl(result.get(uri)!));
    }
    return result;
  }

  async set(uri: string, permissions: Permissions): Promise<void> {
    const s = this.#s;
    s.assertWritable();
    s.db.run('DELETE FROM access_control_entries WHERE object_id = ?', [uri]);
    s.db.run(
      `INSERT OR IGNORE INTO access_control_entries (object_id, permission, principal)
       SELECT ?, permission.key, principal.value
       FROM json_each(?) AS permission, json_each(permission.value) AS principal`,
      [uri, JSON.stringify(permissions)],
    );
    s.acls.remember(uri, normalisedAcl(permissions));
  }

  async deleteTree(uri: string, { itself = true }: { itself?: boolean } = {}): Promise<void> {
    const s = this.#s;
    s.assertWritable();
    // `uri` itself: a bound NULL matches nothing.
    const params = [itself ? uri : null, ...belowRange(uri)];
    s.db.run('DELETE FROM access_control_entries WHERE object_id = ? OR (object_id >= ? AND object_id < ?)', params);
    s.db.run('DELETE FROM group_members WHERE group_uri = ? OR (group_uri >= ? AND group_uri < ?)', params);
    s.acls.forgetTree(uri, itself);
  }

  async setGroupMembers(groupUri: string, members: string[]): Promise<void> {
    const s = this.#s;
    s.assertWritable();
    s.db.run('DELETE FROM group_members WHERE group_uri = ?', [groupUri]);
    s.db.run('INSERT OR IGNORE INTO group_members (group_uri, principal) SELECT ?, value FROM json_each(?)', [
      groupUri,
      JSON.stringify(members),
    ]);
  }

  async groupsOf(principals: string[]): Promise<string[]> {
    const shared = this.#s.cache?.shared;
    const key = JSON.stringify(principals);
    const cached = shared?.groups(key);
    if (cached) return [...cached];
    const token = shared?.token ?? -1;
    const rows = this.#s.db.all<{ group_uri: string }>(
      'SELECT DISTINCT group_uri FROM group_members ' +
        'WHERE principal IN (SELECT value FROM json_each(?)) ORDER BY group_uri',
      [key],
    );
    const groups = rows.map((row) => row.group_uri);
    shared?.storeGroups(token, key, [...groups]);
    return groups;
  }

  async authorizedIds(
    parentUri: string,
    childPath: string,
    principals: string[],
    permissions: string[],
  ): Promise<string[]> {
    const [low, high] = belowRange(`${parentUri}/${childPath}`);
    const rows = this.#s.db.all<{ id: string }>(
      `SELECT DISTINCT substr(object_id, length(@low) + 1) AS id FROM access_control_entries
       WHERE object_id >= @low AND object_id < @high AND instr(substr(object_id, length(@low) + 1), '/') = 0
         AND permission IN (SELECT value FROM json_each(@permissions)) 
         AND principal IN (SELECT value FROM json_each(@principals))
       ORDER BY id`,
      { low, high, permissions: JSON.stringify(permissions), principals: JSON.stringify(principals) },
    );
    return rows.map((row) => row.id);
  }

  async containersOf(principals: string[], permissions: string[]): Promise<string[]> {
    // `depth` is the condition of the partial index access_control_entries_containers (migration 2).
    const rows = this.#s.db.all<{ object_id: string }>(
      `SELECT DISTINCT object_id FROM access_control_entries
       WHERE principal IN (SELECT value FROM json_each(?)) AND permission IN (SELECT value FROM json_each(?))
         AND ${CONTAINER_DEPTH}`,
      [JSON.stringify(principals), JSON.stringify(permissions)],
    );
    return rows.map((row) => row.object_id).filter(isContainerUri);
  }

  async entries(query: PermissionEntriesQuery): Promise<PermissionEntry[]> {
    return listPermissionEntries(this.#s.db, query);
  }
}
