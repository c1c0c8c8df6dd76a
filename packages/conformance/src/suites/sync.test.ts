/**
 * Interface spec "Synchronisation procedure" end to end, plus §5.4 polling semantics
 * (`_since`, `_before`, `_to`, tombstones) on which it relies.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BatchBody, BatchResponse, ErrorBody, KintoObject, ListBody } from '../harness/bodies.js';
import { createCollectionFixture, createRecords, listAll, type CollectionFixture } from '../harness/fixtures.js';
import { del, get, patch, post, put } from '../harness/http.js';
import { expectApiError, expectETag, expectValidationError } from '../harness/matchers.js';
import { alice } from '../harness/users.js';

/** The 412 of a write whose precondition failed: the object as it is now (§6). */
type Conflict = ErrorBody<{ existing: KintoObject }>;

/** A minimal client replica: records by id plus the stored timestamp (an ETag value). */
class Replica {
  readonly records = new Map<string, KintoObject>();
  timestamp: number | null = null;

  apply(changes: KintoObject[]): void {
    for (const change of changes) {
      if (change.deleted === true) this.records.delete(change.id);
      else this.records.set(change.id, change);
    }
  }

  sorted(): KintoObject[] {
    return [...this.records.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  }
}

async function serverState(fx: CollectionFixture): Promise<KintoObject[]> {
  const { items } = await listAll(fx.records, alice);
  return items.sort((a, b) => (a.id < b.id ? -1 : 1));
}

describe('§5.4 polling with _since / _before / _to', () => {
  it('cold sync returns live records only, with the collection timestamp as ETag', async () => {
    const fx = await createCollectionFixture(alice);
    const recs = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await del(fx.record(recs[0].id), { auth: alice });
    const res = await get<ListBody>(fx.records, { auth: alice });
    expect(res.json.data.every((r) => r.deleted === undefined)).toBe(true);
    expect(res.json.data).toHaveLength(2);
    expect(expectETag(res)).toBeGreaterThan(recs[2].last_modified);
  });

  it('_since=T returns what changed strictly after T, tombstones included, newest first', async () => {
    const fx = await createCollectionFixture(alice);
    const [a, b, c] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const updated = (await patch(fx.record(a.id), { auth: alice, body: { data: { n: 10 } } })).json.data;
    const tomb = (await del(fx.record(b.id), { auth: alice })).json.data;
    const res = await get<ListBody>(`${fx.records}?_since=${c.last_modified}`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual([tomb, updated]);
    expect(expectETag(res)).toBe(tomb.last_modified);
  });

  it('accepts _since in ETag form with double quotes (wire example)', async () => {
    const fx = await createCollectionFixture(alice);
    const [a, b] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }]);
    const quoted = await get<ListBody>(`${fx.records}?_since="${a.last_modified}"`, { auth: alice });
    const plain = await get<ListBody>(`${fx.records}?_since=${a.last_modified}`, { auth: alice });
    expect(quoted.status).toBe(200);
    expect(quoted.json.data).toEqual([b]);
    expect(plain.json.data).toEqual([b]);
  });

  it('_before=T returns what changed strictly before T (tombstones included)', async () => {
    const fx = await createCollectionFixture(alice);
    const [a, b, c] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const tomb = (await del(fx.record(a.id), { auth: alice })).json.data;
    expect((await get<ListBody>(`${fx.records}?_before=${c.last_modified}`, { auth: alice })).json.data).toEqual([b]);
    const window = await get<ListBody>(`${fx.records}?_since=${b.last_modified}&_before=${tomb.last_modified + 1}`, {
      auth: alice,
    });
    expect(window.json.data).toEqual([tomb, c]);
  });

  it('_to is a deprecated alias of _before and adds a soft-eol Alert header', async () => {
    const fx = await createCollectionFixture(alice);
    const [a, b, c] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const res = await get<ListBody>(`${fx.records}?_since=${a.last_modified}&_to=${c.last_modified}`, { auth: alice });
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual([b]);
    const alert = JSON.parse(res.headers.get('alert') ?? 'null');
    expect(alert.code).toBe('soft-eol');
    expect(alert.message).toBe('_to is now deprecated, you should use _before instead');
    expect(alert.url).toBeTypeOf('string');
    expect((await get(`${fx.records}?_before=${c.last_modified}`, { auth: alice })).headers.get('alert')).toBeNull();
  });

  it('refuses invalid _since, _before and _to values with 400 (wire example for _since=abc)', async () => {
    const fx = await createCollectionFixture(alice);
    for (const [param, value] of [
      ['_since', 'abc'],
      ['_since', '-1'],
      ['_before', 'abc'],
      ['_to', 'x'],
    ]) {
      const res = await get(`${fx.records}?${param}=${value}`, { auth: alice });
      expectValidationError(res, { location: 'querystring', name: param as string });
    }
  });

