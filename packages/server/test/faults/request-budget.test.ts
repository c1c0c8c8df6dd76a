/**
 * Every request within a budget (issue 36), with the hostile-input frame (hostile.ts), on both
 * stores, anonymous, each input through HTTP and as a batch's sub-request:
 * - generated queries up to and past every input limit (engine/request-input.ts): at the limit
 *   answered, past it 400 (errno 107) naming the setting, the same both ways, no stall over 100 ms;
 * - the batch that froze the process 28 s: the monitor with 50,000 `exclude_collection` values;
 * - memory: a batch of 5 GETs over 100 records of 1 MB streams (RSS within a fixed overhead of
 *   the largest record, back after);
 * - a bystander beside 12 requests at the limits: no 5xx (its p99 is printed; see the case).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { INPUT_SETTINGS } from '../../src/engine/settings.js';
import { describeOnBackends } from '../helpers/backends.js';
import { type HostileTarget, hostileTarget, tryHostile, underLoad } from './hostile.js';

// A full collection on demand (RSS back after a request): V8's own `gc`, reached from a new context.
setFlagsFromString('--expose-gc');

const RECORDS = '/buckets/b/collections/c/records';
const MONITOR = '/buckets/monitor/collections/changes/records';
const STALL_MS = 100;
const limit = (name: keyof typeof INPUT_SETTINGS) => INPUT_SETTINGS[name].default as number;

/** A query at `size` of one limit: [setting, query]. */
const INPUTS: Array<[keyof typeof INPUT_SETTINGS, (size: number) => string]> = [
  ['max_query_list_length', (n) => `in_id=${Array.from({ length: n }, (_, i) => `r${i}`).join(',')}`],
  ['max_query_list_length', (n) => `exclude_n=${Array.from({ length: n }, (_, i) => i).join(',')}`],
  ['max_query_contains_length', (n) => `contains_any_tags=[${Array.from({ length: n }, (_, i) => `"t${i}"`)}]`],
  ['max_query_fields', (n) => `_fields=${Array.from({ length: n }, (_, i) => `f${i}`).join(',')}`],
  ['max_query_sort_fields', (n) => `_sort=${Array.from({ length: n }, (_, i) => `-f${i}`).join(',')}`],
  ['max_query_filters', (n) => Array.from({ length: n }, (_, i) => `min_n=${i}`).join('&')],
  ['max_query_field_depth', (n) => `eq_${Array.from({ length: n }, (_, i) => `f${i}`).join('.')}=1`],
  ['max_query_field_length', (n) => `eq_${'f'.repeat(n)}=1`],
  ['max_query_like_length', (n) => `like_title=${'*a'.repeat(Math.floor(n / 2))}${n % 2 ? '*' : ''}`],
  // One less: `_limit` is one of them.
  ['max_query_params', (n) => Array.from({ length: n - 1 }, (_, i) => `_x${i}=1`).join('&')],
];

