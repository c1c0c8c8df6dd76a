/**
 * The permissions facet: ACLs by object URI, group memberships, and the queries over them.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { PermissionEntry, Sort, Storage } from '../types.js';
import { deleteBelow, randomScope, sortPrincipals, type Suite } from './context.js';

export function describePermissions(suite: Suite): void {
  const { test, section } = suite;
  let storage: Storage;
  suite.beforeEach((current) => ({ storage } = current));

  section('permissions', () => {
    const root = () => `/buckets/${randomUUID()}`;

    test('set replaces the entries of an object, and get reads several objects', async () => {
      const uri = root();
      await storage.transaction((session) =>
        session.permissions.set(uri, { read: ['a', 'b'], write: ['c'], empty: [] }),
      );
      await storage.transaction((session) => session.permissions.set(`${uri}/groups/g`, { write: ['d'] }));
      const permissions = await storage.read((session) =>
        session.permissions.get([uri, `${uri}/groups/g`, `${uri}/nothing`]),
      );
      expect(sortPrincipals(permissions.get(uri)!)).toEqual({ read: ['a', 'b'], write: ['c'] });
      expect(permissions.get(`${uri}/groups/g`)).toEqual({ write: ['d'] });
      expect(permissions.get(`${uri}/nothing`)).toEqual({});
      await storage.transaction((session) => session.permissions.set(uri, { write: ['z', 'z'] }));
      expect((await storage.read((session) => session.permissions.get([uri]))).get(uri)).toEqual({ write: ['z'] });
      await storage.transaction((session) => session.permissions.set(uri, {}));
      expect((await storage.read((session) => session.permissions.get([uri]))).get(uri)).toEqual({});
    });

    test('deleteTree removes an object and its descendants only', async () => {
      const uri = root();
      for (const target of [uri, `${uri}/collections/c`, `${uri}/collections/c/records/r`, `${uri}x`]) {
        await storage.transaction((session) => session.permissions.set(target, { read: ['p'] }));
      }
      await storage.transaction((session) => session.permissions.deleteTree(`${uri}/collections/c`));
      let permissions = await storage.read((session) =>
        session.permissions.get([uri, `${uri}/collections/c`, `${uri}/collections/c/records/r`]),
      );
      expect([...permissions.values()]).toEqual([{ read: ['p'] }, {}, {}]);
      await storage.transaction((session) => session.permissions.deleteTree(uri));
      permissions = await storage.read((session) => session.permissions.get([uri, `${uri}x`]));
      expect([...permissions.values()]).toEqual([{}, { read: ['p'] }]);
    });

    test('in a transaction, get gives what the transaction read and wrote, as the database would', async () => {
      const uri = root();
      const collection = `${uri}/collections/c`;
      const record = `${collection}/records/r`;
      await storage.transaction((session) => session.permissions.set(uri, { write: ['owner'] }));
      await storage.transaction((session) => session.permissions.set(collection, { read: ['reader'] }));
      await storage.transaction((session) => session.permissions.set(record, { write: ['author'] }));
      const seen = await storage.transaction(async (session) => {
        const first = await session.permissions.get([uri, collection]);
        first.get(uri)!.write!.push('mutated by the caller');
        await session.permissions.set(`${uri}/groups/g`, { write: ['z', 'a', 'a'], read: [] });
        await session.permissions.deleteTree(collection);
        const afterDelete = await session.permissions.get([uri, collection, record, `${uri}/groups/g`]);
        await session.permissions.set(collection, { read: ['new-reader'] });
        await session.outbox.deleteTree(uri);
        await session.objects.deleteTree(uri);
        await session.permissions.deleteTree(uri, { itself: false });
        return { afterDelete, afterTree: await session.permissions.get([uri, collection, `${uri}/groups/g`]) };
      });
      expect(Object.fromEntries(seen.afterDelete)).toEqual({
        [uri]: { write: ['owner'] },
        [collection]: {},
        [record]: {},
        [`${uri}/groups/g`]: { write: ['a', 'z'] },
      });
      // With `itself: false`, what is below the object goes, not its own ACL.
      expect(Object.fromEntries(seen.afterTree)).toEqual({
        [uri]: { write: ['owner'] },
        [collection]: {},
        [`${uri}/groups/g`]: {},
      });
      const committed = await storage.read((session) =>
        session.permissions.get([uri, collection, record, `${uri}/groups/g`]),
      );
      expect(Object.fromEntries(committed)).toEqual({
        [uri]: { write: ['owner'] },
        [collection]: {},
        [record]: {},
        [`${uri}/groups/g`]: {},
      });
    });

    test('authorizedIds finds direct children granted to one of the principals', async () => {
      const uri = root();
      await storage.transaction((session) =>
        session.permissions.set(`${uri}/collections/a`, { read: ['alice'], write: ['bob'] }),
      );
      await storage.transaction((session) =>
        session.permissions.set(`${uri}/collections/b`, { write: ['alice', 'carol'] }),
      );
      await storage.transaction((session) => session.permissions.set(`${uri}/collections/c`, { read: ['carol'] }));
      await storage.transaction((session) =>
        session.permissions.set(`${uri}/collections/a/records/r`, { read: ['alice'] }),
      );
      await storage.transaction((session) => session.permissions.set(`${uri}/groups/g`, { read: ['alice'] }));
      await storage.transaction((session) => session.permissions.set(`${uri}x/collections/z`, { read: ['alice'] }));
      const list = (principals: string[], permissions: string[]) =>
        storage.read((session) => session.permissions.authorizedIds(uri, 'collections', principals, permissions));
      expect((await list(['alice'], ['read', 'write'])).sort()).toEqual(['a', 'b']);
      expect((await list(['alice', 'carol'], ['read'])).sort()).toEqual(['a', 'c']);
      expect(await list(['bob'], ['read'])).toEqual([]);
      expect(await list([], ['read'])).toEqual([]);
      expect(
        await storage.read((session) =>
          session.permissions.authorizedIds(`${uri}/collections/a`, 'records', ['alice'], ['read']),
        ),
      ).toEqual(['r']);
    });

    test('entries: one entry per object, ids from the URI, permissions expanded', async () => {
      const bucket = `b-${randomUUID()}`;
      const uri = `/buckets/${bucket}`;
      const user = `user-${randomUUID()}`;
      const group = `${uri}/groups/g`;
      await storage.transaction((session) => session.permissions.set(uri, { read: [user] }));
      await storage.transaction((session) =>
        session.permissions.set(`${uri}/collections/c`, { write: [group], read: [user] }),
      );
      await storage.transaction((session) =>
        session.permissions.set(`${uri}/collections/c/records/r`, { read: ['someone-else'] }),
      );
      await storage.transaction((session) => session.permissions.set(`${uri}/groups/g`, { write: [user] }));
      await storage.transaction((session) => session.permissions.set(`${uri}/history/h`, { read: [user] }));
      const query = {
        principals: [user, group],
        globalGrants: [],
        implied: { collection: { write: ['read', 'record:create'] } },
        extraEntries: [{ uri: '/', resource_name: 'root', permissions: ['bucket:create'] }],
        sorting: [{ field: 'uri', direction: 1 as const }],
      };
      const entries = (await storage.read((session) => session.permissions.entries(query))).filter(
        (entry) => entry.uri === '/' || entry.bucket_id === bucket,
      );
      expect(entries).toEqual([
        { uri: '/', resource_name: 'root', permissions: ['bucket:create'] },
        { uri, resource_name: 'bucket', id: bucket, bucket_id: bucket, permissions: ['read'] },
        {
          uri: `${uri}/collections/c`,
          resource_name: 'collection',
          id: 'c',
          bucket_id: bucket,
          collection_id: 'c',
          permissions: ['read', 'record:create', 'write'],
        },
        {
          uri: `${uri}/groups/g`,
          resource_name: 'group',
          id: 'g',
          bucket_id: bucket,
          group_id: 'g',
          permissions: ['write'],
        },
      ]);
      // Filters, order and keyset continuation work on the entry fields.
      const filtered = await storage.read((session) =>
        session.permissions.entries({
          ...query,
          filters: [
            { field: 'bucket_id', operator: 'eq', value: bucket },
            { field: 'permissions', operator: 'contains', value: ['write'] },
          ],
          sorting: [
            { field: 'id', direction: -1 },
            { field: 'uri', direction: 1 },
          ],
          limit: 1,
        }),
      );
      expect(filtered.map((entry) => entry.uri)).toEqual([`${uri}/groups/g`]);
      const next = await storage.read((session) =>
        session.permissions.entries({
          ...query,
          filters: [{ field: 'bucket_id', operator: 'eq', value: bucket }],
          sorting: [
            { field: 'id', direction: -1 },
            { field: 'uri', direction: 1 },
          ],
          after: { id: 'g', uri: `${uri}/groups/g` },
        }),
      );
      expect(next.map((entry) => entry.id)).toEqual(['c', bucket].sort().reverse());
    });

    test('entries: pages walked by URI, either way, are the listing cut in order', async () => {
      const uri = `/buckets/b-${randomUUID()}`;
      const [user, group, other] = [`u-${randomUUID()}`, `${uri}/groups/g`, `o-${randomUUID()}`];
      // URIs held by one principal, by both, with several permissions, beside URIs that are
      // not listed (history) and others' ACEs, in an order where each principal's run ends early.
      const acls: Array<[string, Record<string, string[]>]> = [
        [uri, { read: [user], write: [other] }],
        [`${uri}/groups/g`, { write: [user, group] }],
        [`${uri}/history/h`, { read: [user, group] }],
        // Shapes of no listed kind beside listed ones (the page reads kinds off the URI itself).
        [`${uri}/collections/c1/records`, { read: [user] }],
        [`${uri}/groups`, { read: [user] }],
        [`/accounts/${user}`, { write: [user] }],
        ...Array.from({ length: 9 }, (_, i): [string, Record<string, string[]>] => [
          `${uri}/collections/c${i}`,
          i % 3 === 0 ? { read: [user], write: [group] } : { [i % 2 ? 'read' : 'write']: [i % 3 === 1 ? user : group] },
        ]),
        ...Array.from({ length: 5 }, (_, i): [string, Record<string, string[]>] => [
          `${uri}/collections/c1/records/r${i}`,
          { read: [other], ...(i === 2 ? {} : { write: [i % 2 ? user : group] }) },
        ]),
      ];
      await storage.transaction(async (session) => {
        for (const [object, acl] of acls) await session.permissions.set(object, acl);
      });
      const query = {
        principals: [user, group, user],
        globalGrants: [],
        implied: { collection: { write: ['read', 'record:create'] } },
        extraEntries: [{ uri: '/', resource_name: 'root', permissions: ['bucket:create'] }],
      };
      const list = (sorting: Sort[], limit?: number, after?: PermissionEntry) =>
        storage.read((session) =>
          session.permissions.entries({
            ...query,
            sorting,
            ...(limit === undefined ? {} : { limit }),
            ...(after ? { after: { uri: after.uri } } : {}),
          }),
        );
      for (const direction of [1, -1] as const) {
        const sorting: Sort[] = [{ field: 'uri', direction }];
        const whole = await list(sorting);
        expect(whole.length).toBe(1 + 2 + 9 + 4 + 1);
        for (const size of [1, 2, 3, 7]) {
          const walked: PermissionEntry[] = [];
          for (let page = await list(sorting, size); ; page = await list(sorting, size, walked.at(-1))) {
            walked.push(...page);
            if (page.length < size) break;
          }
          expect(walked).toEqual(whole);
        }
      }
    });

    test('entries: global grants cover every live object of a kind', async () => {
      const sc = randomScope();
      await storage.transaction((session) => session.objects.create(sc, 'r1', {}));
      await storage.transaction((session) => session.objects.create(sc, 'r2', {}));
      await storage.transaction((session) => session.objects.delete(sc, 'r2'));
      const entries = await storage.read((session) =>
        session.permissions.entries({
          principals: [],
          globalGrants: [{ resourceName: 'record', plural: 'records', permission: 'read' }],
          implied: {},
          extraEntries: [],
          filters: [{ field: 'uri', operator: 'like', value: `${sc.parentId}/*` }],
          sorting: [{ field: 'uri', direction: 1 }],
        }),
      );
      expect(entries.map((entry) => [entry.id, entry.permissions])).toEqual([['r1', ['read']]]);
    });

    test('group members: setGroupMembers replaces, groupsOf finds the groups of any principal', async () => {
      const uri = root();
      const alice = `alice-${randomUUID()}`;
      await storage.transaction((session) => session.permissions.setGroupMembers(`${uri}/groups/g1`, [alice, 'bob']));
      await storage.transaction((session) =>
        session.permissions.setGroupMembers(`${uri}/groups/g2`, ['system.Authenticated']),
      );
      expect(await storage.read((session) => session.permissions.groupsOf([alice]))).toEqual([`${uri}/groups/g1`]);
      expect(
        (await storage.read((session) => session.permissions.groupsOf([alice, 'system.Authenticated']))).filter((g) =>
          g.startsWith(uri),
        ),
      ).toEqual([`${uri}/groups/g1`, `${uri}/groups/g2`]);
      await storage.transaction((session) => session.permissions.setGroupMembers(`${uri}/groups/g1`, ['bob']));
      expect(await storage.read((session) => session.permissions.groupsOf([alice]))).toEqual([]);
      expect(await storage.read((session) => session.permissions.groupsOf([]))).toEqual([]);
    });

    test('memberships go with deleteTree, of the group or of a tree above it', async () => {
      const uri = root();
      const member = `m-${randomUUID()}`;
      await storage.transaction((session) => session.permissions.setGroupMembers(`${uri}/groups/g1`, [member]));
      await storage.transaction((session) => session.permissions.setGroupMembers(`${uri}/groups/g2`, [member]));
      await storage.transaction((session) => session.permissions.deleteTree(`${uri}/groups/g1`));
      expect(await storage.read((session) => session.permissions.groupsOf([member]))).toEqual([`${uri}/groups/g2`]);
      await deleteBelow(storage, uri);
      expect(await storage.read((session) => session.permissions.groupsOf([member]))).toEqual([]);
    });
  });
}