  it(
    'refuses a fractional _since or _before (400), or reads it as its integer part (the original does): ' +
      'both accepted',
    async () => {
      // Timestamps are integers (§5.4). The original parses the value as JSON and truncates a
      // number (1.5 → 1): lenient, and the bound it then applies is still a valid one.
      const fx = await createCollectionFixture(alice);
      const [a, b] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }]);
      const tomb = (await del(fx.record(a.id), { auth: alice })).json.data;
      for (const [param, expected] of [
        ['_since', [tomb, b]],
        ['_before', []],
      ] as const) {
        const res = await get(`${fx.records}?${param}=1.5`, { auth: alice });
        if (res.status === 400) {
          expectValidationError(res, { location: 'querystring', name: param });
          continue;
        }
        expect(res.status, `${param}=1.5: ${res.text.slice(0, 300)}`).toBe(200);
        expect(res.json.data, `${param}=1.5 read as ${param}=1`).toEqual(expected);
      }
    },
  );

  it('_since=null is accepted (§17: either no bound, tombstones included, or nothing; both accepted)', async () => {
    const fx = await createCollectionFixture(alice);
    const [a, b] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }]);
    const tomb = (await del(fx.record(a.id), { auth: alice })).json.data;
    const res = await get<ListBody>(`${fx.records}?_since=null`, { auth: alice });
    expect(res.status).toBe(200);
    const data = res.json.data;
    if (data.length > 0) expect(data).toEqual([tomb, b]);
  });

  it('If-None-Match with the stored ETag on a _since poll answers 304 until something changes', async () => {
    const fx = await createCollectionFixture(alice);
    await createRecords(alice, fx, [{ n: 1 }]);
    const etag = expectETag(await get(fx.records, { auth: alice }));
    const poll = await get(`${fx.records}?_since=${etag}`, { auth: alice, headers: { 'If-None-Match': `"${etag}"` } });
    expect(poll.status).toBe(304);
    expect(expectETag(poll)).toBe(etag);
    const changed = (await post(fx.records, { auth: alice, body: { data: { n: 2 } } })).json.data;
    const again = await get<ListBody>(`${fx.records}?_since=${etag}`, {
      auth: alice,
      headers: { 'If-None-Match': `"${etag}"` },
    });
    expect(again.status).toBe(200);
    expect(again.json.data).toEqual([changed]);
    expect(expectETag(again)).toBe(changed.last_modified);
  });
});

describe('Synchronisation procedure with pagination', () => {
  it(
    'follows Next-Page with If-Match; a write between pages gives 412; ' + '_since/_before fetches the missed window',
    async () => {
      const fx = await createCollectionFixture(alice);
      const recs = await createRecords(alice, fx, [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }]);
      const replica = new Replica();

      // 1. Cold sync.
      const cold = await listAll(fx.records, alice);
      replica.apply(cold.items);
      replica.timestamp = expectETag(cold.pages[cold.pages.length - 1]!);

      // Remote changes after the cold sync: 3 updates, 1 delete, 1 creation.
      for (const i of [0, 1, 2]) await patch(fx.record(recs[i]!.id), { auth: alice, body: { data: { n: i + 100 } } });
      await del(fx.record(recs[3].id), { auth: alice });
      await post(fx.records, { auth: alice, body: { data: { n: 6 } } });

      // 2. Paginated poll, following Next-Page with If-Match = the ETag held.
      const first = await get<ListBody>(`${fx.records}?_since=${replica.timestamp}&_limit=2`, { auth: alice });
      expect(first.status).toBe(200);
      expect(first.json.data).toHaveLength(2);
      const held = expectETag(first);
      const nextUrl = first.headers.get('next-page');
      expect(nextUrl).not.toBeNull();
      const second = await get(nextUrl as string, { auth: alice, headers: { 'If-Match': `"${held}"` } });
      expect(second.status).toBe(200);
      expect(expectETag(second)).toBe(held);
      const thirdUrl = second.headers.get('next-page');
      expect(thirdUrl).not.toBeNull();

      // A concurrent write between pages.
      const concurrent = (await patch(fx.record(recs[4].id), { auth: alice, body: { data: { n: 'concurrent' } } })).json
        .data;
      const stale = await get(thirdUrl as string, { auth: alice, headers: { 'If-Match': `"${held}"` } });
      expectApiError(stale, 412, 114);
      expect(stale.json).not.toHaveProperty('details');
      const before = expectETag(stale);
      expect(before).toBe(concurrent.last_modified);

      // 3. Resume: everything changed in (timestamp, before) — the 5 changes, not the concurrent one.
      const windowed = await listAll(`${fx.records}?_since=${replica.timestamp}&_before=${before}&_limit=2`, alice, {
        'If-Match': `"${before}"`,
      });
      const windowIds = windowed.items.map((r) => r.id).sort();
      expect(windowIds).toHaveLength(5);
      expect(windowIds).not.toContain(recs[4].id);
      expect(windowed.items.filter((r) => r.deleted === true).map((r) => r.id)).toEqual([recs[3].id]);
      replica.apply(windowed.items);
      // `_since` is exclusive, so resuming from the 412 ETag itself would skip the write made at
      // exactly that timestamp; resume from the newest timestamp received instead.
      replica.timestamp = Math.max(...windowed.items.map((r) => r.last_modified as number));

      // 4. Catch up and converge.
      const rest = await listAll(`${fx.records}?_since=${replica.timestamp}`, alice);
      expect(rest.items).toEqual([concurrent]);
      replica.apply(rest.items);
      replica.timestamp = expectETag(rest.pages[0]!);
      expect(replica.sorted()).toEqual(await serverState(fx));

      // 5. Up to date.
      const idle = await get(`${fx.records}?_since=${replica.timestamp}`, {
        auth: alice,
        headers: { 'If-None-Match': `"${replica.timestamp}"` },
      });
      expect(idle.status).toBe(304);
    },
  );
});

