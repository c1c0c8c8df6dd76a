/**
 * Permissions as the protocol defines them (§4.6, §9.2): which names each kind of object has,
 * and which permissions on an object's parents (or on itself) grant each of its permissions.
 */
import type { Permissions } from '@quire/client/admin';

export type ObjectKind = 'bucket' | 'collection' | 'group' | 'record';

export const PERMISSION_NAMES: Record<ObjectKind, string[]> = {
  bucket: ['read', 'write', 'collection:create', 'group:create'],
  collection: ['read', 'write', 'record:create'],
  group: ['read', 'write'],
  record: ['read', 'write'],
};

export const PERMISSION_HELP: Record<string, string> = {
  read: 'See the object (and, on a parent, everything below it)',
  write: 'Change and delete the object (and, on a parent, everything below it)',
  'collection:create': 'Create collections in this bucket',
  'group:create': 'Create groups in this bucket',
  'record:create': 'Create records in this collection',
};

/** `GRANTED_BY[kind][permission]`: the (level, permission) pairs that grant it (§9.2). */
const GRANTED_BY: Record<ObjectKind, Record<string, Array<[ObjectKind, string]>>> = {
  bucket: {
    read: [
      ['bucket', 'write'],
      ['bucket', 'read'],
    ],
    write: [['bucket', 'write']],
    'collection:create': [
      ['bucket', 'write'],
      ['bucket', 'collection:create'],
    ],
    'group:create': [
      ['bucket', 'write'],
      ['bucket', 'group:create'],
    ],
  },
  collection: {
    read: [
      ['bucket', 'write'],
      ['bucket', 'read'],
      ['collection', 'write'],
      ['collection', 'read'],
    ],
    write: [
      ['bucket', 'write'],
      ['collection', 'write'],
    ],
    'record:create': [
      ['bucket', 'write'],
      ['collection', 'write'],
      ['collection', 'record:create'],
    ],
  },
  group: {
    read: [
      ['bucket', 'write'],
      ['bucket', 'read'],
      ['group', 'write'],
      ['group', 'read'],
    ],
    write: [
      ['bucket', 'write'],
      ['group', 'write'],
    ],
  },
  record: {
    read: [
      ['bucket', 'write'],
      ['bucket', 'read'],
      ['collection', 'write'],
      ['collection', 'read'],
      ['record', 'write'],
      ['record', 'read'],
    ],
    write: [
      ['bucket', 'write'],
      ['collection', 'write'],
      ['record', 'write'],
    ],
  },
};

export interface Level {
  kind: ObjectKind;
  uri: string;
  /** The object's own permissions, or null when the caller cannot see them. */
  permissions: Permissions | null;
}

export interface Grant {
  /** Where it comes from: a parent, or the object itself through another permission. */
  kind: ObjectKind;
  uri: string;
  permission: string;
}

/**
 * What `principal` holds on the object (last of `levels`) other than through its own entry
 * for that permission: grants from parents and implied ones (write ⇒ read).
 */
export function inheritedGrants(
  levels: Level[],
  principal: string,
  permission: string,
  ownOverride?: Permissions,
): Grant[] {
  const object = levels[levels.length - 1];
  if (!object) return [];
  const grants: Grant[] = [];
  for (const [kind, granting] of GRANTED_BY[object.kind][permission] ?? []) {
    const level = levels.find((candidate) => candidate.kind === kind);
    if (!level) continue;
    const isSelf = level === object;
    if (isSelf && granting === permission) continue;
    const acl = isSelf && ownOverride ? ownOverride : level.permissions;
    if (acl?.[granting]?.includes(principal)) grants.push({ kind, uri: level.uri, permission: granting });
  }
  return grants;
}

/** Every principal named at any level, the object's own first. */
export function principalsOf(levels: Level[], own: Permissions): string[] {
  const seen = new Set<string>();
  for (const list of Object.values(own)) for (const principal of list) seen.add(principal);
  for (const level of levels)
    for (const list of Object.values(level.permissions ?? {})) for (const principal of list) seen.add(principal);
  return [...seen];
}

interface PrincipalLabel {
  title: string;
  detail: string;
  kind: 'everyone' | 'authenticated' | 'group' | 'account' | 'user';
}

export function describePrincipal(principal: string): PrincipalLabel {
  if (principal === 'system.Everyone')
    return { title: 'Everyone', detail: 'anyone, signed in or not', kind: 'everyone' };
  if (principal === 'system.Authenticated')
    return { title: 'Signed-in users', detail: 'anyone who is signed in', kind: 'authenticated' };
  const group = /^\/buckets\/([^/]+)\/groups\/([^/]+)$/.exec(principal);
  if (group) return { title: group[2]!, detail: `group of bucket ${group[1]}`, kind: 'group' };
  const colon = principal.indexOf(':');
  if (colon > 0) {
    const policy = principal.slice(0, colon);
    const id = principal.slice(colon + 1);
    if (policy === 'account') return { title: id, detail: 'account', kind: 'account' };
    if (policy === 'basicauth') return { title: `${id.slice(0, 10)}…`, detail: 'Basic Auth user', kind: 'user' };
    return { title: id, detail: `${policy} user`, kind: 'user' };
  }
  return { title: principal, detail: 'principal', kind: 'user' };
}

/** Permissions with every name of the kind present (empty lists for the others), sorted. */
export function normalisePermissions(kind: ObjectKind, permissions: Permissions): Permissions {
  const result: Permissions = {};
  for (const name of PERMISSION_NAMES[kind]) result[name] = [...new Set(permissions[name] ?? [])].sort();
  return result;
}

/** `/buckets/b/collections/c/records/r` → the levels' URIs and kinds, bucket first. */
export function levelsOfUri(uri: string): Array<{ kind: ObjectKind; uri: string }> {
  const parts = uri.split('/').filter(Boolean);
  const levels: Array<{ kind: ObjectKind; uri: string }> = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const kind = ({ buckets: 'bucket', collections: 'collection', groups: 'group', records: 'record' } as const)[
      parts[i] as 'buckets'
    ];
    if (!kind) break;
    levels.push({ kind, uri: `/${parts.slice(0, i + 2).join('/')}` });
  }
  return levels;
}
