/**
 * §4.4 PATCH content types (data and permissions semantics) and §4.5 Response-Behavior.
 */
import { describe, expect, it } from 'vitest';
import type { KintoObject } from '../harness/bodies.js';
import { createCollectionFixture, type CollectionFixture } from '../harness/fixtures.js';
import { get, patch, put } from '../harness/http.js';
import { expectApiError, expectETag, expectValidationError } from '../harness/matchers.js';
import { alice, bob, createUser, userId } from '../harness/users.js';

const JSON_PATCH = 'application/json-patch+json';
const MERGE_PATCH = 'application/merge-patch+json';

async function seed(
  data: Record<string, unknown>,
  permissions?: Record<string, string[]>,
): Promise<{ fx: CollectionFixture; path: string; rec: KintoObject }> {
  const fx = await createCollectionFixture(alice);
  const res = await put(fx.record('r1'), { auth: alice, body: permissions ? { data, permissions } : { data } });
  expect(res.status).toBe(201);
  return { fx, path: fx.record('r1'), rec: res.json.data };
}

describe('§4.4 PATCH application/json', () => {
  it('merges top-level keys and keeps the others (wire example)', async () => {
    const { path } = await seed({ title: 'Second', tags: ['a'], extra: 42 });
    const res = await patch(path, { auth: alice, body: { data: { title: 'Second (plain patch)' } } });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({
      id: 'r1',
      title: 'Second (plain patch)',
      tags: ['a'],
      extra: 42,
      last_modified: expect.any(Number),
    });
    expect(expectETag(res)).toBe(res.json.data.last_modified);
  });

  it('replaces nested objects wholesale (shallow merge)', async () => {
    const { path } = await seed({ person: { name: 'Ann', city: 'Paris' } });
    const res = await patch(path, { auth: alice, body: { data: { person: { name: 'Bob' } } } });
    expect(res.json.data.person).toEqual({ name: 'Bob' });
  });

  it('stores null as a value (keys cannot be removed)', async () => {
    const { path } = await seed({ a: 1, b: 2 });
    const res = await patch(path, { auth: alice, body: { data: { a: null } } });
    expect(res.status).toBe(200);
    expect(res.json.data).toHaveProperty('a', null);
    expect((await get(path, { auth: alice })).json.data).toHaveProperty('a', null);
  });

  it('always bumps last_modified, even when nothing changed', async () => {
    const { path, rec } = await seed({ a: 1 });
    const res = await patch(path, { auth: alice, body: { data: { a: 1 } } });
    expect(res.status).toBe(200);
    expect(res.json.data.last_modified).toBeGreaterThan(rec.last_modified);
  });

  it('replaces only the permission lists given; absent ones are untouched; the caller stays in write', async () => {
    const bobId = await userId(bob);
    const carolId = await userId(createUser('carol'));
    const { path } = await seed({ a: 1 }, { read: [bobId] });
    const res = await patch(path, { auth: alice, body: { permissions: { write: [carolId] } } });
    expect(res.status).toBe(200);
    expect(res.json.data.a).toBe(1);
    expect(res.json.permissions.read).toEqual([bobId]);
    expect([...res.json.permissions.write!].sort()).toEqual([carolId, await userId(alice)].sort());
    const res2 = await patch(path, { auth: alice, body: { permissions: { read: [carolId] } } });
    expect(res2.json.permissions.read).toEqual([carolId]);
  });

  it('answers 400 "Provide at least one of data or permissions" to an empty patch', async () => {
    const { path } = await seed({ a: 1 });
    for (const opts of [{ body: {} }, { rawBody: '', contentType: 'application/json' }]) {
      const res = await patch(path, { auth: alice, ...opts });
      expectValidationError(
        res,
        { location: 'body', description: 'Provide at least one of data or permissions' },
        400,
        'Provide at least one of data or permissions',
      );
    }
  });

  it('answers 400 when data.id differs from the path id', async () => {
    const { path } = await seed({ a: 1 });
    const res = await patch(path, { auth: alice, body: { data: { id: 'other' } } });
    expectValidationError(res, { location: 'body' });
  });

  it('requires write: a reader gets 403', async () => {
    const { path } = await seed({ a: 1 }, { read: [await userId(bob)] });
    expectApiError(await patch(path, { auth: bob, body: { data: { a: 2 } } }), 403, 121);
  });
});

describe('§4.4 PATCH application/merge-patch+json (RFC 7396)', () => {
  it('removes keys set to null and adds the others (wire example)', async () => {
    const { path } = await seed({ title: 'Second', n: 2 });
    const res = await patch(path, {
      auth: alice,
      body: { data: { tags: ['a', 'b'], n: null } },
      contentType: MERGE_PATCH,
    });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ id: 'r1', title: 'Second', tags: ['a', 'b'], last_modified: expect.any(Number) });
  });

  it('merges nested objects recursively', async () => {
    const { path } = await seed({ person: { name: 'Ann', city: 'Paris', zip: '75' } });
    const res = await patch(path, {
      auth: alice,
      body: { data: { person: { city: 'Berlin', zip: null } } },
      contentType: MERGE_PATCH,
    });
    expect(res.json.data.person).toEqual({ name: 'Ann', city: 'Berlin' });
  });

  it('clears a permission given as null and keeps the others', async () => {
    const bobId = await userId(bob);
    const { path } = await seed({ a: 1 }, { read: [bobId] });
    const res = await patch(path, { auth: alice, body: { permissions: { read: null } }, contentType: MERGE_PATCH });
    expect(res.status).toBe(200);
    expect(res.json.permissions.read ?? []).toEqual([]);
    expect(res.json.permissions.write).toContain(await userId(alice));
  });

  it('merges new principals into the current permissions', async () => {
    const bobId = await userId(bob);
    const { path } = await seed({ a: 1 }, { read: ['basicauth:someone'] });
    const res = await patch(path, { auth: alice, body: { permissions: { write: [bobId] } }, contentType: MERGE_PATCH });
    expect(res.json.permissions.read).toEqual(['basicauth:someone']);
    expect(res.json.permissions.write).toEqual(expect.arrayContaining([bobId, await userId(alice)]));
  });
});

