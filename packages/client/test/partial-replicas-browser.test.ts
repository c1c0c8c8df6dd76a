/**
 * Partial replicas in a real Chromium (the built bundle, real IndexedDB): a collection synced with
 * `filters` drops a record another device edited out of the subset, against Quire's
 * `partial_replicas` capability and against a server without it (the fallback). Skips with a
 * printed reason when Chromium is missing, unless QUIRE_TEST_REQUIRE_BROWSER=1.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type BrowserHarness, chromiumAvailable, launchBrowser } from './support/browser.js';
import { createCollection, raw, startServer, type TestServer, uniqueName } from './support/server.js';

const available = chromiumAvailable('partial replicas browser test');

const PAGE = `<!doctype html><meta charset="utf-8"><title>quire partial replica</title>
<script type="module">
  import { createClient } from './quire-client.js';
  window.syncSubset = async (remote, bucket) => {
    const client = createClient({ remote, auth: { type: 'basic', username: 'alice', password: 'secret' } });
    const tasks = client.bucket(bucket).collection('tasks', { indexes: ['done'], filters: { done: false } });
    const result = await tasks.sync();
    const ids = (await tasks.list()).map((r) => r.id).sort();
    await client.close();
    return { ok: result.ok, leftSubset: result.leftSubset ?? 0, ids };
  };
  window.ready = true;
</script>`;

describe.skipIf(!available)('partial replicas in a real browser', () => {
  let harness: BrowserHarness;
  let fallback: TestServer;

  beforeAll(async () => {
    [harness, fallback] = await Promise.all([launchBrowser(PAGE), startServer({ partial_replicas_enabled: false })]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([harness?.close(), fallback?.close()]);
  });

  it.each([
    ['with the capability', () => inject('quireUrl')],
    ['without it (fallback)', () => fallback.url],
  ])('keeps exactly the subset, %s', async (_name, urlOf) => {
    const url = urlOf();
    const bucket = uniqueName('pr-browser');
    await createCollection(url, bucket, 'tasks');
    const put = (id: string, done: boolean) =>
      raw(url, 'PUT', `/buckets/${bucket}/collections/tasks/records/${id}`, { data: { done } });
    await Promise.all([put('a', false), put('b', false), put('c', true)]);
    const { context, page, errors } = await harness.openPage();
    type Outcome = { ok: boolean; leftSubset: number; ids: string[] };
    const sync = () =>
      page.evaluate(
        ([remote, b]) =>
          (window as never as { syncSubset: (r: string, b: string) => Promise<Outcome> }).syncSubset(remote!, b!),
        [url, bucket],
      );
    expect(await sync()).toEqual({ ok: true, leftSubset: 0, ids: ['a', 'b'] });
    await Promise.all([put('a', true), put('d', false)]);
    // A reload (a new client on the same IndexedDB) keeps the subset and its sync state.
    const next = await sync();
    expect(next).toMatchObject({ ok: true, ids: ['b', 'd'] });
    expect(next.leftSubset).toBeGreaterThanOrEqual(1);
    expect(errors).toEqual([]);
    await context.close();
  });
});
