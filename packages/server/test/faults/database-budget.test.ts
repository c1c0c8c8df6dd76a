/**
 * Database time per request on PostgreSQL (issue 36 item 4), with the issue's query: a `like_`
 * whose pattern needs `translate` over records holding 2.5 MB strings (24 of them: over 5 s; 25 s
 * in the issue's case).
 * - past `storage_statement_timeout_ms` it is cancelled, and answered 503 (errno 201) naming the
 *   setting, never 500;
 * - a client that goes away (by HTTP or from a batch), or a batch past `batch_timeout_seconds`:
 *   the backend's statement is gone from pg_stat_activity within about a second (before: it ran
 *   to its end, 9 of 12 still running 61 s after their clients had gone).
 * - the pool shared fairly (`storage_pool_max_share`): another user's GET and PUT stay prompt
 *   beside 12 of these from one user (before: its writes waited for one of them to end, 3.3 s
 *   here with a 3 s timeout; 503 after 20 s in the issue).
 * Our backends are told apart from other tests' by an `application_name` of this file's own.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/app.js';
import { createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { postgresSkipReason } from '../helpers/backends.js';
import { basicAuth, testSettings } from '../helpers/embedded-server.js';
import { dropSchema, newSchemaName, PG_URL, runningTranslates } from '../helpers/postgres.js';
import { listen } from './protocol.js';

const TIMEOUT_MS = 3_000;
/** `storage_pool_max_share` (QUIRE_TEST_POOL_SHARE=1: no share, the figures before it). */
const POOL_SHARE = Number(process.env.QUIRE_TEST_POOL_SHARE ?? 0.25);
const RECORDS = 24;
const alice = basicAuth('alice');
// Case variants of these need `translate` over every character of each 2.5 MB string: 0.3 s a
// row here. PostgreSQL notices a cancel only between rows: with the 170 letters it would take
// 2.4 s to (one row of translate, uninterruptible), which is the filter's cost, not the budget's.
const PATTERN = '*абвгдеёжзийклмнопрст*';
const HOSTILE = `/buckets/a/collections/big/records?like_s=${encodeURIComponent(PATTERN)}`;
const agent = new Agent({ connections: 64, headersTimeout: 120_000, bodyTimeout: 120_000 });

