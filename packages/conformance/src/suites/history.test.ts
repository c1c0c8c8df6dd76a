/**
 * protocol-reference §13.3: the history plugin — one entry per change of a bucket, collection,
 * group or record, served at `/buckets/<bid>/history` with the listing parameters of §7,
 * filtered by what the caller may read; `DELETE` of the history (1.13).
 * Runs only when the server offers the `history` capability.
 */
import { describe, expect, it } from 'vitest';
import type { BatchBody, KintoObject, ListBody, ObjectBody } from '../harness/bodies.js';
import { applicable, serverInfo } from '../harness/capabilities.js';
import { createBucket, createCollection, createGroup, listAll } from '../harness/fixtures.js';
import { del, get, head, patch, post, put, request } from '../harness/http.js';
import { UUID4, expectApiError, expectETag, expectValidationError } from '../harness/matchers.js';
import { alice, bob, createUser, userId } from '../harness/users.js';

const info = await serverInfo();
const applies = applicable(info.hasCapability('history'), 'history (§13.3)', 'capability history not offered');

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00$/;

/** A history entry (§13.3): the change, its author, and the object after it (`target`). */
interface HistoryEntry extends KintoObject {
  action: string;
  resource_name: string;
  uri: string;
  user_id: string;
  target: ObjectBody;
}

async function history(bucket: string, query = '', user = alice): Promise<HistoryEntry[]> {
  return (await listAll<HistoryEntry>(`/buckets/${bucket}/history${query}`, user)).items;
}

