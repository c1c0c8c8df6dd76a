/**
 * The built browser bundle in a real Chromium (Debian's, driven by playwright-core): a page syncs
 * a collection from the server into real IndexedDB, writes offline-first, pushes, and finds its
 * replica again after a reload. Skips with a printed reason when Chromium is missing, unless
 * QUIRE_TEST_REQUIRE_BROWSER=1 (CI), where that is a failure.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type BrowserHarness, chromiumAvailable, launchBrowser } from './support/browser.js';
import { createCollection, raw, seed, uniqueName } from './support/server.js';

const available = chromiumAvailable('browser test');
const url = inject('quireUrl');

const PAGE = `<!doctype html><meta charset="utf-8"><title>quire e2e</title>
<script type="module">
  import * as Quire from './quire-client.js';
  import { createClient } from './quire-client.js';
  window.Quire = Quire;
  window.quire = async (remote, bucket, action) => {
    const client = createClient({ remote, auth: { type: 'basic', username: 'browser', password: 'secret' } });
    const items = client.bucket(bucket).collection('items', { indexes: ['n'], pageSize: 100 });
    const before = await items.count();
    const progress = [];
    let result = null;
    if (action === 'sync' || action === 'write-and-sync') {
      if (action === 'write-and-sync') await items.create({ id: 'from-browser', n: -1 });
      result = await items.sync({ onProgress: (p) => progress.push(p.done + '/' + p.total) });
    }
    const lowest = (await items.list({ index: 'n', limit: 3 })).map((r) => r.n);
    const after = await items.count();
    const databases = (await indexedDB.databases()).map((d) => d.name);
    await client.close();
    return { before, after, result, progress, lowest, databases, hasLocks: !!navigator.locks };
  };
  window.ready = true;
</script>`;

describe.skipIf(!available)('in a real browser', () => {
  let harness: BrowserHarness;
  let origin: string;

  beforeAll(async () => {
    harness = await launchBrowser(PAGE);
    origin = harness.origin;
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it('syncs a collection into real IndexedDB, pushes a local write and keeps the replica across reloads', async () => {
    const bucket = uniqueName('browser');
    await createCollection(url, bucket, 'items', 'browser');
    await seed(url, bucket, 'items', 250, (i) => ({ id: `r${i}`, n: i }), 'browser');
    const { context, page, errors } = await harness.openPage();

    type Outcome = {
      before: number;
      after: number;
      result: { ok: boolean; pulled: number; pushed: number } | null;
      progress: string[];
      lowest: number[];
      databases: string[];
      hasLocks: boolean;
    };
    const run = (action: string) =>
      page.evaluate(
        ([remote, b, a]) =>
          (window as unknown as { quire: (...args: string[]) => Promise<unknown> }).quire(remote!, b!, a!),
        [url, bucket, action],
      ) as Promise<Outcome>;

    const first = await run('sync');
    expect(first.before).toBe(0);
    expect(first.result).toMatchObject({ ok: true, pulled: 250, pushed: 0 });
    expect(first.after).toBe(250);
    expect(first.progress).toEqual(['100/250', '200/250', '250/250']);
    expect(first.lowest).toEqual([0, 1, 2]);
    expect(first.databases).toContain(`quire:${bucket}/items`);
    expect(first.hasLocks).toBe(true);

    const second = await run('write-and-sync');
    expect(second.result).toMatchObject({ ok: true, pushed: 1 });
    expect(
      (await raw(url, 'GET', `/buckets/${bucket}/collections/items/records/from-browser`, undefined, 'browser')).body
        .data.n,
    ).toBe(-1);

    await page.reload();
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    const third = await run('read');
    expect(third.before).toBe(251);
    expect(third.lowest).toEqual([-1, 0, 1]);
    expect(errors).toEqual([]);
    await context.close();
  });

  const openPage = () => harness.openPage();

  it('real quota full: QUIRE_ERR_STORE_QUOTA + the quota event, nothing lost, sync resumes with room', async () => {
    const bucket = uniqueName('quota');
    await createCollection(url, bucket, 'items', 'browser');
    // Incompressible (IndexedDB compresses what it stores): 1000 × 2 KB against a 600 KB quota.
    await seed(
      url,
      bucket,
      'items',
      1000,
      (i) => ({ id: `r${i}`, n: i, filler: randomBytes(1500).toString('base64') }),
      'browser',
    );
    const { context, page, errors } = await openPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 600_000 });
    type Outcome = {
      error: { code?: string; store: boolean } | null;
      events: { code: string; quota: number | null }[];
      held: number;
      pending: number;
      ok?: boolean;
    };
    const full = (await page.evaluate(
      async ([remote, b]) => {
        const { createClient, StoreError } = (window as unknown as { Quire: typeof import('../src/index.js') }).Quire;
        const client = createClient({
          remote: remote!,
          auth: { type: 'basic', username: 'browser', password: 'secret' },
        });
        const items = client.bucket(b!).collection('items', { pageSize: 100 });
        await items.create({ id: 'draft', n: -1 });
        const events: { code: string; quota: number | null }[] = [];
        items.on('quota', (event) => events.push({ code: event.error.code, quota: event.quota }));
        let error: { code?: string; store: boolean } | null = null;
        await items
          .sync()
          .catch((caught: { code?: string }) => (error = { code: caught.code, store: caught instanceof StoreError }));
        await new Promise((resolve) => setTimeout(resolve, 200));
        const outcome = { error, events, held: await items.count(), pending: await items.pending() };
        await client.close();
        return outcome;
      },
      [url, bucket],
    )) as Outcome;
    expect(full.error).toEqual({ code: 'QUIRE_ERR_STORE_QUOTA', store: true });
    expect(full.events).toEqual([{ code: 'QUIRE_ERR_STORE_QUOTA', quota: expect.any(Number) }]);
    expect(full.held).toBeGreaterThan(1); // the pages stored before the full one, and the draft
    expect(full.held).toBeLessThan(1001);
    expect(full.pending).toBe(1);

    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
    const resumed = (await page.evaluate(
      async ([remote, b]) => {
        const { createClient } = (window as unknown as { Quire: typeof import('../src/index.js') }).Quire;
        const client = createClient({
          remote: remote!,
          auth: { type: 'basic', username: 'browser', password: 'secret' },
        });
        const items = client.bucket(b!).collection('items', { pageSize: 100 });
        const result = await items.sync();
        const outcome = {
          error: null,
          events: [],
          ok: result.ok,
          held: await items.count(),
          pending: await items.pending(),
        };
        await client.close();
        return outcome;
      },
      [url, bucket],
    )) as Outcome;
    expect(resumed).toMatchObject({ ok: true, held: 1001, pending: 0 });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('started offline: no request until the browser is online, then it syncs and listens at once', async () => {
    const bucket = uniqueName('offline');
    await createCollection(url, bucket, 'items', 'browser');
    const { context, page, errors } = await openPage();
    await context.setOffline(true);
    type OfflineTest = { client: import('../src/index.js').QuireClient; attempts: string[] };
    const started = await page.evaluate(
      async ([remote, b]) => {
        const { createClient } = (window as unknown as { Quire: typeof import('../src/index.js') }).Quire;
        const attempts: string[] = [];
        const client = createClient({
          remote: remote!,
          auth: { type: 'basic', username: 'browser', password: 'secret' },
          fetch: (input, init) => {
            attempts.push(input);
            return fetch(input, init);
          },
        });
        Object.assign(window, { offlineTest: { client, attempts } });
        const items = client.bucket(b!).collection('items');
        await items.create({ id: 'written-offline', n: 1 });
        const mode = await items.startAutoSync();
        await new Promise((resolve) => setTimeout(resolve, 4500));
        return { online: navigator.onLine, mode, attempts: attempts.length, state: client.live.status.state };
      },
      [url, bucket],
    );
    expect(started).toEqual({ online: false, mode: 'none', attempts: 0, state: 'offline' });

    await context.setOffline(false);
    await expect
      .poll(
        async () =>
          (await raw(url, 'GET', `/buckets/${bucket}/collections/items/records/written-offline`, undefined, 'browser'))
            .status,
        { timeout: 15_000 },
      )
      .toBe(200);
    await expect
      .poll(
        () =>
          page.evaluate(
            () => (window as unknown as { offlineTest: OfflineTest }).offlineTest.client.live.status.connected,
          ),
        { timeout: 15_000 },
      )
      .toBe(true);
    await page.evaluate(() => (window as unknown as { offlineTest: OfflineTest }).offlineTest.client.close());
    expect(errors).toEqual([]);
    await context.close();
  });

  it('WebCrypto encryption: Node decrypts what it encrypts and back; wrong passphrase: DecryptionError', async () => {
    const bucket = uniqueName('e2e');
    await createCollection(url, bucket, 'notes', 'browser');
    const { context, page, errors } = await openPage();
    type Seen = { titles: string[]; error: { code?: string; name?: string } | null };
    const inBrowser = (passphrase: string, write: boolean) =>
      page.evaluate(
        async ([remote, b, secret, doWrite]) => {
          const { createClient, encryptionTransformer } = (
            window as unknown as { Quire: typeof import('../src/index.js') }
          ).Quire;
          const client = createClient({
            remote: remote as string,
            auth: { type: 'basic', username: 'browser', password: 'secret' },
            dbPrefix: `p-${secret}`,
          });
          const notes = client.bucket(b as string).collection('notes', {
            transformers: [encryptionTransformer({ passphrase: secret as string, iterations: 1000 })],
          });
          if (doWrite) await notes.create({ id: 'from-browser', title: 'written in Chromium' });
          let error: { code?: string; name?: string } | null = null;
          await notes
            .sync()
            .catch((caught: { code?: string; name?: string }) => (error = { code: caught.code, name: caught.name }));
          const titles = (await notes.list()).map((note) => note.title as string).sort();
          await client.close();
          return { titles, error };
        },
        [url, bucket, passphrase, write] as const,
      ) as Promise<Seen>;
    expect(await inBrowser('shared secret', true)).toEqual({ titles: ['written in Chromium'], error: null });
    const stored = (
      await raw(url, 'GET', `/buckets/${bucket}/collections/notes/records/from-browser`, undefined, 'browser')
    ).body.data;
    expect(Object.keys(stored).sort()).toEqual(['ciphertext', 'id', 'iv', 'last_modified', 'quire_e2e']);

    const { encryptionTransformer } = await import('../src/index.js');
    const { makeClient } = await import('./support/server.js');
    const node = makeClient(url, { user: 'browser' });
    const notes = node.bucket(bucket).collection('notes', {
      transformers: [encryptionTransformer({ passphrase: 'shared secret', iterations: 1000 })],
    });
    await notes.sync();
    expect(await notes.get('from-browser')).toMatchObject({ title: 'written in Chromium' });
    await notes.create({ id: 'from-node', title: 'written in Node' });
    await notes.sync();
    await node.close();

    expect(await inBrowser('shared secret', false)).toEqual({
      titles: ['written in Chromium', 'written in Node'],
      error: null,
    });
    expect(await inBrowser('not the secret', false)).toEqual({
      titles: [],
      error: { code: 'QUIRE_ERR_CRYPTO_DECRYPT', name: 'DecryptionError' },
    });
    expect(errors).toEqual([]);
    await context.close();
  });
});
