/**
 * A batch's answer (batch-answer.ts): a batch that only reads streams its entries once past
 * 1 MB, in the very wire format of an answer built whole; a batch that writes is refused (413)
 * and rolled back when its held answer would pass `batch_max_response_bytes`.
 */
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../app.js';
import { loadSettings } from '../config.js';
import { createSqliteStorage } from '../storage/sqlite/sqlite-storage.js';
import type { Storage } from '../storage/types.js';

const auth = { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` };
const RECORDS = '/buckets/b/collections/c/records';
const PAD = 'x'.repeat(100_000);

describe('POST /batch: the answer, streamed or held', () => {
  let storage: Storage;
  let app: Awaited<ReturnType<typeof buildServer>>;
  let base: string;

  beforeAll(async () => {
    storage = await createSqliteStorage();
    const settings = loadSettings({
      env: {},
      configFile: null,
      overrides: { userid_hmac_secret: 's', log_level: 'silent', batch_max_response_bytes: 1024 * 1024 },
    });
    app = await buildServer({ settings, storage, logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    await app.inject({ method: 'PUT', url: '/v1/buckets/b', headers: auth });
    await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c', headers: auth });
    for (let n = 0; n < 8; n++)
      await app.inject({ method: 'PUT', url: `/v1${RECORDS}/r${n}`, headers: auth, payload: { data: { n, PAD } } });
  });
  afterAll(async () => {
    await app.close();
    await storage.close();
  });

  async function batch(requests: unknown[]) {
    const response = await request(`${base}/v1/batch`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ requests }),
    });
    return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
  }

  it('streams a reading batch past 1 MB: chunked, each entry as a request of its own gets it', async () => {
    const paths = [RECORDS, `${RECORDS}?_sort=n`, `${RECORDS}/r1`, `${RECORDS}?_limit=2`];
    const answer = await batch(paths.map((path) => ({ method: 'GET', path })));
    expect(answer.status).toBe(200);
    expect(answer.headers['transfer-encoding']).toBe('chunked');
    expect(answer.headers['content-length']).toBeUndefined();
    expect(answer.text.length).toBeGreaterThan(1024 * 1024);
    const entries = JSON.parse(answer.text).responses as Array<{ status: number; body: unknown }>;
    expect(entries.map((entry) => entry.status)).toEqual([200, 200, 200, 200]);
    for (const [index, path] of paths.entries()) {
      const alone = await app.inject({ url: `/v1${path}`, headers: auth });
      expect(entries[index]?.body).toEqual(alone.json());
    }
  });

  it('holds a small answer whole (Content-Length), as before', async () => {
    const answer = await batch([{ method: 'GET', path: `${RECORDS}/r1?_fields=n` }]);
    expect(answer.headers['content-length']).toBe(String(Buffer.byteLength(answer.text)));
    expect(JSON.parse(answer.text).responses[0].body.data).toEqual({
      id: 'r1',
      last_modified: expect.any(Number),
      n: 1,
    });
  });

  it('refuses a writing batch whose answer would pass batch_max_response_bytes (413) and writes nothing', async () => {
    const answer = await batch([
      { method: 'PUT', path: `${RECORDS}/new`, body: { data: { PAD } } },
      ...Array.from({ length: 4 }, () => ({ method: 'GET', path: RECORDS })),
    ]);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.text)).toMatchObject({ code: 413, errno: 113 });
    expect(JSON.parse(answer.text).message).toMatch(/batch_max_response_bytes \(1048576 bytes\)/);
    expect((await app.inject({ url: `/v1${RECORDS}/new`, headers: auth })).statusCode).toBe(404);
  });
});
