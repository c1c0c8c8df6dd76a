/**
 * Polls answered from memory (storage/sql/scope-cache.ts) across two `quire start` processes on
 * one PostgreSQL schema: a 304 poll on a warm process sends no statement to the database, and
 * a write committed by the OTHER process is never missed past `storage_poll_cache_max_staleness_ms`.
 * Statements are counted in the server process, as its pg driver sends them (statement-log.mjs).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useCli } from './helpers/cli.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable, runAsAdmin } from './helpers/postgres.js';

const pgReason = await postgresUnavailable('poll-cache-processes.test.ts');
const start = useCli();
const alice = { Authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` };
const preload = fileURLToPath(new URL('./helpers/statement-log.mjs', import.meta.url));
const STALENESS_MS = 200;
const RECORDS = 'buckets/shared/collections/tasks/records';

async function send(base: string, path: string, method = 'GET', etag?: string) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...alice, ...(etag ? { 'If-None-Match': etag } : {}), 'Content-Type': 'application/json' },
    ...(method === 'PUT' ? { body: '{}' } : {}),
  });
  await response.arrayBuffer();
  return { status: response.status, etag: response.headers.get('etag') ?? '' };
}

/** The statements a process sent so far: per request, or its reads of the log of changes (per interval). */
function statements(log: string): { requests: string[]; logReads: number } {
  const lines = readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
  const logReads = lines.filter((line) =>
    line.includes(
      'pg_current_snapshot()::text AS snapshot) SELECT now.snapshot, (SELECT through::text FROM scope_changes_pruned)',
    ),
  ).length;
  return { requests: lines.filter((line) => !line.includes('scope_changes')), logReads };
}

describe.skipIf(pgReason !== undefined)(
  'polls answered from memory, two processes (PostgreSQL)',
  { timeout: 90_000 },
  () => {
    const schema = newSchemaName();
    const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const dir = mkdtempSync(join(tmpdir(), 'quire-poll-cache-'));
    const env = (log: string, staleness = STALENESS_MS) => ({
      QUIRE_HOST: '127.0.0.1',
      QUIRE_PORT: '0',
      QUIRE_STORAGE_URL: url,
      QUIRE_STORAGE_AUTO_MIGRATE: 'true',
      QUIRE_USERID_HMAC_SECRET: 'poll-secret',
      QUIRE_STORAGE_POLL_CACHE_MAX_STALENESS_MS: String(staleness),
      QUIRE_TEST_STATEMENT_LOG: log,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${preload}`,
    });
    beforeAll(() => runAsAdmin(`CREATE SCHEMA ${schema}`));
    afterAll(() => dropSchema(schema));

    it('a warm 304 poll sends no statement; a write in B is seen through A within the bound', async () => {
      const [logA, logB] = [join(dir, 'a.log'), join(dir, 'b.log')];
      const a = await start(['start'], env(logA)).listening;
      const b = await start(['start'], env(logB)).listening;
      await send(b, 'buckets/shared', 'PUT');
      await send(b, 'buckets/shared/collections/tasks', 'PUT');
      await send(b, `${RECORDS}/r0`, 'PUT');

      let { etag } = await send(a, RECORDS);
      for (let i = 0; i < 5; i++) await send(a, RECORDS, 'GET', etag); // warm: parents, ACLs, the ping
      await sleep(STALENESS_MS);
      await send(a, RECORDS, 'GET', etag);
      const before = statements(logA);
      const polls = 50;
      const started = Date.now();
      for (let i = 0; i < polls; i++) expect((await send(a, RECORDS, 'GET', etag)).status).toBe(304);
      const after = statements(logA);
      const sent = after.requests.slice(before.requests.length);
      console.log(
        `${polls} warm 304 polls on A in ${Date.now() - started} ms: ${sent.length} statements for them,`,
        `${after.logReads - before.logReads} reads of the log of changes`,
      );
      // None, but on a loaded machine a read of the log may come late: the poll then asks the database.
      expect(sent.length).toBeLessThanOrEqual(2);

      // Written through B, polled through A: seen by every poll that starts the bound after B's answer.
      const seenAfter: number[] = [];
      for (let i = 1; i <= 10; i++) {
        await send(b, `${RECORDS}/r${i}`, 'PUT');
        const written = Date.now();
        let seen = await send(a, RECORDS, 'GET', etag);
        while (seen.status === 304 && Date.now() - written < STALENESS_MS) seen = await send(a, RECORDS, 'GET', etag);
        seenAfter.push(Date.now() - written);
        if (seen.status === 304) seen = await send(a, RECORDS, 'GET', etag); // the bound has passed
        expect(seen.status).toBe(200);
        expect(seen.etag).not.toBe(etag);
        etag = seen.etag;
        // A write through A itself is seen by A's very next poll.
        await send(a, `${RECORDS}/a${i}`, 'PUT');
        const own = await send(a, RECORDS, 'GET', etag);
        expect(own.status).toBe(200);
        etag = own.etag;
      }
      console.log(`a write in B seen through A after (ms): ${seenAfter.join(', ')}`);
    });

    it('without the cache (max staleness 0) every 304 poll asks the database', async () => {
      const log = join(dir, 'off.log');
      writeFileSync(log, '');
      const a = await start(['start'], env(log, 0)).listening;
      const { etag } = await send(a, RECORDS);
      for (let i = 0; i < 5; i++) await send(a, RECORDS, 'GET', etag);
      const before = statements(log).requests.length;
      for (let i = 0; i < 50; i++) expect((await send(a, RECORDS, 'GET', etag)).status).toBe(304);
      const sent = statements(log).requests.length - before;
      console.log(`50 304 polls without the cache: ${sent} statements`);
      expect(sent).toBeGreaterThanOrEqual(50);
    });
  },
);
