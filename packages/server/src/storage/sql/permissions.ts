/**
 * The permissions facet of a SQL session: access control entries by object URI, group
 * memberships, and the queries over them. ACLs written are sent with COMMIT
 * (pending-acls.ts); those read or written are remembered by the session (acl-memo.ts), and
 * those of buckets, collections and groups, and users' groups, are kept between requests by
 * the shared read cache (shared-cache.ts).
 */
import type { PermissionEntriesQuery, PermissionEntry, PermissionStore, Permissions } from '../types.js';
import { addEntries, copyAcl, normalisedAcl } from '../acl-memo.js';
import { CONTAINER_DEPTH, isContainerUri } from '../collection-timestamps.js';
import { DYNAMIC } from './drivers/types.js';
import { listPermissionEntries } from './permission-entries.js';
import { likePrefix } from './queries.js';
import type { SqlSessionState } from './session-state.js';
import { isCachedAclUri } from './shared-cache.js';

export class SqlPermissions implements PermissionStore {
  readonly #s: SqlSessionState;

  constructor(state: SqlSessionState) {
    this.#s = state;
  }

  async get(uris: string[]): Promise<Map<string, Permissions>> {
    const s = this.#s;
    const { cache } = s.context;
    const { acls: result, missing } = s.acls.lookup(uris, (uri) => this.#cached(uri));
    if (missing.length === 0) return result;
    const token = cache.token;
    const rows = await s.query<{ object_id: string; permission: string; principal: string }>(
      `SELECT object_id, permission, principal FROM access_control_entries
       WHERE object_id = ANY($1::text[]) ORDER BY object_id, permission, principal COLLATE "C"`,
      [missing],
    );
    addEntries(result, rows);
    for (const uri of missing) {
      s.acls.remember(uri, result.get(uri)!);
      if (isCachedAclUri(uri) && s.cacheable('acl', uri)) cache.storeAcl(token, uri, copyAcl(result.get(uri)!));
    }
    return result;
  }

  /** A copy of the shared cache's ACL of `uri`, when it may answer for it. */
  #cached(uri: string): Permissions | undefined {
    const acl = isCachedAclUri(uri) && this.#s.cacheable('acl', uri) ? this.#s.context.cache.acl(uri) : undefined;
    return acl && copyAcl(acl);
  }

  async set(uri: string, permissions: Permissions): Promise<void> {
    const s = this.#s;
    s.assertWritable();
    const acl = normalisedAcl(permissions);
    s.pendingAcls.set(uri, acl);
    s.acls.remember(uri, acl);
    if (isCachedAclUri(uri)) s.invalidate({ kind: 'acl', uri });
  }

  async deleteTree(uri: string, { itself = true }: { itself?: boolean } = {}): Promise<void> {
    const s = this.#s;
    s.assertWritable();
    await s.sendPendingAcls();
    s.invalidate({ kind: 'tree', uri });
    const below = likePrefix(`${uri}/`);
    if (itself) {
      await s.query(
        `WITH members AS (DELETE FROM group_members WHERE group_uri = $1 OR group_uri LIKE $2 ESCAPE '\\')
         DELETE FROM access_control_entries WHERE object_id = $1 OR object_id LIKE $2 ESCAPE '\\'`,
        [uri, below],
      );
    } else {
      await s.query(
        `WITH members AS (DELETE FROM group_members WHERE group_uri LIKE $1 ESCAPE '\\')
         DELETE FROM access_control_entries WHERE object_id LIKE $1 ESCAPE '\\'`,
        [below],
      );
    }
    s.acls.forgetTree(uri, itself);
  }

  async setGroupMembers(groupUri: string, members: string[]): Promise<void> {
    const s = this.#s;
    s.assertWritable();
    s.invalidate({ kind: 'groups' });
    await s.query(
      `WITH dropped AS (DELETE FROM group_members WHERE group_uri = $1 AND NOT (principal = ANY($2::text[])))
       INSERT INTO group_members (group_uri, principal) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
      [groupUri, members],
    );
  }

  async groupsOf(principals: string[]): Promise<string[]> {
    const s = this.#s;
    const { cache } = s.context;
    const key = principals.join('\n');
    const cached = s.bypassCache ? undefined : cache.groups(key);
    if (cached) return [...cached];
    const token = cache.token;
    const rows = await s.query<{ group_uri: string }>(
      'SELECT DISTINCT group_uri FROM group_members WHERE principal = ANY($1::text[]) ORDER BY group_uri',
      [principals],
    );
    const groups = rows.map((row) => row.group_uri);
    if (!s.bypassCache) cache.storeGroups(token, key, groups);
    return [...groups];
  }

  async authorizedIds(
    parentUri: string,
    childPath: string,
    principals: string[],
    permissions: string[],
  ): Promise<string[]> {
    await this.#s.sendPendingAcls();
    const prefix = `${parentUri}/${childPath}/`;
    const rows = await this.#s.query<{ id: string }>(
      // A caller in thousands of groups has thousands of principals: join them (hashed) rather
      // than test each row against the whole list.
      `SELECT DISTINCT substr(object_id, char_length($2::text) + 1) AS id
       FROM access_control_entries ace JOIN unnest($3::text[]) AS caller(principal) ON ace.principal = caller.principal
       WHERE object_id LIKE $1 ESCAPE '\\' AND permission = ANY($4::text[])
         AND strpos(substr(object_id, char_length($2::text) + 1), '/') = 0
       ORDER BY id`,
      [likePrefix(prefix), prefix, principals, permissions],
    );
    return rows.map((row) => row.id);
  }

  async containersOf(principals: string[], permissions: string[]): Promise<string[]> {
    await this.#s.sendPendingAcls();
    // `depth` is the condition of the partial index access_control_entries_containers
    // (migration 007): buckets and collections (and groups, dropped here) only.
    const rows = await this.#s.query<{ object_id: string }>(
      `SELECT DISTINCT object_id FROM access_control_entries
       WHERE principal = ANY($1::text[]) AND permission = ANY($2::text[])
         AND ${CONTAINER_DEPTH}`,
      [principals, permissions],
      DYNAMIC,
    );
    return rows.map((row) => row.object_id).filter(isContainerUri);
  }

  async entries(query: PermissionEntriesQuery): Promise<PermissionEntry[]> {
    // Global grants read the objects: what this transaction wrote of them goes first.
    await this.#s.sendPendingWrites();
    await this.#s.sendPendingAcls();
    return listPermissionEntries(this.#s, query);
  }
}
