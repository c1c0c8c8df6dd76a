/**
 * `GET /permissions` benchmark (not a test): a user who belongs to G groups and holds a
 * permission, through those groups, on N records.
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/permissions.ts \
 *     [--objects 100000] [--groups 5000] [--samples 20] [--url postgresql://postgres@127.0.0.1:5432/test]
 *
 * On PostgreSQL, in a fresh schema `quire_bench_<random>` dropped at the end. Groups, records
 * and their ACEs are inserted with SQL in the shape the SQL storage writes them; the bucket,
 * collection and the user's identity go through the HTTP API. The server runs in this process
 * (the client here makes one request at a time, so they do not compete much).
 *
 * Prints p50/p95 of: `GET /` (the 5,000 group principals are expanded on every request), the
 * first page of `GET /permissions` (default page size), a filtered page, and the time to walk
 * every page of the listing.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { buildServer } from '../src/app.js';
import { loadSettings } from '../src/config.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '100000' },
    groups: { type: 'string', default: '5000' },
    samples: { type: 'string', default: '20' },
    url: { type: 'string', default: process.env.QUIRE_BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    /** Keep the schema (to study query plans). */
    keep: { type: 'boolean', default: false },
  },
});
const objects = Number(values.objects);
const groups = Number(values.groups);
const samples = Number(values.samples);
const schema = `quire_bench_${randomBytes(4).toString('hex')}`;
const AUTH = `Basic ${Buffer.from('reader:reader').toString('base64')}`;
const OWNER = `Basic ${Buffer.from('owner:owner').toString('base64')}`;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function time(label: string, fn: () => Promise<void>): Promise<void> {
  const durations: number[] = [];
  await fn(); // warm-up
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await fn();
    durations.push(performance.now() - start);
  }
  durations.sort((a, b) => a - b);
  console.log(
    `  ${label.padEnd(48)} p50 ${percentile(durations, 50).toFixed(1).padStart(8)} ms   ` +
      `p95 ${percentile(durations, 95).toFixed(1).padStart(8)} ms`,
  );
}

const storage = await createPostgresStorage({ url: values.url, schema, autoMigrate: true, poolSize: 4 });
const settings = loadSettings({ env: {}, overrides: { userid_hmac_secret: 'bench', log_level: 'silent' } });
const app = await buildServer({ settings, storage, logger: false });
const client = new pg.Client({ connectionString: values.url, options: `-c search_path=${schema}` });
client.on('error', () => {}); // PostgreSQL ended the session: the next query fails, no unhandled 'error' event
await client.connect();
try {
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  const call = async (path: string, auth = AUTH) => {
    const res = await fetch(`${base}/v1${path}`, { headers: { authorization: auth } });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return {
      body: (await res.json()) as { data: unknown[]; user?: { id: string } },
      next: res.headers.get('next-page'),
    };
  };
  const put = async (path: string) => {
    const res = await fetch(`${base}/v1${path}`, { method: 'PUT', headers: { authorization: OWNER } });
    if (res.status >= 300) throw new Error(`${path}: ${res.status}`);
  };
  await put('/buckets/bench');
  await put('/buckets/bench/collections/items');
  const reader = (await call('/')).body.user!.id;

  console.log(
    `GET /permissions benchmark: PostgreSQL, ${objects.toLocaleString('en')} records, ` +
      `${groups.toLocaleString('en')} groups (schema ${schema})`,
  );
  const loadStart = performance.now();
  // The groups, each listing the reader; every record grants write to one of them.
  await client.query(
    `INSERT INTO objects (parent_id, resource_name, id, last_modified, data)
     SELECT '/buckets/bench', 'group', 'g' || i, 1000 + i, jsonb_build_object('members', jsonb_build_array($1::text))
     FROM generate_series(1, $2::int) AS i`,
    [reader, groups],
  );
  await client.query(
    `INSERT INTO group_members (group_uri, principal)
     SELECT '/buckets/bench/groups/g' || i, $1 FROM generate_series(1, $2::int) AS i`,
    [reader, groups],
  );
  await client.query(
    `INSERT INTO objects (parent_id, resource_name, id, last_modified, data)
     SELECT '/buckets/bench/collections/items', 'record', 'r' || i, 1000 + i, '{}'::jsonb
     FROM generate_series(1, $1::int) AS i`,
    [objects],
  );
  await client.query(
    `INSERT INTO access_control_entries (object_id, permission, principal)
     SELECT '/buckets/bench/collections/items/records/r' || i, 'write', '/buckets/bench/groups/g' || (1 + i % $2::int)
     FROM generate_series(1, $1::int) AS i`,
    [objects, groups],
  );
  await client.query('ANALYZE');
  console.log(`  loaded in ${((performance.now() - loadStart) / 1000).toFixed(1)} s`);

  const principals = (await call('/')).body as unknown as { user: { principals: string[] } };
  console.log(`  the reader holds ${principals.user.principals.length.toLocaleString('en')} principals`);

  await time('GET / (principals expanded)', async () => void (await call('/')));
  await time('GET /permissions?_limit=100 (first page)', async () => void (await call('/permissions?_limit=100')));
  await time('GET /permissions (first page, default size 10,000)', async () => void (await call('/permissions')));
  await time('GET /permissions?record_id=r4242', async () => void (await call('/permissions?record_id=r4242')));

  if (values.keep) process.exit(0);
  let pages = 0;
  let entries = 0;
  const walkStart = performance.now();
  for (let next: string | null = '/permissions'; next; ) {
    const page = await call(next);
    pages += 1;
    entries += page.body.data.length;
    next = page.next ? page.next.slice(page.next.indexOf('/v1') + 3) : null;
  }
  const walk = performance.now() - walkStart;
  console.log(`  every page: ${entries.toLocaleString('en')} entries in ${pages} pages, ${(walk / 1000).toFixed(2)} s`);
} finally {
  await app.close();
  await storage.close();
  if (values.keep) console.log(`  kept schema ${schema}`);
  else await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}
