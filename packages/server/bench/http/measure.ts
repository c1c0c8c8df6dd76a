/** bench/http.ts's measures: page latencies (first and last pages), and autocannon rows. */
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import type autocannon from 'autocannon';
import { AUTH, formatNumber, load, recordId } from '../support.js';
import { RECORDS_PATH } from './store.js';

/** The page size used to walk to the end of the list (the server's default cap). */
const WALK_PAGE = 10_000;
const PAGE_SIZES = [100, WALK_PAGE];
const CHANGE_SET = 10;

export interface Row {
  scenario: string;
  value: string;
  detail: string;
}

/** An autocannon run (every answer must have the expected status) as a row. */
async function loadRow(name: string, options: autocannon.Options, expected: number): Promise<Row> {
  const { count, requestsPerSecond, p50, p99 } = await load(name, options, expected);
  return {
    scenario: name,
    value: `${formatNumber(requestsPerSecond)} req/s`,
    detail: `${expected} ×${formatNumber(count)}; latency p50 ${p50} ms, p99 ${p99} ms`,
  };
}

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

async function get(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { headers: { authorization: AUTH, ...headers } });
}

/** Sequential requests to one URL: p50/p95 wall time, each body read entirely. */
async function pageLatency(
  name: string,
  url: string,
  samples: number,
  expectedCount: number,
  expectNext: boolean,
): Promise<Row> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < samples + 3; i++) {
    const start = performance.now();
    const response = await get(url);
    const body = await response.text();
    const elapsed = performance.now() - start;
    if (response.status !== 200) throw new Error(`${name}: ${response.status} ${body.slice(0, 200)}`);
    const count = (JSON.parse(body) as { data: unknown[] }).data.length;
    if (count !== expectedCount || response.headers.has('next-page') !== expectNext) {
      throw new Error(
        `${name}: got ${count} records (expected ${expectedCount}), Next-Page ${response.headers.has('next-page')}`,
      );
    }
    bytes = body.length;
    if (i >= 3) times.push(elapsed); // the first three warm up
  }
  times.sort((a, b) => a - b);
  return {
    scenario: name,
    value: `p50 ${formatNumber(percentile(times, 50), 1)} ms`,
    detail:
      `p95 ${formatNumber(percentile(times, 95), 1)} ms; ${samples} sequential requests, ` +
      `${formatNumber(expectedCount)} records, ${formatNumber(bytes / 1024)} KiB`,
  };
}

/** Swaps `_limit` in a Next-Page URL (the keyset token does not depend on it). */
function withLimit(url: string, limit: number, drop: string[] = []): string {
  const parsed = new URL(url);
  parsed.searchParams.set('_limit', String(limit));
  for (const name of drop) parsed.searchParams.delete(name);
  return parsed.toString();
}

/**
 * Walks the whole list (ids only, WALK_PAGE per page) following Next-Page: checks that every
 * record comes exactly once, and returns, for each page size, the URL of the last page (built
 * from the server's own tokens) and how many records it holds.
 */
async function lastPageUrls(origin: string, total: number): Promise<Map<number, { url: string; count: number }>> {
  let url: string | null = `${origin}${RECORDS_PATH}?_fields=id&_limit=${WALK_PAGE}`;
  let previousUrl = url;
  let lastPageSize = 0;
  const seen = new Set<string>();
  let pages = 0;
  while (url) {
    const response = await get(url);
    if (response.status !== 200) throw new Error(`walk: ${response.status}`);
    const { data } = (await response.json()) as { data: Array<{ id: string }> };
    for (const { id } of data) seen.add(id);
    pages++;
    lastPageSize = data.length;
    previousUrl = url;
    url = response.headers.get('next-page');
  }
  if (seen.size !== total)
    throw new Error(`walk: saw ${seen.size} distinct records in ${pages} pages, expected ${total}`);
  const result = new Map<number, { url: string; count: number }>();
  for (const size of PAGE_SIZES) {
    // The last page of `size` records: the tail of the last WALK_PAGE page.
    const count = total % size || size;
    const skip = lastPageSize - count;
    let last = previousUrl;
    if (skip > 0) {
      const response = await get(withLimit(previousUrl, skip));
      await response.arrayBuffer();
      last = response.headers.get('next-page') ?? '';
      if (!last) throw new Error('walk: no Next-Page before the last page');
    }
    result.set(size, { url: withLimit(last, size, ['_fields']), count });
  }
  console.log(
    `  walked ${formatNumber(pages)} page(s) of ${formatNumber(WALK_PAGE)}: ` +
      `${formatNumber(seen.size)} distinct records`,
  );
  return result;
}

/** First vs last page, for each page size (the walk first: it also checks the data). */
export async function pageRows(origin: string, total: number, samples: number): Promise<Row[]> {
  const rows: Row[] = [];
  const lastPages = await lastPageUrls(origin, total);
  for (const size of PAGE_SIZES) {
    const firstCount = Math.min(size, total);
    rows.push(
      await pageLatency(
        `first page, _limit=${size}`,
        `${origin}${RECORDS_PATH}?_limit=${size}`,
        samples,
        firstCount,
        total > size,
      ),
    );
    const last = lastPages.get(size)!;
    rows.push(await pageLatency(`last page, _limit=${size}`, last.url, samples, last.count, false));
  }
  return rows;
}

/** Single-record GET, random records. */
export async function getRow(cannon: autocannon.Options, total: number): Promise<Row> {
  return loadRow(
    'GET one record (random ids)',
    {
      ...cannon,
      requests: [
        {
          setupRequest: (request) => ({
            ...request,
            path: `${RECORDS_PATH}/${recordId(1 + Math.floor(Math.random() * total))}`,
          }),
        },
      ],
    },
    200,
  );
}

/**
 * `_since` polling: nothing changed (304), then a small change set (CHANGE_SET records updated
 * after the poll's ETag, 200).
 */
export async function pollRows(origin: string, cannon: autocannon.Options, total: number): Promise<Row[]> {
  const rows: Row[] = [];
  const head = await fetch(`${origin}${RECORDS_PATH}?_limit=1`, { headers: { authorization: AUTH } });
  await head.arrayBuffer();
  const etag = head.headers.get('etag')!;
  const since = etag.replaceAll('"', '');
  rows.push(
    await loadRow(
      '_since poll, no change (If-None-Match → 304)',
      { ...cannon, url: `${origin}${RECORDS_PATH}?_since=${since}`, headers: { 'if-none-match': etag } },
      304,
    ),
  );
  for (let i = 1; i <= CHANGE_SET; i++) {
    const id = recordId(Math.ceil((i * total) / (CHANGE_SET + 1)));
    const response = await fetch(`${origin}${RECORDS_PATH}/${id}`, {
      method: 'PATCH',
      headers: { authorization: AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ data: { done: 'changed', nonce: randomUUID() } }),
    });
    if (response.status !== 200) throw new Error(`PATCH ${id}: ${response.status} ${await response.text()}`);
  }
  const check = await get(`${origin}${RECORDS_PATH}?_since=${since}`);
  const changed = ((await check.json()) as { data: unknown[] }).data.length;
  if (changed !== CHANGE_SET) throw new Error(`_since returned ${changed} changes, expected ${CHANGE_SET}`);
  rows.push(
    await loadRow(
      `_since poll, ${CHANGE_SET} changes (200)`,
      { ...cannon, url: `${origin}${RECORDS_PATH}?_since=${since}`, headers: { 'if-none-match': etag } },
      200,
    ),
  );
  return rows;
}