describe('Synchronisation procedure: pushing local changes through the batch endpoint', () => {
  it(
    'sends creations with If-None-Match: *, updates and deletes with If-Match, ' +
      'and reports conflicts as 412 entries',
    async () => {
      const fx = await createCollectionFixture(alice);
      const [r1, r2, r3, r4] = await createRecords(alice, fx, [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
      const replica = new Replica();
      const cold = await listAll(fx.records, alice);
      replica.apply(cold.items);
      replica.timestamp = expectETag(cold.pages[0]!);

      // Somebody else changes r3 meanwhile.
      const remote3 = (await patch(fx.record(r3.id), { auth: alice, body: { data: { n: 'remote' } } })).json.data;

      const newId = randomUUID();
      const requests = [
        {
          method: 'PUT',
          path: `${fx.records}/${newId}`,
          headers: { 'If-None-Match': '*' },
          body: { data: { id: newId, n: 'local' } },
        },
        {
          method: 'PUT',
          path: fx.record(r2.id),
          headers: { 'If-Match': `"${r2.last_modified}"` },
          body: { data: { ...r2, n: 'local-2' } },
        },
        {
          method: 'PUT',
          path: fx.record(r3.id),
          headers: { 'If-Match': `"${r3.last_modified}"` },
          body: { data: { ...r3, n: 'local-3' } },
        },
        { method: 'DELETE', path: fx.record(r4.id), headers: { 'If-Match': `"${r4.last_modified}"` } },
        {
          method: 'PUT',
          path: fx.record(r1.id),
          headers: { 'If-None-Match': '*' },
          body: { data: { id: r1.id, n: 'dup' } },
        },
      ];
      const res = await post<BatchBody<unknown>>('/batch', {
        auth: alice,
        body: { defaults: { headers: {} }, requests },
      });
      expect(res.status).toBe(200);
      const statuses = res.json.responses.map((r) => r.status);
      expect(statuses).toEqual([201, 200, 412, 200, 412]);
      // The statuses tell which body each response has.
      const [created, updated, conflict, deleted, duplicate] = res.json.responses as [
        BatchResponse,
        BatchResponse,
        BatchResponse<Conflict>,
        BatchResponse,
        BatchResponse<Conflict>,
      ];
      expect(created.body.data).toEqual({ id: newId, n: 'local', last_modified: expect.any(Number) });
      expect(updated.body.data.n).toBe('local-2');
      expect(conflict.body.errno).toBe(114);
      expect(conflict.body.details!.existing).toEqual(remote3);
      expect(deleted.body.data).toEqual({ id: r4.id, last_modified: expect.any(Number), deleted: true });
      expect(duplicate.body.details!.existing).toEqual(r1);

      // Pull again and converge.
      const pulled = await listAll(`${fx.records}?_since=${replica.timestamp}`, alice);
      replica.apply(pulled.items);
      expect(replica.sorted()).toEqual(await serverState(fx));
      expect(replica.records.get(r3.id)!.n).toBe('remote');
    },
  );

  it(
    'a delete pushed for a record deleted remotely answers 404 or 412 (both accepted, ' + 'see concurrency suite)',
    async () => {
      const fx = await createCollectionFixture(alice);
      const [r1] = await createRecords(alice, fx, [{ n: 1 }]);
      await del(fx.record(r1.id), { auth: alice });
      const res = await post<BatchBody<ErrorBody>>('/batch', {
        auth: alice,
        body: {
          requests: [{ method: 'DELETE', path: fx.record(r1.id), headers: { 'If-Match': `"${r1.last_modified}"` } }],
        },
      });
      expect(res.status).toBe(200);
      expect([404, 412]).toContain(res.json.responses[0]!.status);
    },
  );

  it(
    'PUT without data keeps the server data (kinto.js sends no data when nothing but id/last_modified ' + 'changed)',
    async () => {
      const fx = await createCollectionFixture(alice);
      const [r1] = await createRecords(alice, fx, [{ n: 1 }]);
      const res = await put(fx.record(r1.id), {
        auth: alice,
        body: {},
        headers: { 'If-Match': `"${r1.last_modified}"` },
      });
      expect(res.status).toBe(200);
      expect(res.json.data.n).toBe(1);
    },
  );
});