describe.runIf(applies)('§13.3 history', () => {
  it('§11.1 capability `history` has a description and a url', () => {
    expect(info.capabilities.history).toMatchObject({ description: expect.any(String), url: expect.any(String) });
  });

  it('records every change with the entry fields, newest first', async () => {
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket);
    const path = `/buckets/${bucket}/collections/${collection}/records/r1`;
    const created = await put(path, {
      auth: alice,
      body: { data: { title: 'a' }, permissions: { read: ['system.Everyone'] } },
    });
    await patch(path, { auth: alice, body: { data: { title: 'b' } } });
    const deleted = await del(path, { auth: alice });
    expect(deleted.status).toBe(200);

    const entries = await history(bucket);
    expect(entries.map((entry) => `${entry.resource_name}:${entry.action}`)).toEqual([
      'record:delete',
      'record:update',
      'record:create',
      'collection:create',
      'bucket:create',
    ]);
    const me = await userId(alice);
    const [remove, update, create, coll, buck] = entries;
    expect(create).toEqual({
      id: expect.stringMatching(UUID4),
      last_modified: expect.any(Number),
      action: 'create',
      resource_name: 'record',
      uri: path,
      user_id: me,
      collection_id: collection,
      record_id: 'r1',
      date: expect.stringMatching(ISO_UTC),
      target: { data: created.json.data, permissions: { read: ['system.Everyone'], write: [me] } },
    });
    expect(update!.target.data).toMatchObject({ id: 'r1', title: 'b' });
    // Deletions show the tombstone; the permissions are gone with the object.
    expect(remove!.target).toEqual({
      data: { id: 'r1', last_modified: deleted.json.data.last_modified, deleted: true },
      permissions: {},
    });
    expect(coll).toMatchObject({
      resource_name: 'collection',
      collection_id: collection,
      uri: `/buckets/${bucket}/collections/${collection}`,
    });
    expect(coll).not.toHaveProperty('bucket_id');
    // `bucket_id` only on bucket entries; `timestamp` never (DOC≠CODE).
    expect(buck).toMatchObject({ resource_name: 'bucket', bucket_id: bucket, uri: `/buckets/${bucket}` });
    for (const entry of entries) expect(entry).not.toHaveProperty('timestamp');
    // Entry timestamps follow the bucket's history sequence.
    const stamps = entries.map((entry) => entry.last_modified);
    expect([...stamps].sort((a, b) => b - a)).toEqual(stamps);
  });

  it('POST on a plural endpoint records the new object URI; groups get group_id', async () => {
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket);
    const posted = await post(`/buckets/${bucket}/collections/${collection}/records`, {
      auth: alice,
      body: { data: { n: 1 } },
    });
    await createGroup(alice, bucket, { id: 'editors', data: { members: [] } });
    const [group, record] = await history(bucket, '?_limit=2');
    expect(record).toMatchObject({
      uri: `/buckets/${bucket}/collections/${collection}/records/${posted.json.data.id}`,
      record_id: posted.json.data.id,
    });
    expect(group).toMatchObject({
      resource_name: 'group',
      group_id: 'editors',
      uri: `/buckets/${bucket}/groups/editors`,
    });
  });

  it('§8 a batch records one entry per object, each with its own URI', async () => {
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket);
    const records = `/buckets/${bucket}/collections/${collection}/records`;
    const res = await post('/batch', {
      auth: alice,
      body: {
        requests: ['x1', 'x2', 'x3'].map((id) => ({ method: 'PUT', path: `${records}/${id}`, body: { data: { id } } })),
      },
    });
    expect(res.status).toBe(200);
    const entries = await history(bucket, '?resource_name=record');
    expect(entries.map((entry) => entry.uri).sort()).toEqual(['x1', 'x2', 'x3'].map((id) => `${records}/${id}`));
    expect(entries.map((entry) => entry.record_id).sort()).toEqual(['x1', 'x2', 'x3']);
  });

  it('§7 filters, sorting, _limit with Next-Page, _since; numeric ids compare as strings', async () => {
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket);
    const base = `/buckets/${bucket}/collections/${collection}/records`;
    await put(`${base}/1`, { auth: alice });
    const since = (await get<ListBody>(`/buckets/${bucket}/history`, { auth: alice })).json.data[0]!.last_modified;
    await put(`${base}/2`, { auth: alice });
    await del(`${base}/1`, { auth: alice });

    expect((await history(bucket, '?resource_name=collection')).map((e) => e.collection_id)).toEqual([collection]);
    expect((await history(bucket, '?record_id=1')).map((e) => e.action)).toEqual(['delete', 'create']);
    expect((await history(bucket, `?_since=${since}`)).map((e) => `${e.record_id}:${e.action}`)).toEqual([
      '1:delete',
      '2:create',
    ]);
    expect((await history(bucket, '?_sort=last_modified')).map((e) => e.resource_name)).toEqual([
      'bucket',
      'collection',
      'record',
      'record',
      'record',
    ]);
    expect((await history(bucket, '?action=delete&_fields=uri')).map((e) => Object.keys(e).sort())).toEqual([
      ['id', 'last_modified', 'uri'],
    ]);

    const page = await get<ListBody>(`/buckets/${bucket}/history?_limit=2`, { auth: alice });
    expect(page.status).toBe(200);
    expect(page.json.data).toHaveLength(2);
    expect(page.headers.get('next-page')).toContain('_token=');
    const { items } = await listAll(`/buckets/${bucket}/history?_limit=2`, alice);
    expect(items).toHaveLength(5);
  });

  it('§7.1 filtering or sorting on a field entries do not have is a 400', async () => {
    const bucket = await createBucket(alice);
    expectValidationError(await get(`/buckets/${bucket}/history?title=x`, { auth: alice }), {
      location: 'querystring',
    });
    expectValidationError(await get(`/buckets/${bucket}/history?_sort=title`, { auth: alice }), {
      location: 'querystring',
    });
  });

  it('§5.3 ETag is the newest entry timestamp; If-None-Match answers 304; HEAD counts', async () => {
    const bucket = await createBucket(alice);
    await createCollection(alice, bucket);
    const res = await get<ListBody>(`/buckets/${bucket}/history`, { auth: alice });
    const etag = expectETag(res);
    expect(etag).toBe(res.json.data[0]!.last_modified);
    const again = await get(`/buckets/${bucket}/history`, { auth: alice, headers: { 'If-None-Match': `"${etag}"` } });
    expect(again.status).toBe(304);
    const counted = await head(`/buckets/${bucket}/history`, { auth: alice });
    expect(counted.headers.get('total-records')).toBe('2');
  });

  it('§9.2 entries are visible to whoever could read the object; others get 401/403', async () => {
    const bucket = await createBucket(alice);
    const shared = await createCollection(alice, bucket, { permissions: { read: [await userId(bob)] } });
    const secret = await createCollection(alice, bucket);
    await put(`/buckets/${bucket}/collections/${shared}/records/s1`, { auth: alice });
    await put(`/buckets/${bucket}/collections/${secret}/records/p1`, { auth: alice });
    await put(`/buckets/${bucket}/collections/${secret}/records/p2`, {
      auth: alice,
      body: { permissions: { read: ['system.Everyone'] } },
    });

    const seenByBob = await history(bucket, '', bob);
    expect(seenByBob.map((entry) => entry.uri).sort()).toEqual(
      [
        `/buckets/${bucket}/collections/${secret}/records/p2`,
        `/buckets/${bucket}/collections/${shared}`,
        `/buckets/${bucket}/collections/${shared}/records/s1`,
      ].sort(),
    );
    const anonymous = await get<ListBody>(`/buckets/${bucket}/history`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.json.data.map((entry) => entry.uri)).toEqual([
      `/buckets/${bucket}/collections/${secret}/records/p2`,
    ]);
    // Nothing readable at all: refused like any plural endpoint.
    const other = await createBucket(alice);
    expectApiError(await get(`/buckets/${other}/history`, { auth: bob }), 403, 121);
    expectApiError(await get(`/buckets/${other}/history`), 401, 104);
    // The bucket owner sees everything.
    expect(await history(bucket)).toHaveLength(6);
  });

  it('1.13 DELETE removes the entries (bucket writers only); the changes stay', async () => {
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket, { permissions: { read: [await userId(bob)] } });
    await put(`/buckets/${bucket}/collections/${collection}/records/r`, { auth: alice });
    expectApiError(await del(`/buckets/${bucket}/history`, { auth: bob }), 403, 121);

    const filtered = await del<ListBody>(`/buckets/${bucket}/history?resource_name=record`, { auth: alice });
    expect(filtered.status).toBe(200);
    expect(filtered.json.data).toHaveLength(1);
    expect(filtered.json.data[0]).toMatchObject({ deleted: true });
    expect((await history(bucket)).map((e) => e.resource_name)).toEqual(['collection', 'bucket']);

    expect((await del(`/buckets/${bucket}/history`, { auth: alice })).status).toBe(200);
    expect(await history(bucket)).toEqual([]);
    expect((await get(`/buckets/${bucket}/collections/${collection}/records/r`, { auth: alice })).status).toBe(200);
  });

  it('§2 deleting a bucket deletes its history', async () => {
    const bucket = await createBucket(alice);
    await createCollection(alice, bucket);
    expect((await del(`/buckets/${bucket}`, { auth: alice })).status).toBe(200);
    await createBucket(alice, { id: bucket });
    expect((await history(bucket)).map((e) => `${e.resource_name}:${e.action}`)).toEqual(['bucket:create']);
  });

  it('§8 a batch that writes into a bucket, then deletes it, leaves no entry behind', async () => {
    const bucket = await createBucket(alice);
    const res = await post<BatchBody>('/batch', {
      auth: alice,
      body: {
        requests: [
          { method: 'PUT', path: `/buckets/${bucket}/collections/c` },
          { method: 'PUT', path: `/buckets/${bucket}/collections/c/records/r`, body: { data: { n: 1 } } },
          { method: 'DELETE', path: `/buckets/${bucket}` },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.json.responses.map((response) => response.status)).toEqual([201, 201, 200]);
    await createBucket(alice, { id: bucket });
    expect((await history(bucket)).map((e) => `${e.resource_name}:${e.action}`)).toEqual(['bucket:create']);
  });

  it('§4.5 PATCH with Response-Behavior diff/light answers normally (Kinto 500s here with history on)', async () => {
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket);
    const path = `/buckets/${bucket}/collections/${collection}/records/r`;
    await put(path, { auth: alice, body: { data: { title: 'a', n: 1 } } });
    const diff = await patch(path, {
      auth: alice,
      headers: { 'Response-Behavior': 'diff' },
      body: { data: { title: 'x' } },
    });
    expect(diff.status).toBe(200);
    expect(diff.json.data).toEqual({});
    const light = await patch(path, {
      auth: alice,
      headers: { 'Response-Behavior': 'light' },
      body: { data: { title: 'y' } },
    });
    expect(light.status).toBe(200);
    expect(light.json.data).toEqual({ title: 'y' });
    const [last] = await history(bucket, '?_limit=1');
    expect(last!.target.data).toMatchObject({ title: 'y', n: 1 });
  });

  it('§2 only the plural endpoint exists: entries have no URL of their own, other methods 405', async () => {
    const bucket = await createBucket(alice);
    const [entry] = await history(bucket);
    expect((await get(`/buckets/${bucket}/history/${entry!.id}`, { auth: alice })).status).toBe(404);
    expectApiError(await request('POST', `/buckets/${bucket}/history`, { auth: alice, body: { data: {} } }), 405, 115);
  });

  it('§9.2 a writer of one record only sees that record', async () => {
    const carol = createUser('carol');
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket);
    await put(`/buckets/${bucket}/collections/${collection}/records/mine`, {
      auth: alice,
      body: { permissions: { write: [await userId(carol)] } },
    });
    await put(`/buckets/${bucket}/collections/${collection}/records/other`, { auth: alice });
    expect((await history(bucket, '', carol)).map((e) => e.record_id)).toEqual(['mine']);
  });
});

