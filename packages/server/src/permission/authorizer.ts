/**
 * Who may do what: the inheritance table of protocol-reference §9.2 plus the
 * `<resource>_<permission>_principals` settings. One place answers every permission question;
 * the handlers only ask.
 */
import type { PermissionSettings } from './settings.js';
import type { AccessContext, AccessPolicy, ListAccess, ObjectRef, ResourceDefinition } from '../engine/definition.js';
import type { Permissions, StorageSession } from '../storage/types.js';

/** The resources whose permissions are inherited from their ancestors. */
type InheritedResource = 'bucket' | 'collection' | 'group' | 'record';

type Grant = readonly [level: InheritedResource, permission: string];

const BUCKET_READ: Grant[] = [
  ['bucket', 'write'],
  ['bucket', 'read'],
];
const COLLECTION_READ: Grant[] = [
  ['collection', 'write'],
  ['collection', 'read'],
];

/** For each resource and permission, the (level, permission) ACEs that grant it. */
const GRANTS: Record<InheritedResource, Record<'read' | 'write', Grant[]>> = {
  bucket: {
    // Rule 4 (1.11): parent attributes are readable when creating children is allowed.
    read: [...BUCKET_READ, ['bucket', 'collection:create'], ['bucket', 'group:create']],
    write: [['bucket', 'write']],
  },
  group: {
    read: [...BUCKET_READ, ['group', 'write'], ['group', 'read']],
    write: [
      ['bucket', 'write'],
      ['group', 'write'],
    ],
  },
  collection: {
    read: [...BUCKET_READ, ...COLLECTION_READ, ['collection', 'record:create']],
    write: [
      ['bucket', 'write'],
      ['collection', 'write'],
    ],
  },
  record: {
    read: [...BUCKET_READ, ...COLLECTION_READ, ['record', 'write'], ['record', 'read']],
    write: [
      ['bucket', 'write'],
      ['collection', 'write'],
      ['record', 'write'],
    ],
  },
};

/** ACEs on the parent that allow creating a child of each kind (buckets: settings only). */
const CREATE_GRANTS: Record<InheritedResource, Grant[]> = {
  bucket: [],
  collection: [
    ['bucket', 'write'],
    ['bucket', 'collection:create'],
  ],
  group: [
    ['bucket', 'write'],
    ['bucket', 'group:create'],
  ],
  record: [
    ['bucket', 'write'],
    ['collection', 'write'],
    ['collection', 'record:create'],
  ],
};

/** The settings key granting (level, permission) globally, e.g. `record_read_principals`. */
function settingsKey(level: string, permission: string): keyof PermissionSettings | null {
  const [child, action] = permission.split(':');
  if (action === 'create') return `${child}_create_principals` as keyof PermissionSettings;
  if (permission === 'read' || permission === 'write')
    return `${level}_${permission}_principals` as keyof PermissionSettings;
  return null;
}

/**
 * What each permission implies on the same object (the same-level part of Kinto's inheritance
 * tree). `GET /permissions` lists them expanded, including the pseudo-permission
 * `read:attributes` (reading the object's own attributes), as deployed clients expect.
 */
export const IMPLIED_PERMISSIONS: Record<string, Record<string, readonly string[]>> = {
  bucket: {
    write: ['read', 'read:attributes', 'collection:create', 'group:create'],
    read: ['read:attributes'],
    'collection:create': ['read:attributes'],
    'group:create': ['read:attributes'],
  },
  collection: {
    write: ['read', 'read:attributes', 'record:create'],
    read: ['read:attributes'],
    'record:create': ['read:attributes'],
  },
  group: { write: ['read'] },
  record: { write: ['read'] },
  account: { write: ['read'] },
};

const PLURALS: Record<string, string> = {
  bucket: 'buckets',
  collection: 'collections',
  group: 'groups',
  record: 'records',
  account: 'accounts',
};

/** Where a `<child>:create` setting applies: on every object of the parent kind, or the root. */
const CREATE_TARGETS: Record<string, string> = {
  bucket: 'root',
  account: 'root',
  collection: 'bucket',
  group: 'bucket',
  record: 'collection',
};

export interface SettingsGrants {
  /** Permissions held on every object of a kind. */
  objects: Array<{ resourceName: string; plural: string; permission: string }>;
  /** Permissions held on the root (`bucket:create`, `account:create`). */
  root: string[];
}

function inherited(name: string): InheritedResource {
  if (!Object.hasOwn(GRANTS, name))
    throw new Error(`${name} has no inherited permissions: give its definition an access policy`);
  return name as InheritedResource;
}

/** The default access policy of the resource engine: §9.2 inheritance and the settings. */
export class Authorizer implements AccessPolicy {
  readonly #settings: PermissionSettings;

