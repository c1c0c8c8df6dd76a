/**
 * Issue 19 item 8: one request must not block the event loop. A PATCH of 100,000 keys took 10 s
 * on the embedded store, a JSON-Patch of 50,000 operations stalled other requests for ~2 s, and
 * an unpaged history listing of 14,000 entries returned 20 MB. Each is now bounded by a setting
 * (`max_json_keys`, `max_json_patch_operations`, `max_query_sort_fields`, `max_query_filters`,
 * `history_paginate_by`) and refused with 400
 * errno 107 naming it, or paginated with Next-Page. Real HTTP, on both stores; the worst event
 * loop delay seen while the largest accepted requests run is printed (speed is not asserted).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import { beforeAll, expect, it } from 'vitest';
import type { Settings } from '../../src/config.js';
import { describeOnBackends } from '../helpers/backends.js';
import { basicAuth } from '../helpers/embedded-server.js';
import { listen, protocolErrorProblem } from './protocol.js';

const AUTH = basicAuth('alice');
const RECORDS = '/v1/buckets/b/collections/c/records';

interface Answer<Body = unknown> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed body (the text when it is not JSON), of the type the caller expects: nothing checks it. */
  body: Body;
  text: string;
}

/** A page of a listing (§7). */
interface List {
  data: Array<{ id: string }>;
}

