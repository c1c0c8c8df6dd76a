/**
 * Throughput of `quire export` / `quire import` (not a test): N records (default 1,000,000, in
 * collections of 100,000, a record in ten with an ACL, one in fifty deleted) seeded into a fresh
 * PostgreSQL schema, exported to a file, imported into a second fresh schema, exported again;
 * prints records/s for each step and whether the two exports are byte-identical (SHA-256).
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/transfer.ts \
 *     [--records N] [--url postgresql://postgres@127.0.0.1:5432/test] [--page-size 1000] [--batch-size 1000]
 *
 * Both schemas are dropped at the end; the export file lives in a temporary directory.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { finished } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import type { Storage } from '../src/storage/types.js';
import { exportStore } from '../src/transfer/export.js';
import { importStore } from '../src/transfer/import.js';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    url: { type: 'string', default: process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    'page-size': { type: 'string', default: '1000' },
    'batch-size': { type: 'string', default: '1000' },
  },
});
const RECORDS = Number(values.records);
const PER_COLLECTION = 100_000;
const url = values.url!;
const schemas = [`quire_bench_transfer_${Date.now()}_a`, `quire_bench_transfer_${Date.now()}_b`];

async function dropSchemas() {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
}

async function seed(storage: Storage) {
  const started = performance.now();
  await storage.transaction(async (session) => {
    await session.objects.create({ resourceName: 'bucket', parentId: '' }, 'bench', {});
    await session.permissions.set('/buckets/bench', { write: ['account:owner'] });
  });
  for (let done = 0; done < RECORDS; ) {
    const cid = `c${Math.floor(done / PER_COLLECTION)}`;
    const parentId = `/buckets/bench/collections/${cid}`;
    if (done % PER_COLLECTION === 0)
      await storage.transaction((session) =>
        session.objects.create({ resourceName: 'collection', parentId: '/buckets/bench' }, cid, { title: cid }),
      );
    const count = Math.min(5000, RECORDS - done, PER_COLLECTION - (done % PER_COLLECTION));
    const first = done;
    await storage.transaction(async (session) => {
      const scope = { resourceName: 'record', parentId };
      await session.objects.insertMany(
        scope,
        Array.from({ length: count }, (_, i) => ({
          id: `r${first + i}`,
          data: { n: first + i, title: `task ${first + i}`, done: (first + i) % 3 === 0, tags: ['a', 'b'] },
        })),
      );
      for (let i = 0; i < count; i += 10)
        await session.permissions.set(`${parentId}/records/r${first + i}`, {
          write: [`account:u${(first + i) % 100}`],
        });
      for (let i = 5; i < count; i += 50) await session.objects.delete(scope, `r${first + i}`);
    });
    done += count;
  }
  return performance.now() - started;
}

async function exportTo(storage: Storage, file: string) {
  const out = createWriteStream(file);
  const started = performance.now();
  const count = await exportStore(storage, out, { pageSize: Number(values['page-size']) });
  out.end();
  await finished(out);
  return { count, ms: performance.now() - started };
}

async function sha256(file: string) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const dir = await mkdtemp(join(tmpdir(), 'quire-bench-transfer-'));
const [source, target] = await Promise.all(
  schemas.map((schema) => createPostgresStorage({ url, schema, autoMigrate: true, poolSize: 4 })),
);
try {
  const seedMs = await seed(source!);
  console.log(`seeded ${RECORDS} records in ${(seedMs / 1000).toFixed(1)} s`);
  const first = join(dir, 'first.ndjson');
  const exported = await exportTo(source!, first);
  const size = (await stat(first)).size;
  console.log(
    `export: ${exported.count} objects in ${(exported.ms / 1000).toFixed(1)} s = ` +
      `${Math.round(exported.count / (exported.ms / 1000))} objects/s ` +
      `(${(size / 1e6).toFixed(0)} MB, ${(size / 1e6 / (exported.ms / 1000)).toFixed(1)} MB/s)`,
  );
  const started = performance.now();
  const { objects: imported } = await importStore(target!, createReadStream(first), {
    batchSize: Number(values['batch-size']),
    replace: false,
  });
  const importMs = performance.now() - started;
  console.log(
    `import: ${imported} objects in ${(importMs / 1000).toFixed(1)} s = ` +
      `${Math.round(imported / (importMs / 1000))} objects/s`,
  );
  const second = join(dir, 'second.ndjson');
  const again = await exportTo(target!, second);
  console.log(
    `export of the imported store: ${again.count} objects in ${(again.ms / 1000).toFixed(1)} s = ` +
      `${Math.round(again.count / (again.ms / 1000))} objects/s`,
  );
  const [a, b] = await Promise.all([sha256(first), sha256(second)]);
  console.log(`round trip byte-identical: ${a === b ? 'yes' : 'NO'} (sha256 ${a.slice(0, 16)}…)`);
} finally {
  await Promise.all([source!.close(), target!.close()]);
  await dropSchemas();
  await rm(dir, { recursive: true, force: true });
}
