/**
 * What each input limit buys (not a test): the time one request takes, and the longest stall of
 * the event loop while it runs, on a collection of 10 MB of records (10,000 records of ~1 KB) and
 * on the change monitor over 2,000 collections, on both stores, for a list of the input's size.
 * The defaults of `engine/settings.ts` (the input limits) were chosen from these figures: the
 * worst allowed value of each must cost a request well under the 50 ms a request may block the
 * event loop.
 *
 *   cd packages/server && node --conditions=@quire/source --import tsx bench/input-costs.ts [--only embedded]
 *
 * The server is in this process (inject): on the embedded store the elapsed time is the stall.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../src/app.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { measureStalls } from '../test/helpers/event-loop.js';
import { dropSchema, newSchemaName, PG_URL } from '../test/helpers/postgres.js';
import { AUTH, benchSettings } from './support.js';

const RECORDS = 10_000;
const COLLECTIONS = 2_000;
const LIST = '/v1/buckets/b/collections/c/records';
const MONITOR = '/v1/buckets/monitor/collections/changes/records';
/** Limits far above any default: the costs of the inputs are measured here, not refused. */
const UNBOUNDED = {
  max_query_sort_fields: 1000,
  max_query_filters: 100_000,
  max_query_like_length: 100_000,
  max_query_params: 100_000,
  max_query_list_length: 1_000_000,
  max_query_contains_length: 1_000_000,
  max_query_field_length: 1_000_000,
  max_query_field_depth: 100_000,
  max_query_fields: 100_000,
  max_path_bytes: 10_000_000,
  max_path_segments: 100_000,
};

function record(i: number): Record<string, unknown> {
  return {
    title: `title ${i} ${'lorem ipsum '.repeat(8)}`,
    n: i,
    done: i % 2 === 0,
    tags: [`t${i % 7}`, `t${i % 11}`, `t${i % 13}`, 'common', 'x'],
    nested: { a: { b: { c: i % 100, d: 'deep' } } },
    body: 'dolor sit amet '.repeat(45),
  };
}

async function seed(storage: Storage): Promise<void> {
  await storage.transaction(async (session) => {
    await session.objects.create({ resourceName: 'bucket', parentId: '' }, 'b', {});
    await session.permissions.set('/buckets/b', { read: ['system.Everyone'] });
    await session.objects.create({ resourceName: 'collection', parentId: '/buckets/b' }, 'c', {});
    for (let start = 0; start < RECORDS; start += 1000) {
      const objects = Array.from({ length: 1000 }, (_, k) => ({ id: `r${start + k}`, data: record(start + k) }));
      await session.objects.insertMany({ resourceName: 'record', parentId: '/buckets/b/collections/c' }, objects);
    }
  });
  for (let start = 0; start < COLLECTIONS; start += 500) {
    await storage.transaction(async (session) => {
      const scope = { resourceName: 'collection', parentId: '/buckets/b' };
      for (let k = start; k < start + 500; k++) {
        await session.objects.create(scope, `m${k}`, {});
        await session.objects.create({ resourceName: 'record', parentId: `/buckets/b/collections/m${k}` }, 'r', {});
      }
    });
  }
}

interface Case {
  name: string;
  url: string;
}

const values = (count: number, make: (i: number) => string) =>
  Array.from({ length: count }, (_, i) => make(i)).join(',');
const deepPath = (depth: number) => Array.from({ length: depth }, (_, i) => `f${i}`).join('.');
const longField = (length: number) => 'f'.repeat(length);
const fields = (count: number) => Array.from({ length: count }, (_, i) => `field${i}.sub`).join(',');
const sorts = (count: number, depth: number) =>
  Array.from({ length: count }, (_, i) => `-${deepPath(depth)}${i}`).join(',');