describe.skipIf(postgresSkipReason !== undefined)('database budget [postgresql]', { timeout: 120_000 }, () => {
  const schema = newSchemaName();
  const applicationName = `quire-budget-${schema.slice(-8)}`;
  let storage: Storage;
  let app: FastifyInstance;
  let base: string;

  /** Statements of this file's server running now (the `like_` ones: those that call translate). */
  const running = () => runningTranslates(applicationName);

  /** Waits until `count()` reaches `want`; how long it took, or Infinity after `withinMs`. */
  async function until(count: () => Promise<number>, want: (n: number) => boolean, withinMs: number) {
    const started = performance.now();
    while (performance.now() - started < withinMs) {
      if (want(await count())) return performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return Number.POSITIVE_INFINITY;
  }

  beforeAll(async () => {
    const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=${applicationName}`;
    storage = await createPostgresStorage({
      url,
      schema,
      autoMigrate: true,
      poolSize: 10,
      statementTimeoutMs: TIMEOUT_MS,
      ownerShare: POOL_SHARE,
    });
    app = await buildServer({
      // Alice's 12 wait their turn (max_requests_in_progress_per_identity) past the queue's 10 s.
      settings: testSettings({
        storage_statement_timeout_ms: TIMEOUT_MS,
        batch_timeout_seconds: 20,
        requests_queue_timeout_seconds: 60,
      }),
      storage,
      logger: false,
    });
    for (const path of ['/v1/buckets/a', '/v1/buckets/a/collections/big'])
      expect((await app.inject({ method: 'PUT', url: path, headers: alice })).statusCode).toBe(201);
    for (let i = 0; i < RECORDS; i++) {
      await storage.transaction((session) =>
        session.objects.insertMany({ resourceName: 'record', parentId: '/buckets/a/collections/big' }, [
          { id: `r${i}`, data: { s: 'ab'.repeat(1_250_000) } },
        ]),
      );
    }
    base = `http://127.0.0.1:${await listen(app)}/v1`;
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await storage?.close();
    await dropSchema(schema);
  });

  it('cancels a statement past storage_statement_timeout_ms: 503 errno 201 naming the setting', async () => {
    const started = performance.now();
    const response = await request(`${base}${HOSTILE}`, { headers: alice, dispatcher: agent });
    const body = (await response.body.json()) as { errno: number; message: string };
    const elapsed = performance.now() - started;
    console.log(
      `[database budget] like_ over ${RECORDS} × 2.5 MB: ${response.statusCode} after ${Math.round(elapsed)} ms`,
    );
    expect(response.statusCode).toBe(503);
    expect(body.errno).toBe(201);
    expect(body.message).toContain('storage_statement_timeout_ms');
    expect(elapsed).toBeLessThan(TIMEOUT_MS + 2_000);
    expect(await until(running, (n) => n === 0, 1_000)).toBeLessThan(1_000);
  });

  it.each([
    ['by HTTP', () => ({ url: `${base}${HOSTILE}`, method: 'GET' as const })],
    [
      'from a batch',
      () => ({
        url: `${base}/batch`,
        method: 'POST' as const,
        body: JSON.stringify({ requests: [{ method: 'GET', path: HOSTILE }] }),
      }),
    ],
  ])('cancels the statement of a client that goes away (%s) within a second', async (_how, make) => {
    const { url, method, body } = { body: undefined, ...make() };
    const controller = new AbortController();
    const sent = request(url, {
      method,
      headers: { ...alice, 'content-type': 'application/json' },
      body,
      dispatcher: agent,
      signal: controller.signal,
    }).catch(() => null);
    expect(await until(running, (n) => n === 1, 2_000)).toBeLessThan(2_000);
    controller.abort();
    await sent;
    const gone = await until(running, (n) => n === 0, 2_500);
    console.log(`[database budget] client gone (${_how}): statement gone after ${Math.round(gone)} ms`);
    expect(gone).toBeLessThan(1_500);
  });

  it('cancels the statement of a batch past batch_timeout_seconds: 503 naming it', async () => {
    const quick = await buildServer({
      settings: testSettings({ storage_statement_timeout_ms: TIMEOUT_MS, batch_timeout_seconds: 1 }),
      storage,
      logger: false,
    });
    try {
      const started = performance.now();
      const response = await quick.inject({
        method: 'POST',
        url: '/v1/batch',
        headers: alice,
        payload: { requests: [{ method: 'GET', path: HOSTILE }] },
      });
      const elapsed = performance.now() - started;
      expect(response.statusCode).toBe(503);
      expect(response.json().message).toContain('batch_timeout_seconds');
      expect(elapsed).toBeLessThan(2_500);
      expect(await until(running, (n) => n === 0, 1_000)).toBeLessThan(1_000);
    } finally {
      await quick.close();
    }
  });

  it("keeps another user's GET and PUT prompt beside 12 of these from one user (the pool shared fairly)", async () => {
    const bob = { ...basicAuth('bob'), 'content-type': 'application/json' };
    for (const path of ['/buckets/bob', '/buckets/bob/collections/mine'])
      await request(`${base}${path}`, { method: 'PUT', headers: bob, dispatcher: agent }).then((r) => r.body.text());
    let done = false;
    const latencies: number[] = [];
    const failures: number[] = [];
    const bystander = (async () => {
      for (let index = 0; !done; index++) {
        const write = index % 2 === 0;
        const started = performance.now();
        const response = await request(
          `${base}/buckets/bob/collections/mine/records${write ? `/r${index % 20}` : ''}`,
          {
            method: write ? 'PUT' : 'GET',
            headers: bob,
            dispatcher: agent,
            ...(write ? { body: JSON.stringify({ data: { index } }) } : {}),
          },
        );
        await response.body.text();
        latencies.push(performance.now() - started);
        if (response.statusCode >= 300) failures.push(response.statusCode);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const hostile = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        request(index % 2 ? `${base}/batch` : `${base}${HOSTILE}`, {
          method: index % 2 ? 'POST' : 'GET',
          headers: { ...alice, 'content-type': 'application/json' },
          dispatcher: agent,
          ...(index % 2 ? { body: JSON.stringify({ requests: [{ method: 'GET', path: HOSTILE }] }) } : {}),
        }).then(async (response) => {
          await response.body.text();
          return response.statusCode;
        }),
      ),
    );
    done = true;
    await bystander;
    latencies.sort((a, b) => a - b);
    const worst = Math.round(latencies.at(-1) ?? 0);
    const median = Math.round(latencies[Math.floor(latencies.length / 2)] ?? 0);
    console.log(
      `[database budget] share ${POOL_SHARE}: alice's 12 answered ${JSON.stringify(hostile)};`,
      `bob's ${latencies.length} requests: median ${median} ms, worst ${worst} ms,`,
      `failures ${JSON.stringify(failures)}`,
    );
    expect(hostile.every((status) => status === 503)).toBe(true);
    expect(failures).toEqual([]);
    // Before the share: bob's writes waited for one of alice's statements to end (its timeout).
    expect(worst).toBeLessThan(1_500);
  });
});