describe('§4.4 PATCH application/json-patch+json (RFC 6902)', () => {
  it('applies add/replace on /data and add on /permissions/<perm>/<principal> (wire example)', async () => {
    const { path } = await seed({ title: 'Second', tags: ['a', 'b'] });
    const res = await patch(path, {
      auth: alice,
      contentType: JSON_PATCH,
      body: [
        { op: 'add', path: '/data/extra', value: 42 },
        { op: 'replace', path: '/data/title', value: 'Second (json-patch)' },
        { op: 'add', path: '/permissions/read/bob', value: 'basicauth:fake' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({
      id: 'r1',
      title: 'Second (json-patch)',
      tags: ['a', 'b'],
      extra: 42,
      last_modified: expect.any(Number),
    });
    // The principal comes from the path; the value is ignored.
    expect(res.json.permissions.read).toEqual(['bob']);
    expect(res.json.permissions.write).toEqual([await userId(alice)]);
  });

  it('supports remove, move, copy and test', async () => {
    const { path } = await seed({ a: 1, b: { c: 2 }, list: [1, 2, 3] });
    const res = await patch(path, {
      auth: alice,
      contentType: JSON_PATCH,
      body: [
        { op: 'test', path: '/data/a', value: 1 },
        { op: 'remove', path: '/data/list/0' },
        { op: 'move', from: '/data/a', path: '/data/moved' },
        { op: 'copy', from: '/data/b', path: '/data/copied' },
        { op: 'add', path: '/data/b/d', value: 3 },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({
      id: 'r1',
      moved: 1,
      b: { c: 2, d: 3 },
      copied: { c: 2 },
      list: [2, 3],
      last_modified: expect.any(Number),
    });
  });

  it('removes a principal with remove on /permissions/<perm>/<principal>', async () => {
    const bobId = await userId(bob);
    const { path } = await seed({ a: 1 }, { read: [bobId, 'basicauth:other'] });
    const res = await patch(path, {
      auth: alice,
      contentType: JSON_PATCH,
      body: [{ op: 'remove', path: `/permissions/read/${bobId}` }],
    });
    expect(res.status).toBe(200);
    expect(res.json.permissions.read).toEqual(['basicauth:other']);
  });

  it('answers 400 "JSON Patch operation failed" when an operation fails', async () => {
    const { path } = await seed({ a: 1 });
    for (const ops of [
      [{ op: 'test', path: '/data/a', value: 2 }],
      [{ op: 'remove', path: '/data/missing' }],
      [{ op: 'replace', path: '/data/x/y', value: 1 }],
    ]) {
      const res = await patch(path, { auth: alice, contentType: JSON_PATCH, body: ops });
      const body = expectValidationError(res, { location: 'body' });
      expect(body.message).toContain('JSON Patch operation failed');
    }
    // Nothing was written.
    expect((await get(path, { auth: alice })).json.data.a).toBe(1);
  });

  it('answers 400 when the body is not a list of operations', async () => {
    const { path } = await seed({ a: 1 });
    for (const body of [{ data: { a: 2 } }, [{ op: 'frobnicate', path: '/data/a' }], [{ path: '/data/a', value: 1 }]]) {
      const res = await patch(path, { auth: alice, contentType: JSON_PATCH, body });
      expectValidationError(res, {});
    }
  });
});

describe('§4.5 Response-Behavior (PATCH)', () => {
  it('full (default) returns the whole object', async () => {
    const { path } = await seed({ a: 1, b: 2 });
    const res = await patch(path, { auth: alice, body: { data: { a: 5 } }, headers: { 'Response-Behavior': 'full' } });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ id: 'r1', a: 5, b: 2, last_modified: expect.any(Number) });
  });

  it('light returns only the patched fields whose value changed', async () => {
    const { path } = await seed({ a: 1, b: 2, c: 3 });
    const res = await patch(path, {
      auth: alice,
      body: { data: { a: 10, b: 2 } },
      headers: { 'Response-Behavior': 'light' },
    });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({ a: 10 });
    // The write is committed.
    expect((await get(path, { auth: alice })).json.data).toMatchObject({ a: 10, b: 2, c: 3 });
  });

  it('diff returns only the fields whose stored value differs from what was sent', async () => {
    const { path } = await seed({ a: 1, b: 2 });
    const res = await patch(path, { auth: alice, body: { data: { a: 10 } }, headers: { 'Response-Behavior': 'diff' } });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({});
    expect((await get(path, { auth: alice })).json.data.a).toBe(10);
  });

  it('sets ETag to the new timestamp with light and diff too', async () => {
    const { path, rec } = await seed({ a: 1 });
    const res = await patch(path, { auth: alice, body: { data: { a: 2 } }, headers: { 'Response-Behavior': 'diff' } });
    const current = await get(path, { auth: alice });
    expect(expectETag(res)).toBe(current.json.data.last_modified);
    expect(current.json.data.last_modified).toBeGreaterThan(rec.last_modified);
  });

  it('answers 400 errno 107 to any other value', async () => {
    const { path } = await seed({ a: 1 });
    const res = await patch(path, {
      auth: alice,
      body: { data: { a: 2 } },
      headers: { 'Response-Behavior': 'verbose' },
    });
    expectValidationError(res, { location: 'header' });
    expect((await get(path, { auth: alice })).json.data.a).toBe(1);
  });
});
