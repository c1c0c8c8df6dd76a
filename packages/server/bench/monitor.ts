/**
 * The change monitor's cost as collections grow (not a test; issue 30 item 2):
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/monitor.ts \
 *     [--url postgresql://postgres@127.0.0.1:5432/test] [--sizes 100,1000,10000] [--runs 15] \
 *     [--store both|postgresql|embedded]
 *
 * One user owns C collections in one bucket (each with its author in `write`, as the API leaves
 * them, and a few with records); other users own buckets of their own beside it (C / 10 more
 * collections the user cannot read). Measured in process through `app.inject` (no socket), the
 * median of `--runs`:
 *   - full:    GET the monitor, no `_since` (every entry the user may read; one page)
 *   - since:   GET `_since=<ETag>` (nothing changed: the usual poll)
 *   - changed: GET `_since=<ETag before one write>` after a write to one collection
 *   - 304:     GET with `If-None-Match: <ETag>`
 *   - stream:  the first snapshot of a stream, until its last entry is received (over HTTP)
 *   - plain:   the ceiling of "full": a records listing of C records as big as entries (another user's
 *              collection, which the monitor's user cannot see), in the same run; "ratio" = full / plain
 *              (issue 39: at most 2)
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { buildServer } from '../src/app.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { benchSettings } from './support.js';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    sizes: { type: 'string', default: '100,1000,10000' },
    runs: { type: 'string', default: '15' },
    store: { type: 'string', default: 'both' },
  },
});

const MONITOR = '/v1/buckets/monitor/collections/changes/records';
const basic = (user: string) => `Basic ${Buffer.from(`${user}:bench`).toString('base64')}`;
const OWNER = basic('owner');
const PLAIN = basic('plain');

async function userId(app: Awaited<ReturnType<typeof buildServer>>, authorization: string): Promise<string> {
  return (await app.inject({ url: '/v1/', headers: { authorization } })).json().user.id as string;
}

/** C collections of `owner` in bucket `mine`, and C / 10 of others, written straight to the store. */
async function seed(storage: Storage, owner: string, count: number): Promise<void> {
  const chunk = 1000;
  const others = Math.max(1, Math.floor(count / 10));
  for (const [bucket, user, size] of [
    ['mine', owner, count],
    ['theirs', 'basicauth:someone-else', others],
  ] as const) {
    await storage.transaction(async (session) => {
      await session.objects.create({ resourceName: 'bucket', parentId: '' }, bucket, {});
      await session.permissions.set(`/buckets/${bucket}`, { write: [user] });
    });
    for (let start = 0; start < size; start += chunk) {
      await storage.transaction(async (session) => {
        for (let i = start; i < Math.min(size, start + chunk); i++) {
          const uri = `/buckets/${bucket}/collections/c${i}`;
          await session.objects.create({ resourceName: 'collection', parentId: `/buckets/${bucket}` }, `c${i}`, {});
          // What creating a collection through the API stores (changes/deletions.ts): its records timestamp.
          await session.objects.timestamp({ resourceName: 'record', parentId: uri });
          await session.permissions.set(uri, { write: [user] });
          if (i % 10 === 0) await session.objects.create({ resourceName: 'record', parentId: uri }, 'r', { n: i });
        }
      });
    }
  }
}

