/**
 * §6 concurrency control: header parsing (§6.1), the decision table (§6.2), 412/304 responses
 * (§6.3), on objects and on plural endpoints.
 */
import { describe, expect, it } from 'vitest';
import type { ErrorBody, KintoObject, ListBody } from '../harness/bodies.js';
import { createCollectionFixture, createRecord, type CollectionFixture } from '../harness/fixtures.js';
import { type HttpResponse, del, get, head, patch, post, put, request } from '../harness/http.js';
import { expectApiError, expectETag, expectLastModified, expectValidationError } from '../harness/matchers.js';
import { alice, bob, userId } from '../harness/users.js';

const q = (n: number) => `"${n}"`;

async function withRecord(
  data: Record<string, unknown> = { title: 'First', n: 1 },
): Promise<{ fx: CollectionFixture; path: string; rec: KintoObject }> {
  const fx = await createCollectionFixture(alice);
  const res = await put(fx.record('r1'), { auth: alice, body: { data } });
  expect(res.status).toBe(201);
  return { fx, path: fx.record('r1'), rec: res.json.data };
}

/** 412 errno 114 with the current ETag/Last-Modified and `details.existing` = the object (no permissions). */
function expect412WithExisting(res: HttpResponse, existing: KintoObject): void {
  const body = expectApiError(res, 412, 114, 'Resource was modified meanwhile');
  expect(body.details).toEqual({ existing });
  expect(expectETag(res)).toBe(existing.last_modified);
  expectLastModified(res, existing.last_modified);
}

/** 412 errno 114 without any `details` key. */
function expect412WithoutDetails(res: HttpResponse): void {
  expectApiError(res, 412, 114, 'Resource was modified meanwhile');
  expect(res.json).not.toHaveProperty('details');
}

describe('§6.1 precondition header parsing', () => {
  const bad = ['123', 'W/"123"', '"*"', '"1", "2"', '"abc"', '"12a"', '""', "'123'"];

  it('answers 400 errno 107 to a malformed If-Match (location header, name If-Match)', async () => {
    const { path } = await withRecord();
    for (const value of bad) {
      const res = await get(path, { auth: alice, headers: { 'If-Match': value } });
      expectValidationError(res, { location: 'header', name: 'If-Match' });
    }
  });

  it('uses the exact message "If-Match in header: The value should be integer between double quotes."', async () => {
    const { path } = await withRecord();
    const res = await put(path, { auth: alice, body: { data: {} }, headers: { 'If-Match': '123' } });
    expectValidationError(
      res,
      { location: 'header', name: 'If-Match', description: 'The value should be integer between double quotes.' },
      400,
      'If-Match in header: The value should be integer between double quotes.',
    );
  });

  it('answers 400 to a malformed If-None-Match', async () => {
    const { path, fx } = await withRecord();
    for (const value of bad) {
      const res = await get(path, { auth: alice, headers: { 'If-None-Match': value } });
      expectValidationError(res, { location: 'header', name: 'If-None-Match' });
    }
    expectValidationError(await get(fx.records, { auth: alice, headers: { 'If-None-Match': '123' } }), {
      location: 'header',
      name: 'If-None-Match',
    });
  });

  it('rejects malformed headers on writes too, without writing', async () => {
    const { path, rec } = await withRecord();
    expectValidationError(
      await patch(path, { auth: alice, body: { data: { n: 2 } }, headers: { 'If-Match': 'W/"1"' } }),
      { location: 'header' },
    );
    expectValidationError(await del(path, { auth: alice, headers: { 'If-Match': 'abc' } }), { location: 'header' });
    expect((await get(path, { auth: alice })).json.data).toEqual(rec);
  });

  it('ignores If-Modified-Since and If-Unmodified-Since (DOC≠SPEC)', async () => {
    const { path, fx } = await withRecord();
    const old = 'Sat, 01 Jan 2000 00:00:00 GMT';
    const future = 'Fri, 01 Jan 2100 00:00:00 GMT';
    expect((await get(path, { auth: alice, headers: { 'If-Modified-Since': future } })).status).toBe(200);
    expect((await get(fx.records, { auth: alice, headers: { 'If-Unmodified-Since': old } })).status).toBe(200);
    expect(
      (await put(path, { auth: alice, body: { data: { n: 2 } }, headers: { 'If-Unmodified-Since': old } })).status,
    ).toBe(200);
  });
});

