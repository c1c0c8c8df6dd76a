/**
 * `quire export` / `quire import` (src/transfer): a store with a few thousand records, tombstones,
 * permissions, groups and history goes out and back in — into a fresh store of each kind — and
 * the second export is byte for byte the first; clients see the same objects and ETags, and
 * `_since` keeps working. An import over data is refused unless asked to replace it.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { exportStore } from '../src/transfer/export.js';
import { ImportError, importStore } from '../src/transfer/import.js';
import { describeOnBackends, postgresSkipReason } from './helpers/backends.js';
import { testSettings } from './helpers/embedded-server.js';
import { useCli } from './helpers/cli.js';
import { dropSchema, newSchemaName, PG_URL } from './helpers/postgres.js';

const alice = { authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` };
const bob = { authorization: `Basic ${Buffer.from('bob:pw').toString('base64')}` };
const RECORDS = 3000;

async function exportText(storage: Storage, pageSize = 500): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  await exportStore(storage, out, { pageSize });
  out.end();
  return Buffer.concat(chunks).toString('utf8');
}

async function fresh(kind: 'embedded' | 'postgresql'): Promise<{ storage: Storage; dispose: () => Promise<void> }> {
  if (kind === 'embedded') {
    const dir = await mkdtemp(join(tmpdir(), 'quire-import-'));
    const storage = await createSqliteStorage({ path: join(dir, 'quire.sqlite') });
    const dispose = async () => {
      await storage.close();
      await rm(dir, { recursive: true, force: true });
    };
    return { storage, dispose };
  }
  const schema = newSchemaName();
  const storage = await createPostgresStorage({ url: PG_URL, schema, autoMigrate: true, poolSize: 4 });
  const dispose = async () => {
    await storage.close();
    await dropSchema(schema);
  };
  return { storage, dispose };
}

describeOnBackends('export / import', { timeout: 180_000 }, (backend) => {
  let app: FastifyInstance;
  let original: string;

  beforeAll(async () => {
    app = await backend.serverWith({ history_enabled: true, quotas_enabled: true });
    const send = (method: string, url: string, body?: unknown, headers = alice) =>
      app.inject({ method: method as never, url: `/v1${url}`, headers, ...(body ? { payload: body } : {}) });
    await send('PUT', '/buckets/b1', { data: { title: 'één' }, permissions: { read: ['system.Authenticated'] } });
    const bobId = (await send('GET', '/', undefined, bob)).json().user.id as string;
    await send('PUT', '/buckets/b1/groups/friends', { data: { members: [bobId, 'account:carol'] } });
    await send('PUT', '/buckets/b1/collections/tasks', { data: { z: 1, a: { y: [1, 2], b: null } } });
    await send('PUT', '/buckets/b1/collections/tasks/records/shared', {
      data: { x: 1 },
      permissions: { write: ['/buckets/b1/groups/friends'] },
    });
    // Bulk records (with no ACL), then some deleted: tombstones.
    const requests = Array.from({ length: 20 }, (_, i) => ({
      method: 'PUT',
      path: `/buckets/b1/collections/tasks/records/h${i}`,
      body: { data: { i } },
    }));
    await send('POST', '/batch', { requests });
    await backend.storage.transaction((session) =>
      session.objects.insertMany(
        { resourceName: 'record', parentId: '/buckets/b1/collections/tasks' },
        Array.from({ length: RECORDS }, (_, i) => ({
          id: `r${i}`,
          data: { n: i, text: `t${i % 7}`, nested: { k: [i, 'é'] } },
        })),
      ),
    );
    for (let i = 0; i < 10; i++) await send('DELETE', `/buckets/b1/collections/tasks/records/h${i}`);
    await send('PUT', '/buckets/b2', {}, bob);
    await send('PUT', '/buckets/b2/collections/empty', {}, bob);
    await send('PUT', '/buckets/b3', {});
    await send('DELETE', '/buckets/b3');
    // Readers drain the history first: everything is in it.
    expect((await send('GET', '/buckets/b1/history')).statusCode).toBe(200);
    original = await exportText(backend.storage);
  }, 180_000);

  it('writes every kind of object, sorted keys, one per line', () => {
    const lines = original.trimEnd().split('\n');
    expect(lines[0]).toBe('{"format":"quire-export","version":1}');
    const parsed = lines.map((line) => JSON.parse(line));
    const records = parsed.filter((line) => line.resource === 'record');
    expect(records.length).toBe(RECORDS + 21);
    expect(records.filter((line) => line.object.deleted)).toHaveLength(10);
    expect(parsed.some((line) => line.resource === 'history')).toBe(true);
    expect(parsed.some((line) => line.resource === 'quota')).toBe(true);
    expect(parsed.find((line) => line.resource === 'bucket' && line.object.id === 'b3').object.deleted).toBe(true);
    const shared = records.find((line) => line.object.id === 'shared');
    expect(shared.permissions.write).toContain('/buckets/b1/groups/friends');
    expect(lines.find((line) => line.includes('"id":"tasks"'))).toContain('"a":{"b":null,"y":[1,2]}');
  });

  for (const kind of ['embedded', 'postgresql'] as const) {
    it.skipIf(kind === 'postgresql' && postgresSkipReason !== undefined)(
      `round trip into a fresh ${kind} store: byte-identical export, same ETags, _since keeps working`,
      async () => {
        const target = await fresh(kind);
        try {
          expect(
            (await importStore(target.storage, Readable.from([original]), { batchSize: 700, replace: false })).objects,
          ).toBeGreaterThan(RECORDS);
          expect(await exportText(target.storage, 333)).toBe(original);

          const copy = await buildServer({
            settings: testSettings({ history_enabled: true, quotas_enabled: true }),
            storage: target.storage,
            logger: false,
          });
          try {
            const list = '/v1/buckets/b1/collections/tasks/records?_limit=5&_sort=-last_modified';
            const [before, after] = await Promise.all(
              [app, copy].map((server) => server.inject({ method: 'GET', url: list, headers: alice })),
            );
            expect(after!.statusCode).toBe(200);
            expect(after!.headers.etag).toBe(before!.headers.etag);
            expect(after!.json()).toEqual(before!.json());
            // Bob is in the group: its membership came along (he may write the shared record).
            expect(
              (
                await copy.inject({
                  method: 'PATCH',
                  url: '/v1/buckets/b1/collections/tasks/records/shared',
                  headers: bob,
                  payload: { data: { y: 2 } },
                })
              ).statusCode,
            ).toBe(200);
            expect(
              (
                await copy.inject({
                  method: 'PATCH',
                  url: '/v1/buckets/b1/collections/tasks/records/r1',
                  headers: bob,
                  payload: { data: { y: 2 } },
                })
              ).statusCode,
            ).toBe(403);
            // A client synced up to the old ETag gets only what changed since, tombstones included.
            const etag = Number(String(before!.headers.etag).replaceAll('"', ''));
            await copy.inject({ method: 'DELETE', url: '/v1/buckets/b1/collections/tasks/records/r5', headers: alice });
            const since = await copy.inject({
              method: 'GET',
              url: `/v1/buckets/b1/collections/tasks/records?_since=${etag}`,
              headers: alice,
            });
            expect(
              since
                .json()
                .data.map((r: { id: string }) => r.id)
                .sort(),
            ).toEqual(['r5', 'shared']);
          } finally {
            await copy.close();
          }
          // Over data: refused, unless replacing.
          await expect(
            importStore(target.storage, Readable.from([original]), { batchSize: 700, replace: false }),
          ).rejects.toThrow(ImportError);
          await importStore(target.storage, Readable.from([original]), { batchSize: 5000, replace: true });
          expect(await exportText(target.storage)).toBe(original);
        } finally {
          await target.dispose();
        }
      },
    );
  }

  it('refuses what is not an export', async () => {
    const target = await fresh('embedded');
    try {
      await expect(
        importStore(target.storage, Readable.from(['{"format":"other"}\n']), { batchSize: 10, replace: false }),
      ).rejects.toThrow(/not a quire-export stream/);
      await expect(
        importStore(target.storage, Readable.from(['{"format":"quire-export","version":1}\n{"x":1}\n']), {
          batchSize: 10,
          replace: false,
        }),
      ).rejects.toThrow(/line 2: neither an object nor a scope line/);
    } finally {
      await target.dispose();
    }
  });
});

describeOnBackends('quire export / quire import (CLI)', { timeout: 300_000 }, (backend) => {
  const run = useCli();
  it.runIf(backend.name === 'embedded')(
    'exports a data directory to a file and imports it into another; refuses a store holding data without --replace',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'quire-cli-transfer-'));
      try {
        const source = join(dir, 'a');
        await mkdir(source, { recursive: true });
        const app = await buildServer({
          settings: testSettings({}),
          storage: await createSqliteStorage({ path: join(source, 'quire.sqlite') }),
          logger: false,
        });
        await app.inject({ method: 'PUT', url: '/v1/buckets/b', headers: alice });
        await app.inject({ method: 'PUT', url: '/v1/buckets/b/collections/c', headers: alice });
        await app.inject({
          method: 'PUT',
          url: '/v1/buckets/b/collections/c/records/r',
          headers: alice,
          payload: { data: { x: 1 } },
        });
        await app.close();
        await app.services.storage.close();
        const file = join(dir, 'dump.ndjson');
        const exported = run(['export', '--output', file], { QUIRE_DATA_DIR: source });
        expect(await exported.exited).toBe(0);
        const dump = await readFile(file, 'utf8');
        expect(dump).toContain('"id":"r"');
        const target = join(dir, 'b');
        expect(await run(['import', '--input', file], { QUIRE_DATA_DIR: target }).exited).toBe(0);
        const again = run(['import', '--input', file], { QUIRE_DATA_DIR: target });
        expect(await again.exited).toBe(1);
        expect(again.output()).toContain('already holds data');
        expect(await run(['import', '--input', file, '--replace'], { QUIRE_DATA_DIR: target }).exited).toBe(0);
        const file2 = join(dir, 'dump2.ndjson');
        expect(await run(['export', '-o', file2], { QUIRE_DATA_DIR: target }).exited).toBe(0);
        expect(await readFile(file2, 'utf8')).toBe(dump);
        await writeFile(join(dir, 'bad.ndjson'), 'nope\n');
        const bad = run(['import', '--input', join(dir, 'bad.ndjson')], { QUIRE_DATA_DIR: join(dir, 'c') });
        expect(await bad.exited).toBe(1);
        expect(bad.output()).toContain('quire import: line 1: not JSON');
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
