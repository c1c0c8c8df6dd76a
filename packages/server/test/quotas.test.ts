/**
 * The quotas plugin (protocol-reference §13.6) on both stores: limits and the original's 507
 * messages, sizes as the original counts them, deletes freeing quota, batches refused whole,
 * and exact counts under concurrent writers over real HTTP.
 */
import type { FastifyInstance } from 'fastify';
import { Pool } from 'undici';
import { describe, expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { ConfigError, loadSettings } from '../src/config.js';
import { objectSize } from '../src/quotas/size.js';
import { describeOnBackends } from './helpers/backends.js';
import { logCapture } from './helpers/logs.js';
import { testSettings } from './helpers/embedded-server.js';

const alice = { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` };

async function put(app: FastifyInstance, url: string, data: Record<string, unknown> = {}) {
  return app.inject({ method: 'PUT', url: `/v1${url}`, headers: alice, payload: { data } });
}

async function count(app: FastifyInstance, collection: string): Promise<number> {
  const res = await app.inject({ method: 'HEAD', url: `/v1${collection}/records`, headers: alice });
  return Number(res.headers['total-records']);
}

describe('quota settings', () => {
  const load = (overrides: Record<string, unknown>) =>
    loadSettings({ env: {}, configFile: null, overrides: overrides as never });

  it('are checked at boot with a clear error', () => {
    expect(() => load({ quotas_bucket: { max_item: 3 } })).toThrow(
      new ConfigError(
        'Invalid setting quotas_bucket: unknown limit "max_item" (known: max_bytes, max_items, max_bytes_per_item)',
      ),
    );
    expect(() => load({ quotas_collection: { max_bytes: -1 } })).toThrow(
      /quotas_collection: max_bytes must be a whole number ≥ 0/,
    );
    expect(() => load({ quotas_collections: { 'b/c/d': {} } })).toThrow(
      /quotas_collections: key "b\/c\/d" is not a bucket id or "<bucket id>\/<collection id>"/,
    );
    expect(() => load({ quotas_buckets: [] })).toThrow(/quotas_buckets: expected a JSON object/);
    expect(() => load({ quotas_collections: { 'b/c': { max_items: 1.5 } } })).toThrow(
      new ConfigError(
        'Invalid setting quotas_collections ("b/c"): max_items must be a whole number ≥ 0 (or null), got 1.5',
      ),
    );
    expect(load({ quotas_collections: { b: { max_items: 1 }, 'b/c': { max_bytes: 10 } } }).quotas_collections).toEqual({
      b: { max_items: 1 },
      'b/c': { max_bytes: 10 },
    });
  });

  it('read from environment variables as JSON', () => {
    const settings = loadSettings({
      env: { QUIRE_QUOTAS_ENABLED: 'true', QUIRE_QUOTAS_BUCKETS: '{"b": {"max_items": 2}}' },
      configFile: null,
    });
    expect(settings.quotas_enabled).toBe(true);
    expect(settings.quotas_buckets).toEqual({ b: { max_items: 2 } });
  });

  it('size: compact JSON length, non-ASCII counted as \\uXXXX escapes (as Python json.dumps)', () => {
    expect(objectSize({ id: 'a', last_modified: 1 })).toBe('{"id":"a","last_modified":1}'.length);
    expect(objectSize({ x: 'é' })).toBe('{"x":"\\u00e9"}'.length);
    expect(objectSize({ x: '😀' })).toBe('{"x":"\\ud83d\\ude00"}'.length);
  });
});

describeOnBackends('quotas (§13.6)', { timeout: 60_000 }, (backend) => {
  it('is off by default; on, GET / shows the capability as the original does', async () => {
    const off = await backend.serverWith({});
    expect((await off.inject({ method: 'GET', url: '/v1/' })).json().capabilities.quotas).toBeUndefined();
    const on = await backend.serverWith({ quotas_enabled: true });
    expect((await on.inject({ method: 'GET', url: '/v1/' })).json().capabilities.quotas).toEqual({
      description: 'Quotas Management on buckets and collections.',
      url: 'https://kinto.readthedocs.io',
    });
  });

  it('a quota refusal is logged as a client error: a request line at warn, no error or stack (issue 29)', async () => {
    const { stream, lines } = logCapture();
    const settings = testSettings({
      log_level: 'info',
      log_format: 'json',
      quotas_enabled: true,
      quotas_collections: { qlog: { max_items: 1 } },
    });
    const app = await buildServer({ settings, storage: backend.storage, logger: { stream } });
    try {
      await put(app, '/buckets/qlog');
      await put(app, '/buckets/qlog/collections/c');
      expect((await put(app, '/buckets/qlog/collections/c/records/r1')).statusCode).toBe(201);
      expect((await put(app, '/buckets/qlog/collections/c/records/r2')).statusCode).toBe(507);
    } finally {
      await app.close();
    }
    const refused = lines.filter((line) => line.status === 507);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      level: 40,
      msg: 'PUT /v1/buckets/:bucket_id/collections/:collection_id/records/:record_id 507',
    });
    expect(lines.filter((line) => (line.level as number) >= 50)).toEqual([]);
    expect(JSON.stringify(lines)).not.toContain('"stack"');
  });

  it('collection max_items: 507 errno 121 with the original message; deleting a record frees its place', async () => {
    const app = await backend.serverWith({ quotas_enabled: true, quotas_collections: { q1: { max_items: 2 } } });
    await put(app, '/buckets/q1');
    await put(app, '/buckets/q1/collections/c');
    expect((await put(app, '/buckets/q1/collections/c/records/r1')).statusCode).toBe(201);
    expect((await put(app, '/buckets/q1/collections/c/records/r2')).statusCode).toBe(201);
    const refused = await put(app, '/buckets/q1/collections/c/records/r3');
    expect(refused.statusCode).toBe(507);
    expect(refused.json()).toEqual({
      code: 507,
      errno: 121,
      error: 'Insufficient Storage',
      message: 'Collection maximum number of objects exceeded (3 > 2 objects).',
    });
    expect(await count(app, '/buckets/q1/collections/c')).toBe(2);
    // An update is no new object.
    expect((await put(app, '/buckets/q1/collections/c/records/r2', { x: 1 })).statusCode).toBe(200);
    expect(
      (await app.inject({ method: 'DELETE', url: '/v1/buckets/q1/collections/c/records/r1', headers: alice }))
        .statusCode,
    ).toBe(200);
    expect((await put(app, '/buckets/q1/collections/c/records/r3')).statusCode).toBe(201);
    // Another collection of the bucket has its own count.
    await put(app, '/buckets/q1/collections/d');
    expect((await put(app, '/buckets/q1/collections/d/records/r1')).statusCode).toBe(201);
    // Plural DELETE frees them all.
    expect(
      (await app.inject({ method: 'DELETE', url: '/v1/buckets/q1/collections/c/records', headers: alice })).statusCode,
    ).toBe(200);
    expect((await put(app, '/buckets/q1/collections/c/records/a')).statusCode).toBe(201);
    expect((await put(app, '/buckets/q1/collections/c/records/b')).statusCode).toBe(201);
    expect((await put(app, '/buckets/q1/collections/c/records/c')).statusCode).toBe(507);
  });

  it('bucket max_bytes counts it, its collections, groups and records, id and last_modified included', async () => {
    const app = await backend.serverWith({ quotas_enabled: true, quotas_buckets: { q2: { max_bytes: 400 } } });
    const sizes: number[] = [];
    const keep = (res: Awaited<ReturnType<typeof put>>) => {
      expect(res.statusCode).toBe(201);
      sizes.push(JSON.stringify(res.json().data).length);
    };
    keep(await put(app, '/buckets/q2'));
    keep(await put(app, '/buckets/q2/collections/c', { title: 'tasks' }));
    keep(await put(app, '/buckets/q2/groups/g', { members: ['x'] }));
    keep(await put(app, '/buckets/q2/collections/c/records/r1', { text: 'a'.repeat(100) }));
    const used = sizes.reduce((a, b) => a + b, 0);
    const refused = await put(app, '/buckets/q2/collections/c/records/r2', { text: 'b'.repeat(400 - used) });
    expect(refused.statusCode).toBe(507);
    const last = JSON.stringify({ id: 'r2', last_modified: 0, text: 'b'.repeat(400 - used) }).length;
    const expected = used + last + (String(Date.now()).length - 1);
    expect(refused.json().message).toBe(`Bucket maximum total size exceeded (${expected} > 400 Bytes). `);
    // Deleting the group frees its bytes: a record that fits only without it.
    const overhead = JSON.stringify({ id: 'r2', last_modified: Date.now(), text: '' }).length;
    const text = 'b'.repeat(400 - used - overhead + Math.floor(sizes[2]! / 2));
    expect((await put(app, '/buckets/q2/collections/c/records/r2', { text })).statusCode).toBe(507);
    expect((await app.inject({ method: 'DELETE', url: '/v1/buckets/q2/groups/g', headers: alice })).statusCode).toBe(
      200,
    );
    expect((await put(app, '/buckets/q2/collections/c/records/r2', { text })).statusCode).toBe(201);
  });

  it('max_bytes_per_item: the collection limit wins over the bucket limit', async () => {
    const app = await backend.serverWith({
      quotas_enabled: true,
      quotas_bucket: { max_bytes_per_item: 1000 },
      quotas_collections: { 'q3/small': { max_bytes_per_item: 100 } },
    });
    await put(app, '/buckets/q3');
    await put(app, '/buckets/q3/collections/small');
    await put(app, '/buckets/q3/collections/big');
    const text = 'x'.repeat(200);
    expect((await put(app, '/buckets/q3/collections/big/records/r', { text })).statusCode).toBe(201);
    const refused = await put(app, '/buckets/q3/collections/small/records/r', { text });
    expect(refused.statusCode).toBe(507);
    const size = JSON.stringify({ id: 'r', last_modified: Date.now(), text }).length;
    expect(refused.json().message).toBe(`Maximum bytes per object exceeded (${size} > 100 Bytes.`);
    expect((await put(app, '/buckets/q3/collections/big/records/r', { text: 'x'.repeat(2000) })).statusCode).toBe(507);
  });

  it('a batch that would exceed a limit is refused whole', async () => {
    const app = await backend.serverWith({ quotas_enabled: true, quotas_collections: { q4: { max_items: 3 } } });
    await put(app, '/buckets/q4');
    await put(app, '/buckets/q4/collections/c');
    await put(app, '/buckets/q4/collections/c/records/r0');
    const requests = [1, 2, 3].map((i) => ({
      method: 'PUT',
      path: `/buckets/q4/collections/c/records/r${i}`,
      body: { data: { i } },
    }));
    const res = await app.inject({ method: 'POST', url: '/v1/batch', headers: alice, payload: { requests } });
    expect(res.statusCode).toBe(507);
    expect(res.json()).toMatchObject({
      errno: 121,
      message: 'Collection maximum number of objects exceeded (4 > 3 objects).',
    });
    expect(await count(app, '/buckets/q4/collections/c')).toBe(1);
    // Two fit, and the counters were not touched by the refused batch.
    const ok = await app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: alice,
      payload: { requests: requests.slice(0, 2) },
    });
    expect(ok.statusCode).toBe(200);
    expect(await count(app, '/buckets/q4/collections/c')).toBe(3);
    expect((await put(app, '/buckets/q4/collections/c/records/r9')).statusCode).toBe(507);
  });

  it('deleting a collection frees its records in the bucket; deleting a bucket drops its counters', async () => {
    const app = await backend.serverWith({ quotas_enabled: true, quotas_buckets: { q5: { max_items: 2 } } });
    await put(app, '/buckets/q5');
    await put(app, '/buckets/q5/collections/a');
    await put(app, '/buckets/q5/collections/a/records/r1');
    await put(app, '/buckets/q5/collections/a/records/r2');
    await put(app, '/buckets/q5/collections/b');
    const refused = await put(app, '/buckets/q5/collections/b/records/r1');
    expect(refused.json().message).toBe('Bucket maximum number of objects exceeded (3 > 2 objects).');
    expect(
      (await app.inject({ method: 'DELETE', url: '/v1/buckets/q5/collections/a', headers: alice })).statusCode,
    ).toBe(200);
    expect((await put(app, '/buckets/q5/collections/b/records/r1')).statusCode).toBe(201);
    expect((await put(app, '/buckets/q5/collections/b/records/r2')).statusCode).toBe(201);
    expect((await put(app, '/buckets/q5/collections/b/records/r3')).statusCode).toBe(507);
    // A collection created again under the same name starts from zero.
    await put(app, '/buckets/q5/collections/a');
    expect((await app.inject({ method: 'DELETE', url: '/v1/buckets/q5', headers: alice })).statusCode).toBe(200);
    expect(
      await backend.storage.read((session) =>
        session.objects.list({ resourceName: 'quota', parentId: '/buckets/q5' }, { includeDeleted: true }),
      ),
    ).toEqual([]);
    await put(app, '/buckets/q5');
    await put(app, '/buckets/q5/collections/b');
    expect((await put(app, '/buckets/q5/collections/b/records/r1')).statusCode).toBe(201);
    expect((await put(app, '/buckets/q5/collections/b/records/r2')).statusCode).toBe(201);
  });

  it('concurrent writers over HTTP: exactly the limit is stored, every other write gets 507', async () => {
    const LIMIT = 10;
    const WRITERS = 40;
    const app = await backend.serverWith({
      quotas_enabled: true,
      quotas_collections: { q6: { max_items: LIMIT } },
      quotas_buckets: { q6: { max_items: LIMIT + 5 } },
    });
    await put(app, '/buckets/q6');
    for (const c of ['a', 'b']) await put(app, `/buckets/q6/collections/${c}`);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: WRITERS });
    try {
      const send = async (path: string, body: unknown) => {
        const res = await pool.request({
          method: 'POST',
          path,
          headers: { ...alice, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const json = (await res.body.json()) as Record<string, unknown>;
        return { status: res.statusCode, json };
      };
      // Collection a alone: its limit.
      const one = await Promise.all(
        Array.from({ length: WRITERS }, (_, i) => send('/v1/buckets/q6/collections/a/records', { data: { i } })),
      );
      expect(one.filter((r) => r.status === 201)).toHaveLength(LIMIT);
      expect(one.filter((r) => r.status === 507)).toHaveLength(WRITERS - LIMIT);
      expect(await count(app, '/buckets/q6/collections/a')).toBe(LIMIT);
      // Collection b, plus batches, racing for the 5 places the bucket has left.
      const mixed = await Promise.all(
        Array.from({ length: WRITERS }, (_, i) =>
          i % 4 === 0
            ? send('/v1/batch', {
                requests: [
                  { method: 'POST', path: '/buckets/q6/collections/b/records', body: { data: { i } } },
                  { method: 'POST', path: '/buckets/q6/collections/b/records', body: { data: { i } } },
                ],
              })
            : send('/v1/buckets/q6/collections/b/records', { data: { i } }),
        ),
      );
      expect(mixed.every((r) => r.status === 200 || r.status === 201 || r.status === 507)).toBe(true);
      const stored = await count(app, '/buckets/q6/collections/b');
      expect(mixed.filter((r) => r.status === 200).length * 2 + mixed.filter((r) => r.status === 201).length).toBe(
        stored,
      );
      expect([4, 5]).toContain(stored);
      // Whatever is left, the bucket is now full (at 15, or 14 with one place a batch of 2 could not take).
      if (stored === 4) expect((await send('/v1/buckets/q6/collections/b/records', { data: {} })).status).toBe(201);
      expect((await send('/v1/buckets/q6/collections/b/records', { data: {} })).json).toMatchObject({
        errno: 121,
        message: 'Bucket maximum number of objects exceeded (16 > 15 objects).',
      });
    } finally {
      await pool.close();
    }
  });
});