describe('§6.2 If-Match on an existing object', () => {
  it('proceeds when the ETag equals the current one (PUT, PATCH, GET, DELETE)', async () => {
    const { path, rec } = await withRecord();
    const g = await get(path, { auth: alice, headers: { 'If-Match': q(rec.last_modified) } });
    expect(g.status).toBe(200);
    const p = await put(path, {
      auth: alice,
      body: { data: { title: 'First (edited)' } },
      headers: { 'If-Match': q(rec.last_modified) },
    });
    expect(p.status).toBe(200);
    const pa = await patch(path, {
      auth: alice,
      body: { data: { x: 1 } },
      headers: { 'If-Match': q(p.json.data.last_modified) },
    });
    expect(pa.status).toBe(200);
    const d = await del(path, { auth: alice, headers: { 'If-Match': q(pa.json.data.last_modified) } });
    expect(d.status).toBe(200);
  });

  it('answers 412 with details.existing, ETag and Last-Modified when it differs (wire example)', async () => {
    const { path, rec } = await withRecord();
    for (const [method, body] of [
      ['PUT', { data: { title: 'Changed' } }],
      ['PATCH', { data: { title: 'Changed' } }],
      ['DELETE', undefined],
      ['GET', undefined],
    ] as const) {
      const res = await request(method, path, {
        auth: alice,
        headers: { 'If-Match': '"1234"' },
        ...(body ? { body } : {}),
      });
      expect412WithExisting(res, rec);
    }
    expect((await get(path, { auth: alice })).json.data).toEqual(rec);
  });

  it('compares strictly: an ETag newer than the current one also fails (1.15)', async () => {
    const { path, rec } = await withRecord();
    const res = await put(path, { auth: alice, body: { data: {} }, headers: { 'If-Match': q(rec.last_modified + 1) } });
    expect412WithExisting(res, rec);
  });

  it('If-Match: * proceeds on an existing object', async () => {
    const { path } = await withRecord();
    expect((await put(path, { auth: alice, body: { data: { a: 1 } }, headers: { 'If-Match': '*' } })).status).toBe(200);
    expect((await patch(path, { auth: alice, body: { data: { b: 1 } }, headers: { 'If-Match': '*' } })).status).toBe(
      200,
    );
    expect((await del(path, { auth: alice, headers: { 'If-Match': '*' } })).status).toBe(200);
  });
});

describe('§6.2 If-Match on an absent object', () => {
  it('PUT answers 412 without details (never-existing record)', async () => {
    const { fx } = await withRecord();
    expect412WithoutDetails(
      await put(fx.record('absent'), { auth: alice, body: { data: {} }, headers: { 'If-Match': '"123"' } }),
    );
    expect412WithoutDetails(
      await put(fx.record('absent'), { auth: alice, body: { data: {} }, headers: { 'If-Match': '*' } }),
    );
    expectApiError(await get(fx.record('absent'), { auth: alice }), 404, 110);
  });

  it('GET, PATCH and DELETE answer 404 errno 110 (the 404 check comes first)', async () => {
    const { fx } = await withRecord();
    for (const value of ['"123"', '*']) {
      expectApiError(await get(fx.record('absent'), { auth: alice, headers: { 'If-Match': value } }), 404, 110);
      expectApiError(
        await patch(fx.record('absent'), { auth: alice, body: { data: {} }, headers: { 'If-Match': value } }),
        404,
        110,
      );
      expectApiError(await del(fx.record('absent'), { auth: alice, headers: { 'If-Match': value } }), 404, 110);
    }
  });

  it('POST with data.id of an absent object answers 412 without details', async () => {
    const { fx } = await withRecord();
    expect412WithoutDetails(
      await post(fx.records, { auth: alice, body: { data: { id: 'absent' } }, headers: { 'If-Match': '"123"' } }),
    );
    expect412WithoutDetails(
      await post(fx.records, { auth: alice, body: { data: {} }, headers: { 'If-Match': '"123"' } }),
    );
  });

  it('PUT on a tombstoned record answers 412 without details', async () => {
    const { path, rec } = await withRecord();
    await del(path, { auth: alice });
    expect412WithoutDetails(
      await put(path, { auth: alice, body: { data: {} }, headers: { 'If-Match': q(rec.last_modified) } }),
    );
  });

  it(
    'DELETE/PATCH/GET with If-Match on a deleted record answer 404 (reference §6.2) or 412 without details ' +
      '(1.15 change log): both accepted',
    async () => {
      const { path, rec } = await withRecord();
      const tomb = (await del(path, { auth: alice })).json.data;
      for (const value of [q(rec.last_modified), q(tomb.last_modified)]) {
        for (const res of [
          await del(path, { auth: alice, headers: { 'If-Match': value } }),
          await patch(path, { auth: alice, body: { data: { a: 1 } }, headers: { 'If-Match': value } }),
          await get(path, { auth: alice, headers: { 'If-Match': value } }),
        ]) {
          expect([404, 412], res.text).toContain(res.status);
          if (res.status === 404) expectApiError(res, 404, 110);
          else expect412WithoutDetails(res);
        }
      }
    },
  );
});

