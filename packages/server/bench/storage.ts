/**
 * Micro benchmark of the storage backends, in process (no HTTP): what one request costs the
 * store. The embedded store's target is at least half PostgreSQL's speed on every workload.
 *
 *   node --conditions=@quire/source --import tsx bench/storage.ts \
 *     [sqlite-file,sqlite-file-alone,sqlite-normal,sqlite-memory,pglite,postgresql]
 *
 * Each backend gets a scope of 10,000 objects, then: a get by id, a page of 100 (newest first),
 * a filter on a data field over the 10,000, a page of 100 sorted by a data field, one create in
 * its own transaction, one create per transaction from 16 writers at once (µs per create), 25
 * creates in one transaction. `sqlite-file-alone` is `sqlite-file` committing each transaction
 * alone (no group commit). PostgreSQL is QUIRE_TEST_PG_URL (default: the test server), in a
 * throw-away schema.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createPgliteStorage, createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import type { Scope, Storage } from '../src/storage/types.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable } from '../test/helpers/postgres.js';
import { formatNumber } from './support.js';

const OBJECTS = 10_000;
/** Each measure runs for this long at least (and 20 times at least). */
const MEASURE_MS = 1_500;

interface Backend {
  name: string;
  open: () => Promise<Storage>;
  cleanup?: () => Promise<void>;
}

const record = (i: number) => ({
  title: `Record number ${i}`,
  done: i % 2 === 0,
  tags: ['bench', `t${i % 10}`],
  n: i,
  note: 'lorem ipsum dolor sit amet',
});

/** Mean microseconds per call of `fn`, after a warm-up. */
async function measure(fn: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 20; i++) await fn(i);
  let calls = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(MEASURE_MS) * 1_000_000n;
  while (calls < 20 || process.hrtime.bigint() < deadline) await fn(calls++);
  return Number(process.hrtime.bigint() - start) / 1_000 / calls;
}

async function run(backend: Backend): Promise<Record<string, number>> {
  const storage = await backend.open();
  try {
    const scope: Scope = { resourceName: 'record', parentId: `/buckets/bench/collections/${randomUUID()}` };
    const ids = Array.from({ length: OBJECTS }, () => randomUUID());
    for (let start = 0; start < OBJECTS; start += 1_000) {
      await storage.transaction((session) =>
        session.objects.insertMany(
          scope,
          ids.slice(start, start + 1_000).map((id, i) => ({ id, data: record(start + i) })),
        ),
      );
    }
    const writes: Scope = { resourceName: 'record', parentId: `/buckets/bench/collections/${randomUUID()}` };
    return {
      'get by id': await measure((i) =>
        storage.read((session) => session.objects.get(scope, ids[(i * 7919) % OBJECTS]!)),
      ),
      'list 100 of 10k': await measure(() =>
        storage.read((session) =>
          session.objects.list(scope, { sorting: [{ field: 'last_modified', direction: -1 }], limit: 100 }),
        ),
      ),
      'filter a data field (10k)': await measure(() =>
        storage.read((session) =>
          session.objects.count(scope, [{ field: 'tags', operator: 'contains', value: ['t3'] }]),
        ),
      ),
      'sort by a data field (10k)': await measure(() =>
        storage.read((session) =>
          session.objects.list(scope, {
            sorting: [
              { field: 'title', direction: 1 },
              { field: 'last_modified', direction: -1 },
            ],
            limit: 100,
          }),
        ),
      ),
      'create 1 (own transaction)': await measure(() =>
        storage.transaction((session) => session.objects.create(writes, randomUUID(), record(1))),
      ),
      // 16 writers at once, as 16 requests do: what group commit (commit-groups.ts) is for.
      'create 1, 16 writers at once': await measure(() =>
        Promise.all(
          Array.from({ length: 16 }, () =>
            storage.transaction((session) => session.objects.create(writes, randomUUID(), record(1))),
          ),
        ),
      ).then((perRound) => perRound / 16),
      '25 creates in 1 transaction': await measure(() =>
        storage.transaction(async (session) => {
          for (let i = 0; i < 25; i++) await session.objects.create(writes, randomUUID(), record(i));
        }),
      ),
    };
  } finally {
    await storage.close();
    await backend.cleanup?.();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'quire-bench-storage-'));
  const schema = newSchemaName();
  const backends: Backend[] = [
    { name: 'sqlite-file', open: () => createSqliteStorage({ path: join(dir, 'full.db') }) },
    {
      name: 'sqlite-file-alone',
      open: () => createSqliteStorage({ path: join(dir, 'alone.db'), groupCommitMax: 1 }),
    },
    { name: 'sqlite-normal', open: () => createSqliteStorage({ path: join(dir, 'normal.db'), synchronous: 'NORMAL' }) },
    { name: 'sqlite-memory', open: () => createSqliteStorage() },
    { name: 'pglite', open: () => createPgliteStorage() },
    {
      name: 'postgresql',
      open: () => createPostgresStorage({ url: PG_URL, schema, autoMigrate: true }),
      cleanup: () => dropSchema(schema),
    },
  ];
  const wanted = process.argv[2]?.split(',');
  const results = new Map<string, Record<string, number>>();
  try {
    for (const backend of backends) {
      if (wanted && !wanted.includes(backend.name)) continue;
      if (backend.name === 'postgresql' && (await postgresUnavailable('bench/storage.ts'))) continue;
      process.stderr.write(`${backend.name}…\n`);
      results.set(backend.name, await run(backend));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const names = [...results.keys()];
  const workloads = Object.keys(results.values().next().value ?? {});
  console.log(`µs per operation (${OBJECTS} objects in the scope)\n`);
  console.log(['workload'.padEnd(30), ...names.map((name) => name.padStart(14))].join(''));
  for (const workload of workloads) {
    console.log(
      [workload.padEnd(30), ...names.map((name) => formatNumber(results.get(name)![workload]!, 1).padStart(14))].join(
        '',
      ),
    );
  }
}

await main();
