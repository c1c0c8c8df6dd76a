/**
 * Interface spec endpoint `GET /permissions` (1.8) and protocol-reference §9.3: one entry per
 * object on which the caller holds a permission, the permissions expanded on that object,
 * listing parameters on the entry fields.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { applicable, serverInfo } from '../harness/capabilities.js';
import { createBucket, createCollection, createGroup, createRecord, listAll } from '../harness/fixtures.js';
import { request } from '../harness/http.js';
import { expectValidationError } from '../harness/matchers.js';
import { alice, bob, createUser, userId } from '../harness/users.js';

const info = await serverInfo();
const applies = applicable(
  info.hasCapability('permissions_endpoint'),
  'GET /permissions (§9.3)',
  'capability permissions_endpoint not offered',
);

interface Entry {
  uri: string;
  resource_name: string;
  id?: string;
  bucket_id?: string;
  collection_id?: string;
  group_id?: string;
  record_id?: string;
  permissions: string[];
}

describe.runIf(applies)('§9.3 GET /permissions', () => {
  const carol = createUser('carol');
  let bucket = '';
  let collection = '';
  let recordId = '';
  let group = '';

  beforeAll(async () => {
    bucket = await createBucket(alice);
    group = await createGroup(alice, bucket, { data: { members: [await userId(carol)] } });
    collection = await createCollection(alice, bucket, {
      permissions: { read: [await userId(bob)], 'record:create': [`/buckets/${bucket}/groups/${group}`] },
    });
    recordId = (await createRecord(alice, bucket, collection, {}, { write: [await userId(bob)] })).id;
  });

  async function entriesOf(user: typeof alice, query = ''): Promise<Entry[]> {
    const { items } = await listAll<Entry>(`/permissions${query}`, user);
    return items;
  }

  it("lists the owner's objects with their ids and expanded permissions", async () => {
    const entries = await entriesOf(alice, `?bucket_id=${bucket}`);
    const byUri = new Map(entries.map((e) => [e.uri, e]));
    const b = byUri.get(`/buckets/${bucket}`);
    expect(b).toMatchObject({ resource_name: 'bucket', id: bucket, bucket_id: bucket });
    // write implies the others on the same object (§9.3).
    expect(b?.permissions).toEqual(expect.arrayContaining(['write', 'read', 'collection:create', 'group:create']));
    const c = byUri.get(`/buckets/${bucket}/collections/${collection}`);
    expect(c).toMatchObject({
      resource_name: 'collection',
      id: collection,
      bucket_id: bucket,
      collection_id: collection,
    });
    expect(c?.permissions).toEqual(expect.arrayContaining(['write', 'read', 'record:create']));
    const g = byUri.get(`/buckets/${bucket}/groups/${group}`);
    expect(g).toMatchObject({ resource_name: 'group', id: group, group_id: group });
    const r = byUri.get(`/buckets/${bucket}/collections/${collection}/records/${recordId}`);
    expect(r).toMatchObject({ resource_name: 'record', id: recordId, record_id: recordId, collection_id: collection });
    expect(r?.permissions).toEqual(expect.arrayContaining(['write', 'read']));
  });

  it('shows another user exactly what was shared with them, and not the parents', async () => {
    const entries = (await entriesOf(bob)).filter((e) => e.bucket_id === bucket);
    const simplified = entries.map((e) => [e.uri, e.permissions.filter((p) => p === 'read' || p === 'write').sort()]);
    expect(simplified.sort()).toEqual(
      [
        [`/buckets/${bucket}/collections/${collection}`, ['read']],
        [`/buckets/${bucket}/collections/${collection}/records/${recordId}`, ['read', 'write']],
      ].sort(),
    );
  });

  it('counts group principals: a member sees what the group was granted', async () => {
    const entries = (await entriesOf(carol)).filter((e) => e.bucket_id === bucket);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      uri: `/buckets/${bucket}/collections/${collection}`,
      resource_name: 'collection',
    });
    expect(entries[0]?.permissions).toContain('record:create');
    expect(entries[0]?.permissions).not.toContain('write');
  });

  it('children of a granted bucket are not expanded into entries of their own', async () => {
    const other = await createBucket(alice, { permissions: { read: [await userId(carol)] } });
    await createCollection(alice, other);
    const entries = (await entriesOf(carol)).filter((e) => e.bucket_id === other);
    expect(entries.map((e) => e.uri)).toEqual([`/buckets/${other}`]);
  });

  it('filters on entry fields: resource_name, bucket_id', async () => {
    const collections = await entriesOf(alice, `?bucket_id=${bucket}&resource_name=collection`);
    expect(collections.map((e) => e.id)).toEqual([collection]);
  });

  it('sorts by id (as kinto-http.js asks) and pages with Next-Page', async () => {
    const sorted = await entriesOf(alice, `?bucket_id=${bucket}&_sort=id`);
    const ids = sorted.map((e) => e.id as string);
    expect(ids).toEqual([...ids].sort());
    const { items, pages } = await listAll<Entry>(`/permissions?bucket_id=${bucket}&_limit=1`, alice);
    expect(pages.length).toBeGreaterThan(1);
    expect(items.map((e) => e.uri).sort()).toEqual(sorted.map((e) => e.uri).sort());
  });

  it('refuses filters on fields entries do not have (400)', async () => {
    expectValidationError(await request('GET', '/permissions?title=x', { auth: alice }));
  });

  it('lists nothing of these objects to a stranger', async () => {
    const entries = await entriesOf(createUser());
    expect(entries.filter((e) => e.bucket_id === bucket)).toEqual([]);
  });
});
