/**
 * Live change streams, replica lag and conformance on readers of a hot standby: a private
 * primary and a streaming replica of it (pg_basebackup -R), a writer process on the primary and
 * two `readonly` processes on the replica, shared by the tests. NOTIFY does not reach a standby:
 * the readers' streams follow the replicated log of changed scopes (changes/feed-log.ts). A
 * write on the primary reaches a stream on a reader at idle within a fraction of a second;
 * racing writers on the primary while clients poll and stream through both readers: nothing
 * missed, nothing duplicated; the conformance suite passes against a reader, its writes sent to
 * the writer and waited for on the reader (the checks of the `readonly` mode included: writes
 * sent to the reader refused with 405); a standby that
 * stops replaying makes its reader's heartbeat fail, and resuming heals it. Skips with its
 * reason where initdb / pg_basebackup are missing (a failure under QUIRE_TEST_REQUIRE_PG, as in CI).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { useCli } from './helpers/cli.js';
import { callApi, type Change, useReplication } from './helpers/replication.js';
import { type EventStreamReader, openEventStream } from './helpers/sse.js';

const start = useCli('file');
const CONFORMANCE_CLI = fileURLToPath(new URL('../../conformance/src/cli.ts', import.meta.url));
const alice = { Authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` };
const MONITOR = 'buckets/monitor/collections/changes/records';
const COLLECTIONS = ['c0', 'c1'];
/**
 * The conformance suites whose answers come from the reader (reads, listings, permissions,
 * groups, changes, the readonly mode); the others check what writes answer, the writer's, as
 * the server's own conformance runs do.
 */
const READ_SUITES = [
  ...['records', 'pagination', 'filtering', 'sorting', 'fields', 'timestamps', 'sync', 'changes'],
  ...['permissions-basic', 'permissions-matrix', 'permissions-endpoint', 'groups'],
  ...['buckets', 'collections', 'default-bucket', 'root', 'operations'],
];
const records = (collection: string) => `buckets/shared/collections/${collection}/records`;

const call = (base: string, method: string, path: string, body?: unknown, auth = alice) =>
  callApi(base, auth, method, path, body);

/** Every event of a stream, kept as it comes (read in the background). */
function collect(stream: EventStreamReader) {
  const events: Array<{ collection: string; lastModified: number }> = [];
  let open = true;
  const reading = (async () => {
    while (open) {
      try {
        const event = await stream.next(500);
        const entry = JSON.parse(event.data) as { bucket: string; collection: string; last_modified: number };
        if (entry.bucket === 'shared') events.push({ collection: entry.collection, lastModified: entry.last_modified });
      } catch (error) {
        if (!/no event/.test((error as Error).message)) throw error;
      }
    }
  })();
  return {
    events,
    async stop() {
      open = false;
      await reading;
      await stream.close();
    },
  };
}