/** The plain listing's collection: C records shaped like monitor entries, of a user the owner is not. */
async function seedPlain(storage: Storage, user: string, count: number): Promise<void> {
  const parent = { resourceName: 'record', parentId: '/buckets/plain/collections/p' };
  await storage.transaction(async (session) => {
    await session.objects.create({ resourceName: 'bucket', parentId: '' }, 'plain', {});
    await session.permissions.set('/buckets/plain', { write: [user] });
    await session.objects.create({ resourceName: 'collection', parentId: '/buckets/plain' }, 'p', {});
  });
  for (let start = 0; start < count; start += 1000) {
    await storage.transaction(async (session) => {
      for (let i = start; i < Math.min(count, start + 1000); i++)
        await session.objects.create(parent, randomUUID(), { bucket: 'mine', collection: `c${i}`, host: '' });
    });
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function timed(runs: number, fn: () => Promise<void>): Promise<number> {
  await fn(); // warm: caches, plans
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return median(times);
}

/** The ceiling of "full": the plain listing of `size` records (seedPlain), timed the same way. */
async function timedPlain(app: Awaited<ReturnType<typeof buildServer>>, size: number, runs: number): Promise<number> {
  const url = '/v1/buckets/plain/collections/p/records';
  const first = await app.inject({ url, headers: { authorization: PLAIN } });
  if ((first.json().data as unknown[]).length !== size) throw new Error('plain: expected C records');
  return timed(runs, async () => {
    const response = await app.inject({ url, headers: { authorization: PLAIN } });
    if (response.statusCode !== 200) throw new Error(`plain: ${response.statusCode}`);
  });
}

/** Opens a stream and resolves once `count` events arrived (ms from the request). */
function streamSnapshot(url: string, count: number): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { agent: false, headers: { authorization: OWNER, accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
        let seen = 0;
        let tail = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const text = tail + chunk;
          const blocks = text.split('\n\n');
          tail = blocks.pop() ?? '';
          for (const block of blocks) if (block.startsWith('id: ')) seen++;
          if (seen >= count) {
            resolve(performance.now() - started);
            req.destroy();
          }
        });
        res.on('error', () => {});
        res.on('close', () => reject(new Error(`stream cut after ${seen} of ${count} events`)));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function measure(
  name: string,
  open: () => Promise<{ storage: Storage; dispose: () => Promise<void>; analyze?: () => Promise<void> }>,
  sizes: number[],
  runs: number,
) {
  for (const size of sizes) {
    const { storage, dispose, analyze } = await open();
    const app = await buildServer({
      settings: benchSettings({ changes_stream_max_per_user: 1000 }),
      storage,
      logger: false,
    });
    try {
      const owner = await userId(app, OWNER);
      const seeding = performance.now();
      // The plain collection first: older than the monitor's collections, as it does not concern its polls.
      await seedPlain(storage, await userId(app, PLAIN), size);
      await seed(storage, owner, size);
      const seeded = performance.now() - seeding;
      // As autovacuum would have by then: the planner's statistics of the loaded tables.
      await analyze?.();
      const get = async (url: string, headers: Record<string, string> = {}, status = 200) => {
        const response = await app.inject({ url, headers: { authorization: OWNER, ...headers } });
        if (response.statusCode !== status)
          throw new Error(`${url}: ${response.statusCode} ${response.body.slice(0, 200)}`);
        return response;
      };
      const first = await get(MONITOR);
      const entries = (first.json().data as unknown[]).length;
      if (entries !== size) throw new Error(`expected ${size} entries, got ${entries}`);
      const etag = first.headers.etag as string;
      const since = etag.replaceAll('"', '');
      const full = await timed(runs, async () => void (await get(MONITOR)));
      const plain = await timedPlain(app, size, runs);
      const unchanged = await timed(runs, async () => void (await get(`${MONITOR}?_since=${since}`)));
      const notModified = await timed(runs, async () => void (await get(MONITOR, { 'if-none-match': etag }, 304)));
      let changed = 0;
      {
        const times: number[] = [];
        for (let i = 0; i < runs; i++) {
          const before = (await get(MONITOR, {}, 200)).headers.etag as string;
          await app.inject({
            method: 'PUT',
            url: `/v1/buckets/mine/collections/c${i}/records/x${i}`,
            headers: { authorization: OWNER },
            payload: { data: {} },
          });
          const started = performance.now();
          const response = await get(`${MONITOR}?_since=${before.replaceAll('"', '')}`);
          times.push(performance.now() - started);
          if ((response.json().data as unknown[]).length !== 1) throw new Error('changed: expected one entry');
        }
        changed = median(times);
      }
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const snapshots: number[] = [];
      let cut = '';
      for (let i = 0; i < Math.min(runs, 5) && !cut; i++) {
        try {
          snapshots.push(await streamSnapshot(`${base}${MONITOR}`, size));
        } catch (error) {
          cut = (error as Error).message;
        }
      }
      console.log(
        `${name.padEnd(10)} C=${String(size).padStart(6)}  full ${full.toFixed(1).padStart(7)} ms  ` +
          `plain ${plain.toFixed(1).padStart(7)} ms  ratio ${(full / plain).toFixed(2)} (ceiling 2)  ` +
          `since ${unchanged.toFixed(1).padStart(6)} ms  changed ${changed.toFixed(1).padStart(6)} ms  ` +
          `304 ${notModified.toFixed(1).padStart(6)} ms  ` +
          `stream snapshot ${cut || `${median(snapshots).toFixed(1).padStart(7)} ms`}  ` +
          `(seeded in ${(seeded / 1000).toFixed(1)} s)`,
      );
    } finally {
      await app.close();
      await storage.close();
      await dispose();
    }
  }
}

async function main(): Promise<void> {
  const sizes = args.sizes!.split(',').map(Number);
  const runs = Number(args.runs);
  console.log(`node ${process.version}; median of ${runs} runs; one user reading C collections (+C/10 unreadable)`);
  if (args.store === 'both' || args.store === 'embedded') {
    await measure(
      'embedded',
      async () => {
        const dir = await mkdtemp(join(tmpdir(), 'quire-monitor-bench-'));
        return {
          storage: await createSqliteStorage({ path: join(dir, 'q.sqlite') }),
          dispose: () => rm(dir, { recursive: true, force: true }),
        };
      },
      sizes,
      runs,
    );
  }
  if (args.store === 'both' || args.store === 'postgresql') {
    const admin = new pg.Client({ connectionString: args.url });
    await admin.connect();
    try {
      await measure(
        'postgresql',
        async () => {
          const schema = `quire_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
          await admin.query(`CREATE SCHEMA ${schema}`);
          const storage = await createPostgresStorage({ url: args.url!, schema, autoMigrate: true, poolSize: 4 });
          return {
            storage,
            analyze: async () =>
              void (await admin.query(
                `ANALYZE ${schema}.objects; ANALYZE ${schema}.timestamps; ANALYZE ${schema}.access_control_entries`,
              )),
            dispose: async () => void (await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)),
          };
        },
        sizes,
        runs,
      );
    } finally {
      await admin.end();
    }
  }
}

await main();
process.exit(0);