describe('§6.2 If-None-Match: *', () => {
  it('answers 412 with details.existing on an existing object, for every method (wire example for PUT)', async () => {
    const { path, rec } = await withRecord();
    for (const [method, body] of [
      ['PUT', { data: { title: 'Again' } }],
      ['PATCH', { data: { a: 1 } }],
      ['DELETE', undefined],
      ['GET', undefined],
    ] as const) {
      const res = await request(method, path, {
        auth: alice,
        headers: { 'If-None-Match': '*' },
        ...(body ? { body } : {}),
      });
      expect412WithExisting(res, rec);
    }
  });

  it('lets PUT and POST create an absent object', async () => {
    const { fx } = await withRecord();
    expect(
      (await put(fx.record('new1'), { auth: alice, body: { data: {} }, headers: { 'If-None-Match': '*' } })).status,
    ).toBe(201);
    expect(
      (await post(fx.records, { auth: alice, body: { data: { id: 'new2' } }, headers: { 'If-None-Match': '*' } }))
        .status,
    ).toBe(201);
  });

  it('lets PUT re-create over a tombstone', async () => {
    const { path } = await withRecord();
    await del(path, { auth: alice });
    expect(
      (await put(path, { auth: alice, body: { data: { again: true } }, headers: { 'If-None-Match': '*' } })).status,
    ).toBe(201);
  });

  it('GET, PATCH and DELETE of an absent object still answer 404', async () => {
    const { fx } = await withRecord();
    expectApiError(await get(fx.record('absent'), { auth: alice, headers: { 'If-None-Match': '*' } }), 404, 110);
    expectApiError(
      await patch(fx.record('absent'), { auth: alice, body: { data: {} }, headers: { 'If-None-Match': '*' } }),
      404,
      110,
    );
    expectApiError(await del(fx.record('absent'), { auth: alice, headers: { 'If-None-Match': '*' } }), 404, 110);
  });

  it('POST with data.id of an existing object answers 412 with details.existing', async () => {
    const { fx, rec } = await withRecord();
    expect412WithExisting(
      await post(fx.records, { auth: alice, body: { data: { id: 'r1' } }, headers: { 'If-None-Match': '*' } }),
      rec,
    );
  });

  it('works on collections (interface spec: PUT collection with If-None-Match: *)', async () => {
    const { fx } = await withRecord();
    const current = (await get(fx.path, { auth: alice })).json.data;
    expect412WithExisting(
      await put(fx.path, { auth: alice, body: { data: {} }, headers: { 'If-None-Match': '*' } }),
      current,
    );
    const fresh = await put(`/buckets/${fx.bucket}/collections/fresh`, {
      auth: alice,
      headers: { 'If-None-Match': '*' },
    });
    expect(fresh.status).toBe(201);
  });
});

describe('§6.2 If-None-Match: "n" (GET) and §6.3 304', () => {
  it('answers 304 with an empty body, ETag and Last-Modified when n is current (wire example)', async () => {
    const { path, rec } = await withRecord();
    const res = await get(path, { auth: alice, headers: { 'If-None-Match': q(rec.last_modified) } });
    expect(res.status).toBe(304);
    expect(res.text).toBe('');
    expect(expectETag(res)).toBe(rec.last_modified);
    expectLastModified(res, rec.last_modified);
  });

  it('answers 200 when n differs (older or newer)', async () => {
    const { path, rec } = await withRecord();
    expect((await get(path, { auth: alice, headers: { 'If-None-Match': q(rec.last_modified - 1) } })).status).toBe(200);
    expect((await get(path, { auth: alice, headers: { 'If-None-Match': q(rec.last_modified + 1) } })).status).toBe(200);
  });

  it('answers 404 on an absent object', async () => {
    const { fx } = await withRecord();
    expectApiError(await get(fx.record('absent'), { auth: alice, headers: { 'If-None-Match': '"123"' } }), 404, 110);
  });

  it('has no effect on writes', async () => {
    const { path, rec } = await withRecord();
    const res = await put(path, {
      auth: alice,
      body: { data: { v: 2 } },
      headers: { 'If-None-Match': q(rec.last_modified) },
    });
    expect(res.status).toBe(200);
    const pa = await patch(path, {
      auth: alice,
      body: { data: { v: 3 } },
      headers: { 'If-None-Match': q(res.json.data.last_modified) },
    });
    expect(pa.status).toBe(200);
  });

  it('checks 304 before 412 on GET', async () => {
    const { path, rec } = await withRecord();
    const res = await get(path, { auth: alice, headers: { 'If-None-Match': q(rec.last_modified), 'If-Match': '"1"' } });
    expect(res.status).toBe(304);
  });
});

