/**
 * Readers on a hot standby: a private primary and a streaming replica of it (pg_basebackup -R),
 * a writer process on the primary and a `readonly` process on the replica. A write on the
 * primary becomes visible through the reader after the replication lag, and `_since` polls
 * through the reader, while the writer writes, never get an ETag ahead of their data: every write
 * at or below a poll's ETag is in that poll (or an earlier one). Skips with its reason where
 * initdb / pg_basebackup are missing (a failure under QUIRE_TEST_REQUIRE_PG, as in CI).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useCli } from './helpers/cli.js';
import { callApi, type Change, useReplication } from './helpers/replication.js';

const start = useCli();
const alice = { Authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` };
const RECORDS = 'buckets/shared/collections/tasks/records';
const ENV = { QUIRE_HOST: '127.0.0.1', QUIRE_PORT: '0', QUIRE_USERID_HMAC_SECRET: 'replica-secret' };
const STATEMENT_LOG = fileURLToPath(new URL('./helpers/statement-log.mjs', import.meta.url));

const call = (base: string, method: string, path: string, body?: unknown) => callApi(base, alice, method, path, body);

describe('readers on a hot standby (PostgreSQL streaming replication)', { timeout: 120_000 }, () => {
  const cluster = useReplication('replica-processes.test.ts');
  /** A reader on the standby whose statements are appended to `log`. */
  const startReader = async (env: Record<string, string> = {}) => {
    const log = join(mkdtempSync(join(tmpdir(), 'quire-replica-')), 'reader.log');
    writeFileSync(log, '');
    const reader = await start(['start'], {
      ...ENV,
      QUIRE_STORAGE_URL: cluster.standby.url(),
      QUIRE_READONLY: 'true',
      QUIRE_TEST_STATEMENT_LOG: log,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${STATEMENT_LOG}`,
      ...env,
    }).listening;
    return { reader, log };
  };
  const startWriter = () =>
    start(['start'], { ...ENV, QUIRE_STORAGE_URL: cluster.primary.url(), QUIRE_STORAGE_AUTO_MIGRATE: 'true' })
      .listening;

  it('a write on the primary reaches the reader; its polls never get an ETag ahead of their data', async (context) => {
    if (cluster.reason) return context.skip(cluster.reason);
    const writer = await startWriter();
    expect((await call(writer, 'PUT', 'buckets/shared')).status).toBe(201);
    expect((await call(writer, 'PUT', 'buckets/shared/collections/tasks')).status).toBe(201);
    const { reader, log } = await startReader();
    expect((await call(reader, 'PUT', 'buckets/other')).status).toBe(405);
    const reads = ['', '__heartbeat__', 'buckets/shared', 'buckets/monitor/collections/changes/records', 'permissions'];
    const statuses = await Promise.all(reads.map(async (path) => (await call(reader, 'GET', path)).status));
    expect(statuses).toEqual(reads.map(() => 200));

    // Replication lag, then the reader's scope cache (storage_poll_cache_max_staleness_ms, 200 ms):
    // the listing's ETag may stay behind the record that long, never ahead.
    const lags: string[] = [];
    for (let i = 0; i < 5; i++) {
      const written = await call(writer, 'PUT', `${RECORDS}/lag${i}`, { data: { i } });
      const since = Date.now();
      while ((await call(reader, 'GET', `${RECORDS}/lag${i}`)).status !== 200) await sleep(2);
      const visible = Date.now() - since;
      while ((await call(reader, 'GET', RECORDS)).etag < written.body.data.last_modified) await sleep(2);
      const polled = Date.now() - since;
      expect(polled - visible).toBeLessThan(1_000);
      lags.push(`${visible}/${polled}`);
    }
    console.log(
      `a write on the primary: the record / the listing's ETag through the reader after (ms): ${lags.join(', ')}`,
    );

    // What a 304 poll through the reader costs the standby (the scope timestamp from memory; the
    // shared read cache of parents, ACLs and groups is off there: NOTIFY does not reach a standby).
    const { etag } = await call(reader, 'GET', RECORDS);
    const ifNoneMatch = async () => {
      const response = await fetch(`${reader}${RECORDS}`, { headers: { ...alice, 'If-None-Match': `"${etag}"` } });
      await response.arrayBuffer();
      return response.status;
    };
    for (let i = 0; i < 5; i++) await ifNoneMatch();
    const lines = () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((line) => line && !line.includes('scope_changes') && !line.includes('pg_last_wal'));
    const before = lines().length;
    for (let i = 0; i < 20; i++) expect(await ifNoneMatch()).toBe(304);
    console.log(`20 304 polls through the reader: ${lines().length - before} statements to the standby`);

    // The shared read cache on the standby follows the log: a read permission granted, then
    // revoked, on the primary reaches the reader (NOTIFY would not).
    const bob = { Authorization: `Basic ${Buffer.from('bob:secret').toString('base64')}` };
    const bobId = ((await (await fetch(reader, { headers: bob })).json()) as { user: { id: string } }).user.id;
    const bobReads = async () => (await fetch(`${reader}${RECORDS}`, { headers: bob })).status;
    const until = async (status: number) => {
      const since = Date.now();
      while ((await bobReads()) !== status) {
        expect(Date.now() - since).toBeLessThan(5_000);
        await sleep(5);
      }
      return Date.now() - since;
    };
    expect(await bobReads()).toBe(403);
    const grant = (read: string[]) =>
      call(writer, 'PATCH', 'buckets/shared/collections/tasks', { permissions: { read } });
    expect((await grant([bobId])).status).toBe(200);
    const granted = await until(200);
    expect((await grant([])).status).toBe(200);
    const revoked = await until(403);
    console.log(`through the reader: a grant seen after ${granted} ms, its revocation after ${revoked} ms`);

    // The same through a group: joining, leaving (PATCH of its members) and its deletion.
    const group = 'buckets/shared/groups/team';
    expect((await grant(['/buckets/shared/groups/team'])).status).toBe(200);
    const member = async (members: string[]) =>
      expect((await call(writer, 'PUT', group, { data: { members } })).status).toBeLessThan(300);
    await member([bobId]);
    const joined = await until(200);
    await member([]);
    const left = await until(403);
    await member([bobId]);
    await until(200);
    expect((await call(writer, 'DELETE', group)).status).toBe(200);
    const deleted = await until(403);
    console.log(
      `through the reader: joining a group seen after ${joined} ms, leaving ${left} ms, its deletion ${deleted} ms`,
    );

    // A new bucket whose collection a group of it may read, the group created after bob was refused.
    expect((await call(writer, 'PUT', 'buckets/fresh')).status).toBe(201);
    const freshReads = async () =>
      (await fetch(`${reader}buckets/fresh/collections/c/records`, { headers: bob })).status;
    expect(
      (await call(writer, 'PUT', 'buckets/fresh/collections/c', { permissions: { read: ['/buckets/fresh/groups/g'] } }))
        .status,
    ).toBe(201);
    for (let since = Date.now(); (await freshReads()) !== 403; await sleep(5))
      expect(Date.now() - since).toBeLessThan(5_000);
    expect((await call(writer, 'PUT', 'buckets/fresh/groups/g', { data: { members: [bobId] } })).status).toBe(201);
    const since = Date.now();
    while ((await freshReads()) !== 200) {
      expect(Date.now() - since, 'a new group never reached the reader').toBeLessThan(5_000);
      await sleep(5);
    }
    console.log(`through the reader: a new group seen after ${Date.now() - since} ms`);

    const writes: Array<{ id: string; ts: number }> = [];
    let done = false;
    const writing = (async () => {
      for (let n = 0; n < 40; n++) {
        const id = `r${n % 12}`;
        const reply =
          n % 5 === 4
            ? await call(writer, 'DELETE', `${RECORDS}/${id}`)
            : await call(writer, 'PUT', `${RECORDS}/${id}`, { data: { n } });
        if (reply.status < 300) writes.push({ id, ts: reply.body.data.last_modified });
      }
    })().finally(() => (done = true));
    const polls: Array<{ since: number; etag: number; changes: Change[] }> = [];
    for (let since = 0; ; ) {
      const quiet = done;
      const page = await call(reader, 'GET', `${RECORDS}?_since=${since}&_sort=last_modified`);
      expect(page.status).toBe(200);
      polls.push({ since, etag: page.etag, changes: page.body.data });
      const last = writes.at(-1)?.ts ?? 0;
      if (quiet && page.body.data.length === 0 && page.etag >= last) break;
      since = Math.max(since, page.etag);
    }
    await writing;
    const problems: string[] = [];
    for (const w of writes) {
      const window = polls.find((p) => p.since < w.ts && w.ts <= p.etag);
      const seen = window?.changes.find((change) => change.id === w.id);
      if (!seen || seen.last_modified < w.ts)
        problems.push(`${w.id}@${w.ts} missed (window ${window?.since}..${window?.etag})`);
    }
    console.log(`${writes.length} writes on the primary, ${polls.length} _since polls through the reader`);
    expect(problems).toEqual([]);
  });

  it("a reader filters by the declared indexes its primary's writer built", async (context) => {
    if (cluster.reason) return context.skip(cluster.reason);
    const writer = await startWriter();
    const tasks = 'buckets/indexed/collections/tasks';
    expect((await call(writer, 'PUT', 'buckets/indexed')).status).toBeLessThan(300);
    expect((await call(writer, 'PUT', tasks, { data: { indexes: ['n'] } })).status).toBeLessThan(300);
    for (let n = 0; n < 5; n++)
      expect((await call(writer, 'PUT', `${tasks}/records/r${n}`, { data: { n } })).status).toBe(201);
    const primary = new pg.Client({ connectionString: cluster.primary.url() });
    await primary.connect();
    try {
      const built = "SELECT count(*)::int AS n FROM pg_indexes WHERE indexname LIKE 'quire\\_field\\_%'";
      for (let since = Date.now(); (await primary.query(built)).rows[0].n === 0; await sleep(50))
        expect(Date.now() - since).toBeLessThan(20_000);
    } finally {
      await primary.end();
    }

    const { reader, log } = await startReader({ QUIRE_TEST_STATEMENT_LOG_WIDTH: '4000' });
    // The index's own expression (queries.ts `field`), which only a field known to be indexed gets.
    const byIndex = () => readFileSync(log, 'utf8').includes("data #> '{n}'::text[]");
    const since = Date.now();
    for (;;) {
      const page = await call(reader, 'GET', `${tasks}/records?gt_n=2&_sort=n`);
      expect(page.status).toBe(200);
      expect(page.body.data.map((record) => record.id)).toEqual(['r3', 'r4']);
      if (byIndex()) break;
      expect(Date.now() - since, 'the reader never wrote the index expression').toBeLessThan(15_000);
      await sleep(100);
    }
    console.log(`a reader used the declared index ${Date.now() - since} ms after it started`);
  });
});