function cases(): Case[] {
  const list: Case[] = [{ name: 'page, no filter', url: LIST }];
  for (const n of [100, 1000, 10_000])
    list.push(
      { name: `in_title ${n} values`, url: `${LIST}?in_title=${values(n, (i) => `"v${i}"`)}` },
      { name: `exclude_n ${n} values`, url: `${LIST}?exclude_n=${values(n, (i) => String(i * 3))}&_limit=10` },
      { name: `contains_any_tags ${n} values`, url: `${LIST}?contains_any_tags=[${values(n, (i) => `"z${i}"`)}]` },
      { name: `monitor exclude_collection ${n}`, url: `${MONITOR}?exclude_collection=${values(n, (i) => `m${i}`)}` },
      { name: `monitor in_collection ${n}`, url: `${MONITOR}?in_collection=${values(n, (i) => `q${i}`)}` },
    );
  for (const n of [10, 100, 1000]) list.push({ name: `_fields ${n} fields`, url: `${LIST}?_fields=${fields(n)}` });
  for (const n of [10, 100, 1000])
    list.push({ name: `monitor _fields ${n} fields`, url: `${MONITOR}?_fields=${fields(n)}` });
  for (const depth of [8, 16, 64, 256])
    list.push(
      { name: `eq_ path depth ${depth}`, url: `${LIST}?eq_${deepPath(depth)}=1` },
      { name: `monitor eq_ path depth ${depth}`, url: `${MONITOR}?eq_${deepPath(depth)}=1` },
    );
  for (const length of [256, 1024, 8192])
    list.push({ name: `eq_ field of ${length} chars`, url: `${LIST}?eq_${longField(length)}=1` });
  for (const [count, depth] of [
    [1, 16],
    [10, 4],
    [10, 16],
  ] as const)
    list.push(
      { name: `_sort ${count} paths of depth ${depth}`, url: `${LIST}?_sort=${sorts(count, depth)}` },
      { name: `monitor _sort ${count} paths of depth ${depth}`, url: `${MONITOR}?_sort=${sorts(count, depth)}` },
    );
  for (const length of [16, 64, 256])
    list.push(
      { name: `like_title ${length} chars`, url: `${LIST}?like_title=${'*a'.repeat(length / 2 - 1)}*z` },
      {
        name: `like_body ${length} chars`,
        url: `${LIST}?like_body=*${'dolor sit amet '.repeat(30).slice(0, length - 3)}z*`,
      },
      { name: `like_body ${length} wildcards`, url: `${LIST}?like_body=${'*o'.repeat(length / 2 - 1)}*z` },
      {
        name: `monitor like_collection ${length} chars`,
        url: `${MONITOR}?like_collection=${'*m'.repeat(length / 2 - 1)}*z`,
      },
    );
  for (const count of [10, 100, 1000])
    list.push(
      { name: `${count} filters`, url: `${LIST}?${Array.from({ length: count }, (_, i) => `min_n=${i}`).join('&')}` },
      {
        name: `monitor ${count} filters`,
        url: `${MONITOR}?${Array.from({ length: count }, (_, i) => `min_last_modified=${i}`).join('&')}`,
      },
    );
  return list;
}

async function measure(app: FastifyInstance, item: Case): Promise<string> {
  const send = () => app.inject({ url: item.url, headers: { authorization: AUTH } });
  await send(); // warm
  let best = { elapsed: Number.POSITIVE_INFINITY, stall: Number.POSITIVE_INFINITY, status: 0, bytes: 0 };
  for (let run = 0; run < 2; run++) {
    const { result, elapsedMs, worstMs } = await measureStalls(send);
    if (elapsedMs < best.elapsed)
      best = { elapsed: elapsedMs, stall: worstMs, status: result.statusCode, bytes: result.rawPayload.length };
  }
  const answer = `${(best.bytes / 1e6).toFixed(1)} MB`;
  return `| ${item.name} | ${best.status} | ${answer} | ${best.elapsed.toFixed(0)} ms | ${best.stall.toFixed(0)} ms |`;
}

async function run(name: string, storage: Storage): Promise<void> {
  await seed(storage);
  const app = await buildServer({
    storage,
    settings: benchSettings({ ...UNBOUNDED, changes_enabled: true } as never),
    logger: false,
  });
  console.log(`\n### ${name}\n\n| input | status | answer | elapsed | worst stall |\n|---|---|---|---|---|`);
  for (const item of cases()) console.log(await measure(app, item));
  await app.close();
}

async function main(): Promise<void> {
  const { values: options } = parseArgs({ options: { only: { type: 'string' } } });
  const only = options.only?.split(',') ?? ['embedded', 'postgresql'];
  if (only.includes('embedded')) {
    const dir = await mkdtemp(join(tmpdir(), 'quire-input-costs-'));
    const storage = await createSqliteStorage({ path: join(dir, 'quire.sqlite') });
    try {
      await run('embedded', storage);
    } finally {
      await storage.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
  if (only.includes('postgresql')) {
    const schema = newSchemaName();
    const storage = await createPostgresStorage({ url: PG_URL, schema, autoMigrate: true });
    try {
      await run('postgresql', storage);
    } finally {
      await storage.close();
      await dropSchema(schema);
    }
  }
}

await main();
