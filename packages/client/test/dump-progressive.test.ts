/**
 * A dump loaded as it downloads (issue 41 item 4): given a `fetch` response, `loadDump` stores
 * the records in chunks as they arrive — the collection answers queries, and live queries update,
 * before the download ends — and the last chunk writes the sync state (the next sync: one 304).
 * A download cut short rejects, and the next load starts over.
 */
import { describe, expect, inject, it } from 'vitest';
import { createCollection, makeClient, seed, uniqueName } from './support/server.js';

const url = inject('quireUrl');

/** A body that sends `text` up to `cut`, then waits for `release()` (or fails there with `fail()`). */
function gatedBody(text: string, cut: number) {
  const bytes = new TextEncoder().encode(text);
  let release!: () => void;
  let fail!: () => void;
  const gate = new Promise<void>((resolve, reject) => {
    release = resolve;
    fail = () => reject(new Error('connection reset'));
  });
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (let at = 0; at < cut; at += 4096) controller.enqueue(bytes.slice(at, Math.min(at + 4096, cut)));
      try {
        await gate;
      } catch (error) {
        controller.error(error);
        return;
      }
      for (let at = cut; at < bytes.length; at += 4096) controller.enqueue(bytes.slice(at, at + 4096));
      controller.close();
    },
  });
  return { body, release, fail };
}

// Hang guards, not timings: seeding and loading thousands of records on a loaded 2-core CI takes a while.
async function until(check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a dump loaded as it downloads', { timeout: 120_000 }, () => {
  async function dumpText(bucket: string, count: number) {
    await createCollection(url, bucket, 'items');
    await seed(url, bucket, 'items', count, (i) => ({ id: `r${i}`, n: i }));
    const exporter = makeClient(url);
    const dump = await exporter.exportDump(bucket, 'items');
    await exporter.close();
    return JSON.stringify(dump);
  }

  it('is queryable before the download ends, then synced from its timestamp', async () => {
    const bucket = uniqueName('dump-stream');
    const text = await dumpText(bucket, 3000);
    const client = makeClient(url);
    const items = client.bucket(bucket).collection('items', { indexes: ['n'] });
    const seen: number[] = [];
    const live = items.live((c) => c.count());
    const unsubscribe = live.subscribe((count) => count !== undefined && seen.push(count));
    const { body, release } = gatedBody(text, Math.floor(text.length * 0.4));
    const loading = items.loadDump(new Response(body));
    await until(async () => (await items.count()) > 0);
    const early = await items.count();
    expect(early).toBeGreaterThanOrEqual(500);
    expect(early).toBeLessThan(3000);
    // The dump is newest first: the last record seeded is in the first chunk.
    expect((await items.list({ index: 'n', equals: 2999 })).map((r) => r.id)).toEqual(['r2999']);
    release();
    expect(await loading).toEqual({ loaded: 3000, skipped: 0 });
    expect(await items.count()).toBe(3000);
    await until(async () => seen.at(-1) === 3000);
    expect(seen.some((count) => count > 0 && count < 3000)).toBe(true);
    expect(await items.sync()).toMatchObject({ ok: true, notModified: true, pulled: 0 });
    unsubscribe();
    await client.close();
  });

  it('cut short: rejects, and the next load starts it over', async () => {
    const bucket = uniqueName('dump-stream');
    const text = await dumpText(bucket, 1500);
    const client = makeClient(url);
    const items = client.bucket(bucket).collection('items');
    const { body, fail } = gatedBody(text, Math.floor(text.length / 2));
    const loading = items.loadDump(new Response(body));
    await until(async () => (await items.count()) > 0);
    fail();
    await expect(loading).rejects.toThrow();
    expect(await items.loadDump(new Response(text))).toEqual({ loaded: 1500, skipped: 0 });
    expect(await items.count()).toBe(1500);
    expect(await items.sync()).toMatchObject({ ok: true, notModified: true });
    await client.close();
  });
});
