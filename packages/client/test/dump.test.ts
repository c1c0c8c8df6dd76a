/**
 * Instant first start: a dump made from a server (exportDump, the quire-dump command) loaded into
 * an empty replica in one transaction, then kept current with `_since` from it; into a replica
 * that holds something, only newer records, never over a pending change.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { type Dump, encryptionTransformer, type FetchLike } from '../src/index.js';
import { createCollection, makeClient, raw, seed, uniqueName } from './support/server.js';

const url = inject('quireUrl');
const packageRoot = fileURLToPath(new URL('..', import.meta.url));

function counting(): { fetch: FetchLike; calls: string[] } {
  const calls: string[] = [];
  const counted: FetchLike = (input, init) => {
    calls.push(`${init.method ?? 'GET'} ${new URL(input).search}`);
    return fetch(input, init);
  };
  return { fetch: counted, calls };
}

describe('dumps', () => {
  it('loads a dump into an empty replica; the first sync is one 304 or brings only what changed since', async () => {
    const bucket = uniqueName('dump');
    await createCollection(url, bucket, 'items');
    await seed(url, bucket, 'items', 600, (i) => ({ id: `r${i}`, n: i }));
    await raw(url, 'DELETE', `/buckets/${bucket}/collections/items/records/r7`);
    const exporter = makeClient(url);
    const dump = await exporter.exportDump(bucket, 'items', { pageSize: 250 });
    await exporter.close();
    expect(dump.data).toHaveLength(599);
    expect(dump).toMatchObject({ bucket, collection: 'items', timestamp: expect.any(Number) });

    const requests = counting();
    const client = makeClient(url, { fetch: requests.fetch });
    const items = client.bucket(bucket).collection('items', { indexes: ['n'] });
    expect(await items.loadDump(JSON.parse(JSON.stringify(dump)) as Dump)).toEqual({ loaded: 599, skipped: 0 });
    expect(await items.count()).toBe(599);
    expect((await items.list({ index: 'n', between: [5, 8] })).map((record) => record.id)).toEqual(['r5', 'r6', 'r8']);
    expect(requests.calls).toEqual([]);
    const first = await items.sync();
    expect(first).toMatchObject({ ok: true, notModified: true, pulled: 0 });
    // One 304, and the first permission check (a dump may come from someone who reads more).
    expect(requests.calls).toEqual([
      `GET ?_sort=-last_modified&_limit=2000&_since=${Math.max(...dump.data.map((r) => r.last_modified))}`,
      'HEAD ',
    ]);

    // A change after the dump: the next sync brings it alone (and the permission check).
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/r1`, { data: { n: 1001 } });
    await raw(url, 'DELETE', `/buckets/${bucket}/collections/items/records/r2`);
    requests.calls.length = 0;
    const next = await items.sync();
    expect(next).toMatchObject({ ok: true, pulled: 2, removed: 0 });
    expect(await items.count()).toBe(598);
    expect(requests.calls.map((call) => call.split(' ')[0])).toEqual(['GET', 'HEAD']);
    await client.close();
  });

  it('into a non-empty replica: newer records only, a pending change untouched, the sync state kept', async () => {
    const bucket = uniqueName('dump');
    await createCollection(url, bucket, 'items');
    await seed(url, bucket, 'items', 20, (i) => ({ id: `r${i}`, n: i }));
    const client = makeClient(url);
    const items = client.bucket(bucket).collection('items');
    await items.sync();
    await items.update('r1', { n: -1 });
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/r1`, { data: { n: 101 } });
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/r2`, { data: { n: 102 } });
    await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/new`, { data: { n: 103 } });
    const dump = await client.exportDump(bucket, 'items');
    expect(await items.loadDump(dump)).toEqual({ loaded: 2, skipped: 19 });
    expect(await items.get('r1')).toMatchObject({ n: -1 });
    expect(await items.get('r2')).toMatchObject({ n: 102 });
    expect(await items.get('new')).toMatchObject({ n: 103 });
    const result = await items.sync({ strategy: 'server-wins' });
    expect(result.conflicts.map((conflict) => conflict.id)).toEqual(['r1']);
    expect(await items.count()).toBe(21);
    await client.close();
  });

  it("takes the original client's form (an array of records) and an encrypted dump (decrypted on load)", async () => {
    const bucket = uniqueName('dump');
    await createCollection(url, bucket, 'secret');
    const transformers = [encryptionTransformer({ passphrase: 'pw', iterations: 1000 })];
    const writer = makeClient(url);
    const secret = writer.bucket(bucket).collection('secret', { transformers });
    for (let i = 0; i < 5; i++) await secret.create({ id: `s${i}`, text: `secret ${i}` });
    await secret.sync();
    const dump = await writer.exportDump(bucket, 'secret');
    expect(JSON.stringify(dump)).not.toContain('secret 1');
    await writer.close();

    const reader = makeClient(url);
    const copy = reader.bucket(bucket).collection('secret', { transformers });
    expect(await copy.loadDump(dump.data)).toEqual({ loaded: 5, skipped: 0 });
    expect(await copy.get('s1')).toMatchObject({ text: 'secret 1' });
    expect(await copy.sync()).toMatchObject({ ok: true, pulled: 0 });
    await reader.close();
  });

  it('exports consistently when the collection changes while it is read (412 → read again)', async () => {
    const bucket = uniqueName('dump');
    await createCollection(url, bucket, 'items');
    await seed(url, bucket, 'items', 30, (i) => ({ id: `r${i}`, n: i }));
    let wrote = false;
    const client = makeClient(url, {
      fetch: async (input, init) => {
        if (!wrote && new URL(input).searchParams.has('_token')) {
          wrote = true;
          await raw(url, 'PUT', `/buckets/${bucket}/collections/items/records/during`, { data: { n: -1 } });
        }
        return fetch(input, init);
      },
    });
    const dump = await client.exportDump(bucket, 'items', { pageSize: 10 });
    expect(wrote).toBe(true);
    expect(dump.data).toHaveLength(31);
    const head = await raw(url, 'HEAD', `/buckets/${bucket}/collections/items/records`);
    expect(dump.timestamp).toBe(Number(JSON.parse(head.headers.get('etag')!)));
    await client.close();
  });

  it('quire-dump writes the dump to a file (the password from QUIRE_PASSWORD)', async () => {
    const bucket = uniqueName('dump');
    await createCollection(url, bucket, 'items');
    await seed(url, bucket, 'items', 12, (i) => ({ id: `r${i}`, n: i }));
    const dir = mkdtempSync(join(tmpdir(), 'quire-dump-'));
    try {
      const out = join(dir, 'items.json');
      const { stderr } = await promisify(execFile)(
        process.execPath,
        [
          '--conditions=@quire/source',
          '--import',
          'tsx',
          'cli/quire-dump.ts',
          '--remote',
          url,
          '--bucket',
          bucket,
          '--collection',
          'items',
          '--user',
          'alice',
          '--out',
          out,
        ],
        { cwd: packageRoot, env: { ...process.env, QUIRE_PASSWORD: 'secret' } },
      );
      expect(stderr).toMatch(/12 records, timestamp \d+/);
      const dump = JSON.parse(readFileSync(out, 'utf8')) as Dump;
      expect(dump).toMatchObject({ bucket, collection: 'items', timestamp: expect.any(Number) });
      expect(dump.data).toHaveLength(12);
      const missing = await promisify(execFile)(
        process.execPath,
        ['--conditions=@quire/source', '--import', 'tsx', 'cli/quire-dump.ts', '--remote', url],
        { cwd: packageRoot },
      ).catch((error: { code: number; stderr: string }) => error);
      expect(missing).toMatchObject({ code: 2, stderr: expect.stringContaining('usage: quire-dump') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a dump load cut short', () => {
  it('leaves a marker: the next load starts over (first-attempt records not in the new dump are gone)', async () => {
    const { IDBObjectStore } = await import('fake-indexeddb');
    const make = (count: number, stamp: number) => ({
      timestamp: stamp + count,
      data: Array.from({ length: count }, (_, i) => ({ id: `d${i}`, last_modified: stamp + i, n: i })),
    });
    const client = makeClient(url);
    const items = client.bucket(uniqueName('cut')).collection('items');
    const put = IDBObjectStore.prototype.put;
    let puts = 0;
    IDBObjectStore.prototype.put = function (this: IDBObjectStore, ...args: Parameters<typeof put>) {
      if (this.name === 'records' && ++puts > 5000)
        throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
      return put.apply(this, args);
    };
    try {
      await expect(items.loadDump(make(7000, 1_000))).rejects.toMatchObject({ code: 'QUIRE_ERR_STORE_QUOTA' });
    } finally {
      IDBObjectStore.prototype.put = put;
    }
    expect(await items.count()).toBe(5000); // the first chunk, committed
    expect(await items.loadDump(make(6000, 2_000))).toEqual({ loaded: 6000, skipped: 0 });
    expect(await items.count()).toBe(6000);
    expect(await items.get('d6500')).toBeUndefined();
    expect(await items.get('d0')).toMatchObject({ last_modified: 2_000 });
    await client.close();
  });
});