describe('§6.2 plural endpoints (treated as always existing)', () => {
  async function listed(): Promise<{ fx: CollectionFixture; etag: number }> {
    const fx = await createCollectionFixture(alice);
    await createRecord(alice, fx.bucket, fx.collection, { a: 1 });
    const etag = expectETag(await get(fx.records, { auth: alice }));
    return { fx, etag };
  }

  it(
    'If-None-Match: "<collection timestamp>" gives 304 on GET and HEAD, regardless of filters ' + '(wire example)',
    async () => {
      const { fx, etag } = await listed();
      for (const res of [
        await get(fx.records, { auth: alice, headers: { 'If-None-Match': q(etag) } }),
        await get(`${fx.records}?a=2&_limit=1&_sort=a`, { auth: alice, headers: { 'If-None-Match': q(etag) } }),
        await head(fx.records, { auth: alice, headers: { 'If-None-Match': q(etag) } }),
      ]) {
        expect(res.status).toBe(304);
        expect(res.text).toBe('');
        expect(expectETag(res)).toBe(etag);
      }
    },
  );

  it('If-None-Match with another value gives 200', async () => {
    const { fx, etag } = await listed();
    expect((await get(fx.records, { auth: alice, headers: { 'If-None-Match': q(etag - 1) } })).status).toBe(200);
  });

  it('If-None-Match: * always answers 412 without details on GET, HEAD and DELETE', async () => {
    const { fx, etag } = await listed();
    for (const method of ['GET', 'HEAD', 'DELETE']) {
      const res = await request(method, fx.records, { auth: alice, headers: { 'If-None-Match': '*' } });
      expect(res.status, method).toBe(412);
      if (method !== 'HEAD') expect412WithoutDetails(res);
      expect(expectETag(res)).toBe(etag);
    }
    expect((await get<ListBody>(fx.records, { auth: alice })).json.data).toHaveLength(1);
  });

  it(
    'If-Match compares with the collection timestamp: equal proceeds, ' + 'different answers 412 without details',
    async () => {
      const { fx, etag } = await listed();
      expect((await get(fx.records, { auth: alice, headers: { 'If-Match': q(etag) } })).status).toBe(200);
      const stale = await get(fx.records, { auth: alice, headers: { 'If-Match': q(etag - 1) } });
      expect412WithoutDetails(stale);
      expect(expectETag(stale)).toBe(etag);
      expect412WithoutDetails(await del(fx.records, { auth: alice, headers: { 'If-Match': q(etag - 1) } }));
      expect((await get<ListBody>(fx.records, { auth: alice })).json.data).toHaveLength(1);
      expect((await del(fx.records, { auth: alice, headers: { 'If-Match': q(etag) } })).status).toBe(200);
    },
  );

  it('If-Match: * always passes', async () => {
    const { fx } = await listed();
    expect((await get(fx.records, { auth: alice, headers: { 'If-Match': '*' } })).status).toBe(200);
  });

  it('If-Match on POST with a matching existing object proceeds (returns it with 200)', async () => {
    const { rec, fx } = await withRecord();
    const res = await post(fx.records, {
      auth: alice,
      body: { data: { id: 'r1' } },
      headers: { 'If-Match': q(rec.last_modified) },
    });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual(rec);
  });
});

describe('§6.2 authorisation runs before preconditions', () => {
  it('answers 403 (not 412) to a user without permission sending a stale If-Match', async () => {
    const { path } = await withRecord();
    expectApiError(await put(path, { auth: bob, body: { data: {} }, headers: { 'If-Match': '"1"' } }), 403, 121);
  });

  it(
    'PUT with If-None-Match: * on an existing object gives 412 (not 403) to a caller allowed to create ' + '(1.11)',
    async () => {
      const bobId = await userId(bob);
      const fx = await createCollectionFixture(alice, { collection: { permissions: { 'record:create': [bobId] } } });
      const rec = (await put(fx.record('taken'), { auth: alice, body: { data: { v: 1 } } })).json.data;
      expectApiError(await put(fx.record('taken'), { auth: bob, body: { data: { v: 2 } } }), 403, 121);
      const res = await put<ErrorBody<{ existing: KintoObject }>>(fx.record('taken'), {
        auth: bob,
        body: { data: { v: 2 } },
        headers: { 'If-None-Match': '*' },
      });
      expectApiError(res, 412, 114);
      if (res.json.details !== undefined) expect(res.json.details.existing).toEqual(rec);
    },
  );
});

describe('§6.3 412 bodies never carry permissions', () => {
  it('details.existing has no permissions even when the object has some', async () => {
    const { fx } = await withRecord();
    const shared = await put(fx.record('shared'), {
      auth: alice,
      body: { data: { a: 1 }, permissions: { read: ['system.Authenticated'] } },
    });
    const res = await put(fx.record('shared'), { auth: alice, body: { data: {} }, headers: { 'If-None-Match': '*' } });
    expect412WithExisting(res, shared.json.data);
    expect(res.text).not.toContain('system.Authenticated');
  });
});
