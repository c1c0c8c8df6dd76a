/**
 * The change stream across processes: two `quire start` processes on one PostgreSQL schema. A
 * change committed through one reaches a stream held by the other (LISTEN/NOTIFY), and a
 * stream that reconnects with its last event id misses nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useCli } from './helpers/cli.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable, runAsAdmin } from './helpers/postgres.js';
import { openEventStream } from './helpers/sse.js';

const pgReason = await postgresUnavailable('changes-processes.test.ts');
const start = useCli();
const alice = { Authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` };
const MONITOR = 'buckets/monitor/collections/changes/records';

describe.skipIf(pgReason !== undefined)(
  'change stream across two server processes (PostgreSQL)',
  { timeout: 60_000 },
  () => {
    const schema = newSchemaName();
    const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const env = {
      QUIRE_HOST: '127.0.0.1',
      QUIRE_PORT: '0',
      QUIRE_STORAGE_URL: url,
      QUIRE_STORAGE_AUTO_MIGRATE: 'true',
      QUIRE_USERID_HMAC_SECRET: 'changes-secret',
    };
    beforeAll(() => runAsAdmin(`CREATE SCHEMA ${schema}`));
    afterAll(() => dropSchema(schema));

    it('pushes a change committed on process A to a stream on process B within a fraction of a second', async () => {
      const a = await start(['start'], env).listening;
      const b = await start(['start'], env).listening;
      expect(a).not.toBe(b);
      const put = async (base: string, path: string, body: unknown = {}) => {
        const response = await fetch(`${base}${path}`, {
          method: 'PUT',
          headers: { ...alice, 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        });
        expect(response.status).toBeLessThan(300);
        return (await response.json()) as { data: { last_modified: number } };
      };
      await put(a, 'buckets/shared');
      await put(a, 'buckets/shared/collections/tasks');

      const stream = await openEventStream(`${b}${MONITOR}`, alice);
      try {
        await stream.next(); // the collection as it is
        const latencies: number[] = [];
        let last = 0;
        for (let i = 0; i < 10; i++) {
          const before = Date.now();
          const written = await put(a, `buckets/shared/collections/tasks/records/r${i}`, { data: { i } });
          const event = await stream.until((e) => Number(e.id) >= written.data.last_modified, 5_000);
          latencies.push(Date.now() - before);
          last = Number(event.at(-1)!.id);
          expect(JSON.parse(event.at(-1)!.data)).toMatchObject({
            bucket: 'shared',
            collection: 'tasks',
            last_modified: written.data.last_modified,
          });
        }
        latencies.sort((x, y) => x - y);
        expect(latencies[4]!).toBeLessThan(500);

        // Disconnected meanwhile: a write on A while nobody listens, then a resume on B.
        await stream.close();
        const missed = await put(a, 'buckets/shared/collections/tasks/records/missed', { data: {} });
        const resumed = await openEventStream(`${b}${MONITOR}`, { ...alice, 'Last-Event-ID': String(last) });
        try {
          const event = await resumed.next();
          expect(Number(event.id)).toBe(missed.data.last_modified);
        } finally {
          await resumed.close();
        }
      } finally {
        await stream.close();
      }
    });

    it('carries rights and deletions across processes within a second (issue 29, defect 4)', async () => {
      const rightsEnv = {
        ...env,
        QUIRE_MULTIAUTH_POLICIES: 'account,basicauth',
        QUIRE_ACCOUNT_CREATE_PRINCIPALS: 'system.Everyone',
        QUIRE_CHANGES_STREAM_COALESCE_MS: '0',
      };
      const a = await start(['start'], rightsEnv).listening;
      const b = await start(['start'], rightsEnv).listening;
      const bob = { Authorization: `Basic ${Buffer.from('bob:secret').toString('base64')}` };
      const call = async (method: string, base: string, path: string, auth: Record<string, string>, body?: unknown) => {
        const response = await fetch(`${base}${path}`, {
          method,
          headers: { ...auth, ...(body ? { 'Content-Type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        expect(response.status, `${method} ${path}`).toBeLessThan(300);
        return (await response.json()) as { data: { last_modified: number }; user?: { id: string } };
      };
      const bobId = (await call('GET', a, '', bob)).user!.id;
      await call('PUT', a, 'buckets/team', alice);
      await call('PUT', a, 'buckets/team/groups/readers', alice, { data: { members: [bobId] } });
      await call('PUT', a, 'buckets/team/collections/c', alice, {
        permissions: { read: ['/buckets/team/groups/readers'] },
      });
      const first = await call('PUT', a, 'buckets/team/collections/c/records/r', alice, { data: {} });

      // Bob follows through process B; alice deletes the bucket through process A.
      const bobs = await openEventStream(`${b}${MONITOR}?bucket=team`, bob);
      try {
        expect(Number((await bobs.next()).id)).toBe(first.data.last_modified);
        let started = Date.now();
        await call('DELETE', a, 'buckets/team', alice);
        const gone = JSON.parse((await bobs.next(2_000)).data);
        expect(gone).toMatchObject({ bucket: 'team', collection: 'c', deleted: true });
        expect(Date.now() - started).toBeLessThan(1_000);
        // The same names again, without the group: nothing more for bob.
        await call('PUT', a, 'buckets/team', alice);
        await call('PUT', a, 'buckets/team/collections/c', alice, {
          permissions: { read: ['/buckets/team/groups/readers'] },
        });
        await call('PUT', a, 'buckets/team/collections/c/records/secret', alice, { data: {} });
        await expect(bobs.next(1_000)).rejects.toThrow(/no event/);

        // An account's streams on B end when A deletes the account.
        const carol = { Authorization: `Basic ${Buffer.from('carol:carol-password').toString('base64')}` };
        const created = await fetch(`${a}accounts/carol`, {
          method: 'PUT',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ data: { password: 'carol-password' } }),
        });
        expect(created.status).toBe(201);
        await call('PUT', a, 'buckets/carols', carol);
        await call('PUT', a, 'buckets/carols/collections/c', carol);
        const carols = await openEventStream(`${b}${MONITOR}`, carol);
        try {
          await carols.next();
          started = Date.now();
          await call('DELETE', a, 'accounts/carol', carol);
          await expect(carols.next(2_000)).rejects.toThrow(/stream ended/);
          expect(Date.now() - started).toBeLessThan(1_000);
        } finally {
          await carols.close();
        }
      } finally {
        await bobs.close();
      }
    });
  },
);
