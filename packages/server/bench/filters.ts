/**
 * What `like` filters cost each backend, in process (no HTTP): a count over 10,000 objects for
 * patterns that take each path of the SQL (sqlite/queries.ts, sql/queries.ts), then the worst
 * case of a pattern against long strings (20 objects of 100,000 characters), and the reference
 * engine (storage/filters/) on the same objects in memory, as the change monitor runs it.
 *
 *   node --conditions=@quire/source --import tsx bench/filters.ts [sqlite-file,pglite,postgresql]
 *
 * PostgreSQL is QUIRE_TEST_PG_URL (default: the test server), in a throw-away schema.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { matchesFilter } from '../src/storage/filters/evaluate.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { createPgliteStorage, createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import type { Filter, Scope, Storage, StoredObject } from '../src/storage/types.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable } from '../test/helpers/postgres.js';
import { formatNumber } from './support.js';

const OBJECTS = 10_000;
const LONG_OBJECTS = 20;
const LONG = 100_000;
const MEASURE_MS = 1_500;

/** Patterns, each named by the path it takes in SQLite. */
const PATTERNS: Record<string, string> = {
  'ASCII, no k/i (LIKE)': '*ber 9*',
  'with k and i (replace + LIKE)': 'kit*',
  'non-ASCII (replace + LIKE)': 'émile',
  '40-character piece (quire_like)': `*${'x'.repeat(40)}*`,
};
const WORST = `${'a'.repeat(255)}b`;

interface Backend {
  name: string;
  open: () => Promise<Storage>;
  cleanup?: () => Promise<void>;
}

const record = (i: number) => ({ title: `Émile Kitten number ${i}`, n: i });

/** Mean milliseconds per call of `fn`, after a warm-up. */
async function measure(fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 3; i++) await fn();
  let calls = 0;
  const start = performance.now();
  while (calls < 5 || performance.now() - start < MEASURE_MS) {
    await fn();
    calls++;
  }
  return (performance.now() - start) / calls;
}

const like = (value: string): Filter[] => [{ field: 'title', operator: 'like', value }];

async function run(backend: Backend): Promise<Record<string, number>> {
  const storage = await backend.open();
  try {
    const scope: Scope = { resourceName: 'record', parentId: `/buckets/bench/collections/${randomUUID()}` };
    for (let start = 0; start < OBJECTS; start += 1_000) {
      await storage.transaction((session) =>
        session.objects.insertMany(
          scope,
          Array.from({ length: 1_000 }, (_, i) => ({ id: randomUUID(), data: record(start + i) })),
        ),
      );
    }
    const long: Scope = { resourceName: 'record', parentId: `/buckets/bench/collections/${randomUUID()}` };
    await storage.transaction((session) =>
      session.objects.insertMany(
        long,
        Array.from({ length: LONG_OBJECTS }, () => ({ id: randomUUID(), data: { title: 'a'.repeat(LONG) } })),
      ),
    );
    const figures: Record<string, number> = {};
    for (const [name, pattern] of Object.entries(PATTERNS)) {
      figures[`${name}, 10k`] = await measure(() =>
        storage.read((session) => session.objects.count(scope, like(pattern))),
      );
    }
    figures[`255 a then b, ${LONG_OBJECTS} × 100k`] = await measure(() =>
      storage.read((session) => session.objects.count(long, like(WORST))),
    );
    figures['*ber 9* (3 pieces), 20 × 100k'] = await measure(() =>
      storage.read((session) => session.objects.count(long, like('*ber*9*'))),
    );
    return figures;
  } finally {
    await storage.close();
    await backend.cleanup?.();
  }
}

/** The reference engine on the same objects in memory. */
async function reference(): Promise<Record<string, number>> {
  const objects: StoredObject[] = Array.from({ length: OBJECTS }, (_, i) => ({
    id: String(i),
    last_modified: i,
    ...record(i),
  }));
  const longs: StoredObject[] = Array.from({ length: LONG_OBJECTS }, (_, i) => ({
    id: String(i),
    last_modified: i,
    title: 'a'.repeat(LONG),
  }));
  const count = (list: StoredObject[], pattern: string) =>
    list.filter((object) => matchesFilter(object, like(pattern)[0]!)).length;
  const figures: Record<string, number> = {};
  for (const [name, pattern] of Object.entries(PATTERNS))
    figures[`${name}, 10k`] = await measure(async () => count(objects, pattern));
  figures[`255 a then b, ${LONG_OBJECTS} × 100k`] = await measure(async () => count(longs, WORST));
  figures['*ber 9* (3 pieces), 20 × 100k'] = await measure(async () => count(longs, '*ber*9*'));
  return figures;
}

const wanted = new Set((process.argv[2] ?? 'sqlite-file,pglite,postgresql').split(','));
const backends: Backend[] = [];
let directory: string | undefined;
if (wanted.has('sqlite-file')) {
  backends.push({
    name: 'sqlite-file',
    open: async () => {
      directory = await mkdtemp(join(tmpdir(), 'quire-bench-filters-'));
      return createSqliteStorage({ path: join(directory, 'bench.sqlite') });
    },
    cleanup: async () => rm(directory!, { recursive: true, force: true }),
  });
}
if (wanted.has('pglite')) backends.push({ name: 'pglite', open: () => createPgliteStorage() });
if (wanted.has('postgresql')) {
  const reason = await postgresUnavailable('bench/filters.ts');
  if (reason === undefined) {
    const schema = newSchemaName();
    backends.push({
      name: 'postgresql',
      open: () => createPostgresStorage({ url: PG_URL, schema, autoMigrate: true }),
      cleanup: () => dropSchema(schema),
    });
  }
}

const results: Record<string, Record<string, number>> = {};
for (const backend of backends) results[backend.name] = await run(backend);
results['reference (memory)'] = await reference();
const rows = Object.keys(Object.values(results)[0] ?? {});
console.log(`like_ filters: ms per count (${OBJECTS} objects of ~30 characters; ${LONG_OBJECTS} of ${LONG})`);
console.log(
  ['', ...Object.keys(results)].map((cell, index) => (index === 0 ? cell.padEnd(42) : cell.padStart(20))).join(''),
);
for (const row of rows)
  console.log(
    [row.padEnd(42), ...Object.values(results).map((figures) => formatNumber(figures[row]!, 2).padStart(20))].join(''),
  );
