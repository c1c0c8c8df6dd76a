/**
 * A collection deleted and re-created through one server process while another process keeps
 * writing to it and serving it (two `quire start` processes on one PostgreSQL schema, issue 29
 * defect 3). Whatever interleaving happens, the re-created list never answers for the old one:
 * every record that survived is above every record the deletion took, and a client that synced
 * up to any of those old timestamps, polling either process, is told the list moved past it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useCli } from './helpers/cli.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable, runAsAdmin } from './helpers/postgres.js';

const pgReason = await postgresUnavailable('recreated-scopes-processes.test.ts');
const start = useCli();
const alice = {
  Authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}`,
  'Content-Type': 'application/json',
};

describe.skipIf(pgReason !== undefined)(
  'a collection re-created across two server processes (PostgreSQL)',
  { timeout: 90_000 },
  () => {
    const schema = newSchemaName();
    const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const env = {
      QUIRE_HOST: '127.0.0.1',
      QUIRE_PORT: '0',
      QUIRE_STORAGE_URL: url,
      QUIRE_STORAGE_AUTO_MIGRATE: 'true',
      QUIRE_USERID_HMAC_SECRET: 'recreate-secret',
    };
    beforeAll(() => runAsAdmin(`CREATE SCHEMA ${schema}`));
    afterAll(() => dropSchema(schema));

    it('writes on A racing delete + re-create on B: survivors above every lost record, no old ETag 304', async () => {
      const a = await start(['start'], env).listening;
      const b = await start(['start'], env).listening;
      const call = (base: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
        fetch(`${base}${path}`, {
          method,
          headers: { ...alice, ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      expect((await call(a, 'PUT', 'buckets/shared', {}, {})).status).toBe(201);
      expect((await call(a, 'PUT', 'buckets/shared/collections/tasks', {}, {})).status).toBe(201);
      const records = 'buckets/shared/collections/tasks/records';

      // A writes records one after the other (and reads the list, so that its caches are warm),
      // while B deletes and re-creates the collection three times.
      const written: Array<{ id: string; last_modified: number }> = [];
      const listEtags: number[] = [];
      let writing = true;
      const writer = (async () => {
        for (let i = 0; writing; i++) {
          const response = await call(a, 'PUT', `${records}/r${i}`, {}, { data: { i } });
          if (response.status === 201)
            written.push(((await response.json()) as { data: { id: string; last_modified: number } }).data);
          else expect([403, 404]).toContain(response.status); // between the deletion and the re-creation
          const list = await call(a, 'GET', records);
          if (list.status === 200) listEtags.push(Number(JSON.parse(list.headers.get('etag')!)));
        }
      })();
      for (let round = 0; round < 3; round++) {
        await new Promise((resolve) => setTimeout(resolve, 150));
        expect((await call(b, 'DELETE', 'buckets/shared/collections/tasks')).status).toBe(200);
        expect((await call(b, 'PUT', 'buckets/shared/collections/tasks', {}, {})).status).toBe(201);
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
      writing = false;
      await writer;

      const listed = async (base: string) =>
        (
          (await (await call(base, 'GET', `${records}?_sort=last_modified`)).json()) as {
            data: Array<{ id: string; last_modified: number }>;
          }
        ).data;
      const survivors = await listed(b);
      const kept = new Set(survivors.map((record) => record.id));
      const lost = written.filter((record) => !kept.has(record.id));
      expect(lost.length).toBeGreaterThan(0);
      expect(survivors.length).toBeGreaterThan(0);
      expect(Math.min(...survivors.map((record) => record.last_modified))).toBeGreaterThan(
        Math.max(...lost.map((record) => record.last_modified)),
      );

      // Then B deletes and re-creates it once more, with nothing written since: every timestamp a
      // client could have synced up to, on either process, is behind the re-created list. None is
      // answered 304, and `_since` returns nothing with a timestamp past it.
      const last = Number(JSON.parse((await call(a, 'GET', records)).headers.get('etag')!));
      expect((await call(b, 'DELETE', 'buckets/shared/collections/tasks')).status).toBe(200);
      expect((await call(b, 'PUT', 'buckets/shared/collections/tasks', {}, {})).status).toBe(201);
      const served = [...new Set([last, ...written.map((record) => record.last_modified), ...listEtags])];
      for (const base of [a, b]) {
        expect(await listed(base)).toEqual([]);
        for (const old of served) {
          const cached = await call(base, 'GET', records, { 'If-None-Match': `"${old}"` });
          expect(cached.status, `If-None-Match: "${old}"`).toBe(200);
          const polled = await call(base, 'GET', `${records}?_since=${old}`);
          expect(Number(JSON.parse(polled.headers.get('etag')!)), `_since=${old}`).toBeGreaterThan(old);
          expect(((await polled.json()) as { data: unknown[] }).data).toEqual([]);
        }
      }
    });
  },
);