  constructor(settings: PermissionSettings) {
    this.#settings = settings;
  }

  #globallyGranted(principals: string[], grants: Grant[]): boolean {
    return grants.some(([level, permission]) => {
      const key = settingsKey(level, permission);
      const granted = key ? (this.#settings[key] as string[]) : [];
      return granted.some((principal) => principals.includes(principal));
    });
  }

  async #granted(session: StorageSession, principals: string[], chain: ObjectRef[], grants: Grant[]): Promise<boolean> {
    if (this.#globallyGranted(principals, grants)) return true;
    const byLevel = new Map(chain.map((ref) => [ref.def.name, ref.uri]));
    const uris = [
      ...new Set(grants.map(([level]) => byLevel.get(level)).filter((uri): uri is string => uri !== undefined)),
    ];
    if (uris.length === 0) return false;
    const acls = await session.permissions.get(uris);
    return grants.some(([level, permission]) => {
      const uri = byLevel.get(level);
      const holders = uri ? acls.get(uri)?.[permission] : undefined;
      return holders?.some((principal) => principals.includes(principal)) ?? false;
    });
  }

  /** read / write on an object (existing or not), inherited from its ancestors. */
  async can({ session, identity }: AccessContext, ref: ObjectRef, permission: 'read' | 'write'): Promise<boolean> {
    return this.#granted(
      session,
      identity.principals,
      [...ref.ancestors, ref],
      GRANTS[inherited(ref.def.name)][permission],
    );
  }

  /** May create a `def` under `parent` (null parent: buckets, by settings only). */
  async canCreate(
    { session, identity }: AccessContext,
    def: ResourceDefinition,
    parent: ObjectRef | null,
  ): Promise<boolean> {
    const child = inherited(def.name);
    if (this.#globallyGranted(identity.principals, [[child, `${child}:create`]])) return true;
    if (!parent) return false;
    return this.#granted(session, identity.principals, [...parent.ancestors, parent], CREATE_GRANTS[child]);
  }

  /**
   * Which children of kind `def` under `parent` the caller may read (or write): all of them
   * (permission on an ancestor or by settings), some (ACEs on the objects themselves; none
   * when the caller may only create), or none at all (403).
   */
  async list(
    context: AccessContext,
    def: ResourceDefinition,
    parent: ObjectRef | null,
    permission: 'read' | 'write',
  ): Promise<ListAccess> {
    const { session, identity } = context;
    const { principals } = identity;
    const child = inherited(def.name);
    const grants = GRANTS[child][permission];
    const ancestorGrants = grants.filter(([level]) => level !== child);
    const chain = parent ? [...parent.ancestors, parent] : [];
    const childLevelGlobal = grants.filter(([level]) => level === child);
    if (
      this.#globallyGranted(principals, childLevelGlobal) ||
      (await this.#granted(session, principals, chain, ancestorGrants))
    ) {
      return { kind: 'all' };
    }
    const ownPermissions = grants.filter(([level]) => level === child).map(([, p]) => p);
    const ids = await session.permissions.authorizedIds(
      parent ? parent.uri : '',
      def.plural,
      principals,
      ownPermissions,
    );
    if (ids.length > 0) return { kind: 'some', ids };
    if (await this.canCreate(context, def, parent)) return { kind: 'some', ids: [] };
    return { kind: 'none' };
  }

  /** What the `<resource>_<permission>_principals` settings grant these principals. */
  settingsGrants(principals: string[]): SettingsGrants {
    const grants: SettingsGrants = { objects: [], root: [] };
    const settings = this.#settings as unknown as Record<string, unknown>;
    for (const resourceName of Object.keys(PLURALS)) {
      for (const action of ['read', 'write', 'create']) {
        const granted = settings[`${resourceName}_${action}_principals`];
        if (!Array.isArray(granted) || !granted.some((principal) => principals.includes(principal))) continue;
        if (action !== 'create') {
          grants.objects.push({ resourceName, plural: PLURALS[resourceName]!, permission: action });
          continue;
        }
        const target = CREATE_TARGETS[resourceName]!;
        if (target === 'root') grants.root.push(`${resourceName}:create`);
        else
          grants.objects.push({ resourceName: target, plural: PLURALS[target]!, permission: `${resourceName}:create` });
      }
    }
    return grants;
  }

  /** The object's ACEs as shown to this caller: only to a principal literally in its `write` (§4.6). */
  visiblePermissions(principals: string[], acl: Permissions): Permissions {
    const writers = acl.write ?? [];
    return writers.some((principal) => principals.includes(principal)) ? acl : {};
  }
}