describe('readers on a hot standby: change streams, lag, conformance', { timeout: 180_000 }, () => {
  const cluster = useReplication('replica-readers.test.ts');
  let writer = '';
  let readers: string[] = [];
  beforeAll(async () => {
    if (!cluster.reason) ({ writer, readers } = await deployment(2));
  }, 180_000);

  /** A writer on the primary and `count` readers on the standby, shared by the tests. */
  async function deployment(count: number): Promise<{ writer: string; readers: string[] }> {
    const env = { QUIRE_HOST: '127.0.0.1', QUIRE_PORT: '0', QUIRE_USERID_HMAC_SECRET: 'replica-secret' };
    const reader = {
      ...env,
      QUIRE_STORAGE_URL: cluster.standby.url(),
      QUIRE_READONLY: 'true',
      QUIRE_STORAGE_REPLICA_MAX_LAG_SECONDS: '1',
      QUIRE_METRICS_ENABLED: 'true',
    };
    const writer = await start(['start'], {
      ...env,
      QUIRE_STORAGE_URL: cluster.primary.url(),
      QUIRE_STORAGE_AUTO_MIGRATE: 'true',
    }).listening;
    const readers = await Promise.all(Array.from({ length: count }, () => start(['start'], reader).listening));
    expect((await call(writer, 'PUT', 'buckets/shared')).status).toBeLessThan(300);
    for (const collection of COLLECTIONS)
      expect((await call(writer, 'PUT', `buckets/shared/collections/${collection}`)).status).toBeLessThan(300);
    return { writer, readers };
  }

  it('a write on the primary reaches a stream on a reader within a second at idle', async (context) => {
    if (cluster.reason) return context.skip(cluster.reason);
    const stream = await openEventStream(`${readers[0]}${MONITOR}`, alice);
    try {
      await stream.next(); // a collection as it is
      const latencies: number[] = [];
      for (let i = 0; i < 8; i++) {
        await sleep(300); // idle between writes
        const before = Date.now();
        const written = await call(writer, 'PUT', `${records('c0')}/idle${i}`, { data: { i } });
        const events = await stream.until((event) => Number(event.id) >= written.body.data.last_modified, 10_000);
        latencies.push(Date.now() - before);
        expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ collection: 'c0' });
      }
      latencies.sort((a, b) => a - b);
      console.log(`a write on the primary reached a stream on a reader after (ms, sorted): ${latencies.join(', ')}`);
      expect(latencies[Math.floor(latencies.length / 2)]!).toBeLessThan(5_000);
    } finally {
      await stream.close();
    }
  });

  it('a group granted and a bucket deleted on the primary reach a stream on a reader', async (context) => {
    if (cluster.reason) return context.skip(cluster.reason);
    const bob = { Authorization: `Basic ${Buffer.from('bob:secret').toString('base64')}` };
    const bobId = ((await (await fetch(writer, { headers: bob })).json()) as { user: { id: string } }).user.id;
    const team = 'buckets/team';
    await call(writer, 'PUT', team);
    await call(writer, 'PUT', `${team}/groups/readers`, { data: { members: [] } });
    await call(writer, 'PUT', `${team}/collections/c`, { permissions: { read: [`/${team}/groups/readers`] } });
    await call(writer, 'PUT', `${team}/collections/open`, { permissions: { read: [bobId] } });
    const first = await call(writer, 'PUT', `${team}/collections/open/records/r`, { data: {} });
    while ((await call(readers[0]!, 'GET', `${team}/collections/open/records/r`, undefined, bob)).status !== 200)
      await sleep(20);
    const stream = await openEventStream(`${readers[0]}${MONITOR}?bucket=team`, bob);
    try {
      expect(Number((await stream.next()).id)).toBe(first.body.data.last_modified);
      // Bob joins the group on the primary: the reader's stream reads his groups again.
      let since = Date.now();
      await call(writer, 'PATCH', `${team}/groups/readers`, { data: { members: [bobId] } });
      const written = await call(writer, 'PUT', `${team}/collections/c/records/r`, { data: {} });
      const granted = await stream.until((event) => Number(event.id) >= written.body.data.last_modified, 5_000);
      expect(JSON.parse(granted.at(-1)!.data)).toMatchObject({ collection: 'c' });
      const joined = Date.now() - since;
      since = Date.now();
      await call(writer, 'DELETE', team);
      const deleted = await stream.until((event) => JSON.parse(event.data).deleted === true, 5_000);
      expect(JSON.parse(deleted.at(-1)!.data)).toMatchObject({ bucket: 'team', deleted: true });
      console.log(
        `through a reader's stream: a group grant after ${joined} ms, a bucket deletion after ${Date.now() - since} ms`,
      );
    } finally {
      await stream.close();
    }
  });

  const racing = 'racing writers on the primary; polls and streams through two readers miss nothing, repeat nothing';
  it(racing, async (context) => {
    if (cluster.reason) return context.skip(cluster.reason);
    // What the streams' first events show (the collections as they are) is left out below.
    const before = (await call(writer, 'GET', MONITOR)).etag;
    const streams = await Promise.all(readers.map((reader) => openEventStream(`${reader}${MONITOR}`, alice)));
    await Promise.all(streams.map((stream) => stream.next()));
    const collected = streams.map(collect);

    const writes: Array<{ collection: string; id: string; ts: number }> = [];
    let writing = 3;
    const writers = Array.from({ length: 3 }, async (_, w) => {
      for (let n = 0; n < 30; n++) {
        const collection = COLLECTIONS[(w + n) % COLLECTIONS.length]!;
        const id = `w${w}r${n % 7}`;
        const reply =
          n % 6 === 5
            ? await call(writer, 'DELETE', `${records(collection)}/${id}`)
            : await call(writer, 'PUT', `${records(collection)}/${id}`, { data: { w, n } });
        if (reply.status < 300) writes.push({ collection, id, ts: reply.body.data.last_modified });
      }
    }).map((loop) => loop.finally(() => writing--));

    // Every reader polls every collection with _since, as sync clients do.
    const polling = readers.flatMap((reader) =>
      COLLECTIONS.map(async (collection) => {
        const polls: Array<{ since: number; etag: number; changes: Change[] }> = [];
        for (let since = 0; ; ) {
          const quiet = writing === 0;
          const page = await call(reader, 'GET', `${records(collection)}?_since=${since}&_sort=last_modified`);
          expect(page.status).toBe(200);
          polls.push({ since, etag: page.etag, changes: page.body.data });
          const last = Math.max(0, ...writes.filter((w) => w.collection === collection).map((w) => w.ts));
          if (quiet && page.body.data.length === 0 && page.etag >= last) break;
          since = Math.max(since, page.etag);
        }
        return { collection, polls };
      }),
    );
    await Promise.all(writers);
    const polled = await Promise.all(polling);

    const problems: string[] = [];
    for (const { collection, polls } of polled) {
      for (const w of writes.filter((write) => write.collection === collection)) {
        const window = polls.find((p) => p.since < w.ts && w.ts <= p.etag);
        const seen = window?.changes.find((change) => change.id === w.id);
        if (!seen || seen.last_modified < w.ts) problems.push(`poll: ${collection}/${w.id}@${w.ts} missed`);
      }
    }
    // Each stream: per collection, timestamps only grow (nothing twice), each one of a write, and
    // the last one is the collection's last write (nothing missed).
    const finals = new Map(
      COLLECTIONS.map((c) => [c, Math.max(...writes.filter((w) => w.collection === c).map((w) => w.ts))]),
    );
    const deadline = Date.now() + 10_000;
    for (const [index, { events }] of collected.entries()) {
      for (const collection of COLLECTIONS) {
        const final = finals.get(collection)!;
        while (!events.some((e) => e.collection === collection && e.lastModified === final) && Date.now() < deadline)
          await sleep(20);
        const mine = events
          .filter((e) => e.collection === collection && e.lastModified > before)
          .map((e) => e.lastModified);
        const stamps = new Set(writes.filter((w) => w.collection === collection).map((w) => w.ts));
        if (mine.at(-1) !== final)
          problems.push(`stream ${index}: ${collection} ended at ${mine.at(-1)}, not ${final}`);
        mine.forEach((ts, i) => {
          if (i > 0 && ts <= mine[i - 1]!) problems.push(`stream ${index}: ${collection} ${ts} after ${mine[i - 1]}`);
          if (!stamps.has(ts)) problems.push(`stream ${index}: ${collection} ${ts} is no write's`);
        });
      }
    }
    await Promise.all(collected.map((stream) => stream.stop()));
    const counts = collected.map(({ events }) => events.length).join(' and ');
    const pollCount = polled.reduce((sum, { polls }) => sum + polls.length, 0);
    console.log(
      `${writes.length} writes on the primary; ${pollCount} _since polls, ${counts} stream events through the readers`,
    );
    expect(problems).toEqual([]);
  });

  const conformance = 'the conformance suite passes against a reader, its writes sent to the writer';
  it(conformance, async (context) => {
    if (cluster.reason) return context.skip(cluster.reason);
    const dir = mkdtempSync(join(tmpdir(), 'quire-replica-conformance-'));
    // A fresh vitest run: none of this worker's vitest state may leak into it.
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !/^(VITEST|QUIRE_CONFORMANCE_|NODE_OPTIONS$|TEST$)/.test(key)),
    );
    // Writes to the writer, each waited for on the reader; a write of permissions or groups
    // 250 ms more: the reader's cache of them lags its standby by up to 200 ms (README).
    const through = ['--writer', writer.replace(/\/$/, ''), '--replica-settle', '250', '--replica-wait', '5'];
    const args = [readers[0]!.replace(/\/$/, ''), ...READ_SUITES, ...through, '--report', 'json', '--output', dir];
    const started = Date.now();
    const run = await new Promise<{ code: number; output: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', CONFORMANCE_CLI, ...args],
        { cwd: fileURLToPath(new URL('..', import.meta.url)), env, maxBuffer: 64 * 1024 * 1024, timeout: 280_000 },
        (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: stdout + stderr }),
      ),
    );
    expect(run.code, run.output).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'conformance-report.json'), 'utf8')) as {
      summary: { total: number; passed: number; unexpected: number };
      mode: { readOnly: boolean; writer?: string };
      tests: Array<{ id: string; outcome: string }>;
    };
    expect(report.mode.writer).toBe(writer.replace(/\/$/, ''));
    expect(report.summary.unexpected).toBe(0);
    // The checks of the `readonly` mode ran (the end-of-service and Backoff ones skip: not set).
    const readonly = report.tests.filter((t) => /operations\.test\.ts > .*readonly/i.test(t.id));
    expect(readonly.length).toBeGreaterThanOrEqual(3);
    expect(readonly.filter((t) => t.outcome !== 'passed')).toEqual([]);
    console.log(
      `conformance against a reader (writes to the writer): ${report.summary.passed} of ${report.summary.total} ` +
        `checks passed, in ${Date.now() - started} ms`,
    );
  }, 300_000);

  it('a reader whose standby stops replaying fails its heartbeat, and heals when replay resumes', async (context) => {
    if (cluster.reason) return context.skip(cluster.reason);
    const reader = readers[1]!;
    const heartbeat = async () => (await fetch(`${reader}__heartbeat__`)).status;
    const lag = async () => {
      const text = await (await fetch(new URL('/__metrics__', reader))).text();
      return Number(/^quire_storage_replica_lag_seconds (\S+)$/m.exec(text)?.[1]);
    };
    const until = async (status: number) => {
      const since = Date.now();
      while ((await heartbeat()) !== status) {
        expect(Date.now() - since).toBeLessThan(30_000);
        await sleep(100);
      }
      return Date.now() - since;
    };
    // An idle primary is not lag: past the bound (1 s) with nothing written, still healthy.
    await sleep(2_000);
    expect(await heartbeat()).toBe(200);
    expect(await lag()).toBeLessThan(1);

    const admin = new pg.Client({ connectionString: cluster.standby.url() });
    admin.on('error', () => {});
    await admin.connect();
    try {
      await admin.query('SELECT pg_wal_replay_pause()');
      const written = await call(writer, 'PUT', `${records('c0')}/paused`, { data: {} });
      expect(written.status).toBe(201);
      const failed = await until(503);
      const behind = await lag();
      expect(behind).toBeGreaterThan(1);
      expect(await (await fetch(`${reader}__heartbeat__`)).json()).toMatchObject({ storage: false });
      await admin.query('SELECT pg_wal_replay_resume()');
      const healed = await until(200);
      for (const since = Date.now(); (await lag()) !== 0; await sleep(100))
        expect(Date.now() - since).toBeLessThan(10_000);
      expect((await call(reader, 'GET', `${records('c0')}/paused`)).status).toBe(200);
      console.log(`replay paused: heartbeat 503 after ${failed} ms (lag ${behind} s); resumed: 200 after ${healed} ms`);
    } finally {
      await admin.query('SELECT pg_wal_replay_resume()').catch(() => {});
      await admin.end();
    }
  });
});