describeOnBackends('request budget', { timeout: 300_000 }, (backend) => {
  let target: HostileTarget;

  beforeAll(async () => {
    target = await hostileTarget(backend, {
      settings: { changes_enabled: true },
      seed: async (storage) => {
        await storage.transaction((session) =>
          session.objects.insertMany(
            { resourceName: 'record', parentId: '/buckets/b/collections/c' },
            Array.from({ length: 2000 }, (_, i) => ({
              id: `r${i}`,
              data: { n: i, title: `title ${i} ${'lorem '.repeat(20)}`, tags: [`t${i % 9}`], body: 'x'.repeat(800) },
            })),
          ),
        );
      },
    });
  }, 120_000);
  afterAll(() => target?.close());

  it('answers every input at its limit, and 400 naming the limit past it, the same by HTTP and by batch', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...INPUTS),
        fc.constantFrom(RECORDS, MONITOR),
        fc.boolean(),
        async ([setting, query], path, past) => {
          const size = limit(setting) + (past ? 1 : 0);
          // A page of 100: what is measured is the input's cost, not the page's (2 MB here).
          const trial = await tryHostile(target, { method: 'GET', path: `${path}?_limit=100&${query(size)}` });
          expect(trial.batch.status, setting).toBe(trial.http.status);
          if (past) {
            expect(trial.http, setting).toMatchObject({ status: 400, errno: 107 });
            expect(trial.http.message).toContain(setting);
            expect(trial.batch.message).toContain(setting);
          } else expect(trial.http.status, `${setting} ${trial.http.message}`).toBe(200);
          expect(trial.worstStallMs, `${setting} on ${path}`).toBeLessThan(STALL_MS);
        },
      ),
      { numRuns: 40, seed: 36 },
    );
  });

  it('refuses the anonymous batch that froze the process: monitor with 50,000 exclude_collection values', async () => {
    const values = Array.from({ length: 50_000 }, (_, i) => `c${i}`).join(',');
    const trial = await tryHostile(target, { method: 'GET', path: `${MONITOR}?exclude_collection=${values}` });
    // From the network the URL is past max_header_bytes (431); in a batch, the same.
    expect([trial.http.status, trial.batch.status]).toEqual([431, 431]);
    const shorter = Array.from({ length: 2_000 }, (_, i) => `c${i}`).join(',');
    const listed = await tryHostile(target, { method: 'GET', path: `${MONITOR}?exclude_collection=${shorter}` });
    expect(listed.batch).toMatchObject({ status: 400, errno: 107 });
    expect(listed.batch.message).toContain('max_query_list_length');
    expect(trial.worstStallMs + listed.worstStallMs).toBeLessThan(2 * STALL_MS);
  });

  it('keeps a bystander served beside 12 requests at the limits (no 5xx; p99 printed)', async () => {
    const fields = Array.from({ length: limit('max_query_fields') }, (_, i) => `f${i}.a`).join(',');
    const load = await underLoad(target, { method: 'GET', path: `${RECORDS}?_fields=${fields}&_sort=-title` });
    console.log(`[request budget, ${backend.name}] bystander beside 12 hostile: ${JSON.stringify(load.bystander)}`);
    expect(load.hostile.every((answer) => answer.status === 200)).toBe(true);
    expect(load.bystander.failures).toBe(0);
    // Not asserted yet: p99 ≤ 250 ms. Only 4 of the 12 run at once (http/fair-admission.ts), and
    // their slices take one owner's share of each turn of the event loop (engine/loop-turns.ts).
    // With ~100 requests the p99 is the slowest one, and what it still waits for is garbage
    // collection: scavenges of 20-150 ms on the loaded 2-core machine (perf_hooks 'gc', kind 1).
    // Measured there after loop-turns: p99 152-682 ms embedded, 213-507 ms PostgreSQL (was 290-615).
    expect(load.bystander.requests).toBeGreaterThan(0);
  });
});

describeOnBackends('request budget: memory', { timeout: 300_000 }, (backend) => {
  let target: HostileTarget;
  const RECORD_BYTES = 1_000_000;

  beforeAll(async () => {
    target = await hostileTarget(backend, {
      seed: async (storage) => {
        for (let start = 0; start < 100; start += 10) {
          await storage.transaction((session) =>
            session.objects.insertMany(
              { resourceName: 'record', parentId: '/buckets/b/collections/c' },
              Array.from({ length: 10 }, (_, k) => ({ id: `r${start + k}`, data: { blob: 'y'.repeat(RECORD_BYTES) } })),
            ),
          );
        }
      },
    });
  }, 240_000);
  afterAll(() => target?.close());

  it('streams a batch of 5 GETs over 100 records of 1 MB: RSS within a fixed overhead, back after', async () => {
    // The case: 603 → 3,769 MB, and it stayed at 3.3 GB.
    const requests = Array.from({ length: 5 }, () => ({ method: 'GET', path: RECORDS }));
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    const trial = await tryHostile(target, { method: 'POST', path: '/batch', body: { requests } });
    clearInterval(sampler);
    // Back after: what V8 and malloc give back to the system comes some time after a collection
    // (the machine's load delays both); a leak never comes back.
    const gc = runInNewContext('gc') as () => void;
    for (const until = Date.now() + 10_000; Date.now() < until; ) {
      gc();
      if (process.memoryUsage().rss - baseline < 100e6) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const mb = (bytes: number) => Math.round(bytes / 1e6);
    console.log(
      `[request budget, ${backend.name}] 5 GETs of 1 MB records: ` +
        `RSS ${mb(baseline)} → peak ${mb(peak)} → ${mb(process.memoryUsage().rss)} MB, ` +
        `answers of ${mb(trial.http.bytes)} MB`,
    );
    expect(trial.http.status).toBe(200);
    // Each page stops at max_page_bytes (8 MB): 5 pages, with Next-Page.
    expect(trial.http.bytes).toBeGreaterThan(5 * 7 * RECORD_BYTES);
    // A fixed overhead (chunks, a page, the entry being written) beside 2 × the largest record.
    expect(peak - baseline).toBeLessThan(2 * RECORD_BYTES + 200e6);
    expect(process.memoryUsage().rss - baseline).toBeLessThan(100e6);
  });
});