const trimCount = info.capabilities.history?.auto_trim_max_count;
const trimUsers = info.capabilities.history?.auto_trim_user_ids;
const trims =
  applies &&
  applicable(
    typeof trimCount === 'number' && trimCount <= 50,
    'history auto-trim (§13.3)',
    'capability history has no auto_trim_max_count (or above 50: too many writes)',
  ) &&
  applicable(
    trimUsers === undefined || (Array.isArray(trimUsers) && trimUsers.includes(await userId(alice))),
    'history auto-trim (§13.3)',
    'auto_trim_user_ids does not list the identity this suite writes with',
  );

describe.runIf(trims)('§13.3 history auto-trim (capability `auto_trim_max_count`)', () => {
  it('keeps only the newest `auto_trim_max_count` entries of a kind of object', async () => {
    const keep = trimCount as number;
    const bucket = await createBucket(alice);
    const collection = await createCollection(alice, bucket);
    const created: string[] = [];
    for (let i = 0; i < keep + 2; i++) {
      const res = await post(`/buckets/${bucket}/collections/${collection}/records`, {
        auth: alice,
        body: { data: { i } },
      });
      created.push(res.json.data.id);
    }
    const records = (await history(bucket, '?resource_name=record&_sort=last_modified')).map(
      (entry) => entry.record_id,
    );
    expect(records).toEqual(created.slice(-keep));
  });
});
