/**
 * Four `quire start` processes on one database through one PgBouncer in transaction mode, stock
 * configuration (helpers/pooled-deployment.ts), as a deployment scales out: LISTEN cannot go
 * through the pooler, so each process polls the notification table. Checked over HTTP:
 * - live sync across processes: a change committed through one process reaches streams held
 *   by the others, a group that grants access reaches a stream's principals, and a stream that
 *   resumes with its last event id misses nothing;
 * - `_since` polling through the round-robin proxy, while writers on every process race on
 *   the same records, misses no change and never sees an ETag undercut by a later write.
 * (The conditional-write races run over the same deployment in conditional-writes-race.test.ts,
 * the published clients in compat/.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgbouncerUnavailable } from './helpers/pgbouncer.js';
import { type PooledDeployment, startPooledDeployment } from './helpers/pooled-deployment.js';
import { PG_URL, postgresUnavailable, testClient } from './helpers/postgres.js';
import { openEventStream } from './helpers/sse.js';

const reason = (await postgresUnavailable('pooler.test.ts')) ?? pgbouncerUnavailable('pooler.test.ts');
const MONITOR = '/buckets/monitor/collections/changes/records';
const auth = (user: string) => ({ Authorization: `Basic ${Buffer.from(`${user}:secret`).toString('base64')}` });

type Json = Record<string, unknown>;

async function call(
  base: string,
  method: string,
  path: string,
  user = 'alice',
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...auth(user), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : {}) as Json };
}

describe.skipIf(reason !== undefined)(
  'four processes through one pgbouncer (transaction pooling)',
  { timeout: 120_000 },
  () => {
    let deployment: PooledDeployment;

    beforeAll(async () => {
      deployment = await startPooledDeployment({ processes: 4 });
    }, 180_000);

    afterAll(async () => {
      await deployment?.close();
    }, 60_000);

    it('live sync: a change via one process reaches streams on others, groups too; resuming misses none', async () => {
      const [a, b, c] = deployment.urls as [string, string, string];
      expect((await call(a, 'PUT', '/buckets/live')).status).toBe(201);
      expect((await call(a, 'PUT', '/buckets/live/collections/tasks')).status).toBe(201);
      const { body: bobInfo } = await call(b, 'GET', '/', 'bob');
      const bobId = (bobInfo.user as { id: string }).id;

      // A long writer elsewhere on the server (another database even) stays open throughout: it
      // must not hold back what the others commit (it once did, for as long as it stayed open).
      const longWriter = testClient({ connectionString: PG_URL });
      await longWriter.connect();
      await longWriter.query('BEGIN');
      await longWriter.query('SELECT pg_current_xact_id()');

      const alices = await openEventStream(`${b}${MONITOR}`, auth('alice'));
      const bobs = await openEventStream(`${c}${MONITOR}`, auth('bob'));
      try {
        await alices.next(); // the collection as it is
        const latencies: number[] = [];
        let last = 0;
        for (let i = 0; i < 8; i++) {
          const before = Date.now();
          const written = await call(a, 'PUT', `/buckets/live/collections/tasks/records/r${i}`, 'alice', {
            data: { i },
          });
          const stamp = (written.body.data as { last_modified: number }).last_modified;
          const events = await alices.until((event) => Number(event.id) >= stamp, 5_000);
          latencies.push(Date.now() - before);
          last = Number(events.at(-1)!.id);
          expect(JSON.parse(events.at(-1)!.data)).toMatchObject({
            bucket: 'live',
            collection: 'tasks',
            last_modified: stamp,
          });
        }
        latencies.sort((x, y) => x - y);
        expect(latencies[4]!).toBeLessThan(1_000); // a poll interval (250 ms) and the PUT, on a loaded machine

        // Bob may read nothing yet; a group created through process A grants him the bucket.
        await call(a, 'PUT', '/buckets/live/groups/readers', 'alice', { data: { members: [bobId] } });
        await call(a, 'PATCH', '/buckets/live', 'alice', { permissions: { read: ['/buckets/live/groups/readers'] } });
        const granted = await call(a, 'PUT', '/buckets/live/collections/tasks/records/shared', 'alice', { data: {} });
        const stamp = (granted.body.data as { last_modified: number }).last_modified;
        // Generous: four processes, pgbouncer and the rest of the suite share two cores in CI.
        const seen = await bobs.until((event) => Number(event.id) >= stamp, 15_000);
        expect(JSON.parse(seen.at(-1)!.data)).toMatchObject({ bucket: 'live', collection: 'tasks' });

        // Disconnected meanwhile: a write through A while nobody listens, then a resume on C.
        await alices.close();
        const missed = await call(a, 'PUT', '/buckets/live/collections/tasks/records/missed', 'alice', { data: {} });
        const resumed = await openEventStream(`${c}${MONITOR}`, { ...auth('alice'), 'Last-Event-ID': String(last) });
        try {
          const event = await resumed.until((each) => JSON.parse(each.data).collection === 'tasks', 15_000);
          expect(Number(event.at(-1)!.id)).toBe((missed.body.data as { last_modified: number }).last_modified);
        } finally {
          await resumed.close();
        }
      } finally {
        await alices.close();
        await bobs.close();
        await longWriter.query('ROLLBACK').catch(() => {});
        await longWriter.end();
      }
    });

    it('_since polling misses no change while writers on every process race on the same records', async () => {
      const { url, urls } = deployment;
      const records = '/buckets/since/collections/c/records';
      expect((await call(url, 'PUT', '/buckets/since')).status).toBe(201);
      expect((await call(url, 'PUT', '/buckets/since/collections/c')).status).toBe(201);
      const ids = Array.from({ length: 20 }, (_, i) => `o${i}`);
      const writes: Array<{ id: string; ts: number; start: number }> = [];
      // Every record there before the race: its PATCHes and DELETEs mostly find one (from none,
      // the random writes sometimes met so few that the count below failed: 1 run in 20).
      for (const id of ids) {
        const created = await call(url, 'PUT', `${records}/${id}`, 'alice', { data: {} });
        expect(created.status).toBe(201);
        writes.push({ id, ts: (created.body.data as { last_modified: number }).last_modified, start: Date.now() });
      }

      const writer = async (base: string) => {
        for (let n = 0; n < 15; n++) {
          const id = ids[Math.floor(Math.random() * ids.length)]!;
          const start = Date.now();
          const roll = Math.random();
          const reply =
            roll < 0.6
              ? await call(base, 'PUT', `${records}/${id}`, 'alice', { data: { roll } })
              : roll < 0.8
                ? await call(base, 'PATCH', `${records}/${id}`, 'alice', { data: { roll } })
                : await call(base, 'DELETE', `${records}/${id}`);
          if (reply.status < 300)
            writes.push({ id, ts: (reply.body.data as { last_modified: number }).last_modified, start });
          else expect([404]).toContain(reply.status); // a PATCH or DELETE of a deleted record
        }
      };

      /** One `_since` poll through the proxy, following Next-Page (each page may hit another process). */
      const polls: Array<{
        since: number;
        etag: number;
        end: number;
        changes: Array<{ id: string; last_modified: number; deleted?: boolean }>;
      }> = [];
      const poll = async (since: number) => {
        const first = await fetch(`${url}${records}?_since=${since}&_sort=last_modified&_limit=7`, {
          headers: auth('alice'),
        });
        expect(first.status).toBe(200);
        const etag = Number(first.headers.get('etag')!.replaceAll('"', ''));
        const changes = ((await first.json()) as { data: Array<{ id: string; last_modified: number }> }).data;
        for (let next = first.headers.get('next-page'); next; ) {
          const page = await fetch(next, { headers: auth('alice') });
          expect(page.status).toBe(200);
          changes.push(...((await page.json()) as { data: typeof changes }).data);
          next = page.headers.get('next-page');
        }
        polls.push({ since, etag, end: Date.now(), changes });
        return { etag, changes };
      };

      const mirror = new Map<string, number>();
      let since = 0;
      let done = false;
      const writing = Promise.all(urls.map(writer)).finally(() => (done = true));
      writing.catch(() => {});
      for (;;) {
        const quiet = done;
        const { etag, changes } = await poll(since);
        for (const change of changes) mirror.set(change.id, change.last_modified);
        if (quiet && changes.length === 0) break;
        since = etag;
      }
      await writing;

      expect(writes.length).toBeGreaterThan(20 + 40); // 60 raced; some PATCHes and DELETEs meet a deleted record
      const problems: string[] = [];
      for (const w of writes) {
        const undercut = polls.find((p) => p.end < w.start && w.ts <= p.etag);
        if (undercut) problems.push(`${w.id}@${w.ts} undercuts the ETag ${undercut.etag} of an earlier poll`);
        const window = polls.find((p) => p.since < w.ts && w.ts <= p.etag);
        const seen = window?.changes.find((change) => change.id === w.id);
        if (!seen || seen.last_modified < w.ts)
          problems.push(`${w.id}@${w.ts} was missed (window ${window?.since}..${window?.etag})`);
      }
      expect(problems).toEqual([]);
      const final = await fetch(`${url}${records}?_since=0&_limit=10000`, { headers: auth('alice') });
      const state = ((await final.json()) as { data: Array<{ id: string; last_modified: number }> }).data;
      expect(new Map(state.map((object) => [object.id, object.last_modified]))).toEqual(mirror);
    });
  },
);