async function send<Body = unknown>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  type = 'application/json',
): Promise<Answer<Body>> {
  const response = await request(path.startsWith('http') ? path : `${base}${path}`, {
    method: method as 'GET',
    headers: { ...AUTH, ...(body === undefined ? {} : { 'content-type': type }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.body.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the assertions say so
  }
  return { status: response.statusCode, headers: response.headers, body: parsed as Body, text };
}

function expectRefused(answer: Answer<{ errno: number; message: string }>, setting: string): void {
  expect(answer.status, answer.text.slice(0, 300)).toBe(400);
  expect(protocolErrorProblem(400, answer.text)).toBeNull();
  expect(answer.body.errno).toBe(107);
  expect(answer.body.message).toContain(setting);
}

const keys = (count: number, prefix = 'k') =>
  Object.fromEntries(Array.from({ length: count }, (_, index) => [`${prefix}${index}`, index]));

describeOnBackends('work per request is bounded (issue 19.8)', { timeout: 120_000 }, ({ name, serverWith }) => {
  let base: string;
  let app: FastifyInstance;

  async function start(overrides: Partial<Settings> = {}): Promise<string> {
    const server = await serverWith({ history_enabled: true, ...overrides });
    return `http://127.0.0.1:${await listen(server)}`;
  }

  beforeAll(async () => {
    app = await serverWith({ history_enabled: true });
    base = `http://127.0.0.1:${await listen(app)}`;
    expect((await send(base, 'PUT', '/v1/buckets/b', {})).status).toBe(201);
    expect((await send(base, 'PUT', '/v1/buckets/b/collections/c', {})).status).toBe(201);
  });

  it('refuses a body of 100,000 keys, naming max_json_keys', async () => {
    expectRefused(await send(base, 'PUT', `${RECORDS}/big`, { data: keys(100_000) }), 'max_json_keys (10000)');
    expect((await send(base, 'PUT', `${RECORDS}/big`, { data: {} })).status).toBe(201);
    expectRefused(await send(base, 'PATCH', `${RECORDS}/big`, { data: keys(100_000) }), 'max_json_keys');
  });

  it('refuses a PATCH whose result would pass max_json_keys, whatever the PATCH type', async () => {
    expect((await send(base, 'PUT', `${RECORDS}/grows`, { data: keys(6_000, 'a') })).status).toBe(201);
    expectRefused(await send(base, 'PATCH', `${RECORDS}/grows`, { data: keys(6_000, 'b') }), 'max_json_keys');
    expectRefused(
      await send(base, 'PATCH', `${RECORDS}/grows`, { data: keys(6_000, 'c') }, 'application/merge-patch+json'),
      'max_json_keys',
    );
    const adds = Array.from({ length: 900 }, (_, index) => ({
      op: 'add',
      path: `/data/d${index}`,
      value: keys(5, 'x'),
    }));
    expectRefused(await send(base, 'PATCH', `${RECORDS}/grows`, adds, 'application/json-patch+json'), 'max_json_keys');
    // Unchanged by the refused writes.
    expect(Object.keys((await send<{ data: object }>(base, 'GET', `${RECORDS}/grows`)).body.data)).toHaveLength(6_002);
  });

  it('refuses a JSON-Patch that copies its way past max_json_keys', async () => {
    expect((await send(base, 'PUT', `${RECORDS}/copies`, { data: { tree: keys(2_000) } })).status).toBe(201);
    const copies = Array.from({ length: 500 }, (_, index) => ({
      op: 'copy',
      from: '/data/tree',
      path: `/data/copy${index}`,
    }));
    expectRefused(
      await send(base, 'PATCH', `${RECORDS}/copies`, copies, 'application/json-patch+json'),
      'max_json_keys',
    );
  });

  it('refuses a PATCH whose result would nest deeper than max_json_depth', async () => {
    let value: unknown = 1;
    for (let level = 0; level < 60; level++) value = { v: value };
    expect((await send(base, 'PUT', `${RECORDS}/deep`, { data: { a: value } })).status).toBe(201);
    const path = `/data/a${'/v'.repeat(55)}`;
    expectRefused(
      await send(
        base,
        'PATCH',
        `${RECORDS}/deep`,
        [{ op: 'add', path: `${path}/w`, value }],
        'application/json-patch+json',
      ),
      'max_json_depth',
    );
  });

  it('refuses a JSON-Patch of 50,000 operations, naming max_json_patch_operations', async () => {
    expect((await send(base, 'PUT', `${RECORDS}/ops`, { data: { a: 0 } })).status).toBe(201);
    const operations = (count: number) =>
      Array.from({ length: count }, (_, index) => ({ op: 'replace', path: '/data/a', value: index }));
    expectRefused(
      await send(base, 'PATCH', `${RECORDS}/ops`, operations(50_000), 'application/json-patch+json'),
      'max_json_keys',
    );
    expectRefused(
      await send(base, 'PATCH', `${RECORDS}/ops`, operations(1_001), 'application/json-patch+json'),
      'max_json_patch_operations (1000)',
    );
    const accepted = await send<{ data: { a: number } }>(
      base,
      'PATCH',
      `${RECORDS}/ops`,
      operations(1_000),
      'application/json-patch+json',
    );
    expect(accepted.status).toBe(200);
    expect(accepted.body.data.a).toBe(999);
    const fewer = await start({ max_json_patch_operations: 10 });
    expectRefused(
      await send(fewer, 'PATCH', `${RECORDS}/ops`, operations(11), 'application/json-patch+json'),
      'max_json_patch_operations (10)',
    );
  });

  it('refuses listings with more sort fields or filters than max_query_sort_fields / max_query_filters', async () => {
    // A dotted field with number segments is up to eight JSON paths: on the embedded store,
    // 800 sort fields were a 3.4 s statement, run synchronously.
    const sort = (count: number) => `_sort=${Array.from({ length: count }, (_, index) => `f${index}.1.2.3`).join(',')}`;
    const filters = (count: number) => Array.from({ length: count }, (_, index) => `f${index}.1.2=${index}`).join('&');
    expectRefused(await send(base, 'GET', `${RECORDS}?${sort(800)}`), 'max_query_sort_fields (10)');
    expectRefused(await send(base, 'GET', `${RECORDS}?${sort(11)}`), 'max_query_sort_fields (10)');
    expect((await send(base, 'GET', `${RECORDS}?${sort(10)}`)).status).toBe(200);
    expectRefused(await send(base, 'GET', `${RECORDS}?${filters(21)}`), 'max_query_filters (20)');
    expect((await send(base, 'GET', `${RECORDS}?${filters(20)}`)).status).toBe(200);
    // Every listing: history, permissions, and inside a batch.
    expectRefused(await send(base, 'GET', `/v1/buckets/b/history?${filters(21)}`), 'max_query_filters');
    expectRefused(await send(base, 'GET', `/v1/permissions?${sort(11)}`), 'max_query_sort_fields');
    const batch = await send<{ responses: Array<{ status: number }> }>(base, 'POST', '/v1/batch', {
      requests: [{ path: `${RECORDS}?${sort(11)}` }],
    });
    expect(batch.body.responses[0]?.status).toBe(400);
    const wider = await start({ max_query_sort_fields: 20, max_query_filters: 5 });
    expect((await send(wider, 'GET', `${RECORDS}?${sort(20)}`)).status).toBe(200);
    expectRefused(await send(wider, 'GET', `${RECORDS}?${filters(6)}`), 'max_query_filters (5)');
  });

  it('pages history listings by history_paginate_by, with Next-Page', async () => {
    const paged = await start({ history_paginate_by: 10 });
    expect((await send(paged, 'PUT', '/v1/buckets/h', {})).status).toBe(201);
    for (let index = 0; index < 25; index++) {
      expect(
        (await send(paged, 'PUT', `/v1/buckets/h/collections/c${index % 3}`, { data: { index } })).status,
      ).toBeLessThan(300);
    }
    const seen: string[] = [];
    let next: string | undefined = `${paged}/v1/buckets/h/history`;
    let pages = 0;
    while (next) {
      const page = await send<List>(paged, 'GET', next);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(10);
      seen.push(...page.body.data.map((entry) => entry.id));
      next = page.headers['next-page'] as string | undefined;
      pages++;
    }
    expect(seen).toHaveLength(26); // the bucket's creation, then 25 collection writes
    expect(new Set(seen).size).toBe(26);
    expect(pages).toBe(3);
    // `_limit` below the cap is honoured, above it capped (§7.6).
    expect((await send<List>(paged, 'GET', '/v1/buckets/h/history?_limit=4')).body.data).toHaveLength(4);
    expect((await send<List>(paged, 'GET', '/v1/buckets/h/history?_limit=50')).body.data).toHaveLength(10);
  });

  it('keeps the event loop responsive during the largest accepted requests (figures printed)', async () => {
    const monitor = monitorEventLoopDelay({ resolution: 5 });
    const figures: string[] = [];
    const measure = async (label: string, run: () => Promise<Answer>) => {
      monitor.reset();
      monitor.enable();
      const started = performance.now();
      const answer = await run();
      monitor.disable();
      expect(answer.status, answer.text.slice(0, 200)).toBeLessThan(300);
      figures.push(
        `${label}: ${Math.round(performance.now() - started)} ms, ` +
          `worst event-loop delay ${Math.round(monitor.max / 1e6)} ms`,
      );
    };
    await measure('PUT 9,999 keys', () => send(base, 'PUT', `${RECORDS}/widest`, { data: keys(9_999) }));
    await measure('PATCH 9,999 keys', () => send(base, 'PATCH', `${RECORDS}/widest`, { data: keys(9_999) }));
    const operations = Array.from({ length: 1_000 }, (_, index) => ({
      op: 'replace',
      path: `/data/k${index}`,
      value: -index,
    }));
    await measure('JSON-Patch 1,000 operations', () =>
      send(base, 'PATCH', `${RECORDS}/widest`, operations, 'application/json-patch+json'),
    );
    await measure('GET history (first page)', () => send(base, 'GET', '/v1/buckets/b/history'));
    const sort = Array.from({ length: 10 }, (_, index) => `f${index}.1.2.3`).join(',');
    const filters = Array.from({ length: 20 }, (_, index) => `f${index}.1.2=${index}`).join('&');
    await measure('GET 10 sort fields and 20 filters', () => send(base, 'GET', `${RECORDS}?_sort=${sort}&${filters}`));
    console.log(`[request limits, ${name}] ${figures.join('; ')}`);
  });
});
