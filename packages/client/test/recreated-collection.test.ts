/**
 * A collection deleted and re-created under a replica (issue 29, defect 3): the server's copy is
 * emptied, and the protocol says so the way Kinto does — a `_since` poll returns nothing while the
 * collection's timestamp moves past the replica's. The replica drops the synced records the
 * server no longer has, keeps its local changes (pending, or as conflicts under `manual`), and
 * reports `serverFlushed`. Run against Quire and against a server answering as the original Kinto
 * does (support/kinto-like-server.ts: the re-created collection's timestamp is stored afresh).
 * kinto.js, the original's own client, must see "Server has been flushed" from Quire too.
 */
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import Kinto from 'kinto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startKintoLikeServer, type KintoLikeServer } from './support/kinto-like-server.js';
import { basicAuth, makeClient, raw, uniqueName } from './support/server.js';

type Note = { title: string };

let kintoLike: KintoLikeServer;
beforeAll(async () => {
  kintoLike = await startKintoLikeServer();
});
afterAll(() => kintoLike.close());

const servers: Array<[string, () => string]> = [
  ['Quire', () => inject('quireUrl')],
  ['a server answering as the original Kinto', () => kintoLike.url],
];

describe.each(servers)('a collection deleted and re-created under a replica, against %s', (_name, urlOf) => {
  /** A bucket with collection `notes` holding r1, r2, r3, and a replica synced with it. */
  async function syncedReplica(strategy: 'manual' | 'server-wins' | 'client-wins' = 'manual') {
    const url = urlOf();
    const bucket = uniqueName('recreated');
    const put = async (path: string, body: unknown = { data: {} }) => {
      const response = await raw(url, 'PUT', path, body);
      expect(response.status, `PUT ${path}: ${JSON.stringify(response.body)}`).toBeLessThan(300);
    };
    await put(`/buckets/${bucket}`);
    await put(`/buckets/${bucket}/collections/notes`);
    for (const id of ['r1', 'r2', 'r3'])
      await put(`/buckets/${bucket}/collections/notes/records/${id}`, { data: { title: `server ${id}` } });
    const client = makeClient(url);
    const notes = client.bucket(bucket).collection<Note>('notes', { strategy });
    expect(await notes.sync()).toMatchObject({ ok: true, pulled: 3, serverFlushed: false });
    const recreate = async () => {
      expect((await raw(url, 'DELETE', `/buckets/${bucket}/collections/notes`)).status).toBe(200);
      await put(`/buckets/${bucket}/collections/notes`);
    };
    const serverIds = async () =>
      ((await raw(url, 'GET', `/buckets/${bucket}/collections/notes/records`)).body.data as Array<{ id: string }>)
        .map((r) => r.id)
        .sort();
    return { url, bucket, client, notes, put, recreate, serverIds };
  }

  it('without local changes: the synced records go, the result says the server was flushed', async () => {
    const { client, notes, put, bucket, recreate } = await syncedReplica();
    await recreate();
    const result = await notes.sync();
    expect(result).toMatchObject({ ok: true, serverFlushed: true, removed: 3, pulled: 0, pushed: 0, conflicts: [] });
    expect(await notes.list()).toEqual([]);

    // Nothing is reported twice, and what the re-created collection receives comes down.
    expect(await notes.sync()).toMatchObject({ ok: true, serverFlushed: false, removed: 0 });
    await put(`/buckets/${bucket}/collections/notes/records/new`, { data: { title: 'after' } });
    expect(await notes.sync()).toMatchObject({ ok: true, serverFlushed: false, pulled: 1 });
    expect((await notes.list()).map((r) => r.id)).toEqual(['new']);
    await client.close();
  });

  it('local changes (server-wins, client-wins) stay pending, re-creating their records; synced ones go', async () => {
    for (const strategy of ['server-wins', 'client-wins'] as const) {
      const { client, notes, recreate, serverIds } = await syncedReplica(strategy);
      await notes.update('r1', { title: 'edited offline' });
      await notes.delete('r2');
      await notes.create({ id: 'draft', title: 'new offline' });
      await recreate();
      const result = await notes.sync();
      expect(result, strategy).toMatchObject({
        ok: true,
        serverFlushed: true,
        removed: 1,
        pushed: 2,
        conflicts: [],
        errors: [],
      });
      expect(await serverIds()).toEqual(['draft', 'r1']);
      expect((await notes.list()).map((r) => [r.id, r.title])).toEqual([
        ['draft', 'new offline'],
        ['r1', 'edited offline'],
      ]);
      expect(await notes.pending()).toBe(0);
      await client.close();
    }
  });

  it('local changes (manual): edits conflict with the deletion, creations are pushed, deletions done', async () => {
    const { client, notes, recreate, serverIds } = await syncedReplica('manual');
    await notes.update('r1', { title: 'edited offline' });
    await notes.delete('r2');
    await notes.create({ id: 'draft', title: 'new offline' });
    await recreate();
    const result = await notes.sync();
    expect(result).toMatchObject({ ok: false, serverFlushed: true, removed: 1, pushed: 1, errors: [] });
    expect(result.conflicts).toMatchObject([
      { id: 'r1', type: 'incoming', resolution: 'manual', local: { title: 'edited offline' }, remote: null },
    ]);
    expect(await serverIds()).toEqual(['draft']);
    expect((await notes.list()).map((r) => r.id)).toEqual(['draft', 'r1']);

    // The app keeps its edit: it re-creates the record.
    await notes.resolve('r1', 'local');
    expect(await notes.sync()).toMatchObject({ ok: true, pushed: 1, serverFlushed: false });
    expect(await serverIds()).toEqual(['draft', 'r1']);
    expect((await notes.get('r1'))?.title).toBe('edited offline');
    await client.close();
  });

  it('a record written to the re-created collection before the poll comes down; the rest still goes', async () => {
    const { client, notes, put, bucket, recreate } = await syncedReplica();
    await recreate();
    await put(`/buckets/${bucket}/collections/notes/records/r2`, { data: { title: 'again' } });
    const result = await notes.sync();
    expect(result).toMatchObject({ ok: true, pulled: 1 });
    // No empty poll here, so no flush signal; the permission check still drops what the server lost.
    expect(result.removed).toBe(2);
    expect((await notes.list()).map((r) => [r.id, r.title])).toEqual([['r2', 'again']]);
    await client.close();
  });
});

describe("kinto.js, the original server's client, against Quire", () => {
  it('reports "Server has been flushed" after a collection is deleted and re-created, as against Kinto', async () => {
    // Its IndexedDB adapter uses the globals (this file's own: vitest isolates files).
    Object.assign(globalThis, { indexedDB: new IDBFactory(), IDBKeyRange });
    for (const url of [inject('quireUrl'), kintoLike.url]) {
      const bucket = uniqueName('kintojs');
      await raw(url, 'PUT', `/buckets/${bucket}`, { data: {} });
      await raw(url, 'PUT', `/buckets/${bucket}/collections/notes`, { data: {} });
      await raw(url, 'PUT', `/buckets/${bucket}/collections/notes/records/r1`, { data: { title: 'x' } });
      const kinto = new Kinto({
        remote: url,
        bucket,
        headers: { Authorization: basicAuth('alice') },
        adapterOptions: { dbName: uniqueName('kintojs-db') },
      } as ConstructorParameters<typeof Kinto>[0]);
      const notes = kinto.collection('notes');
      expect((await notes.sync()).ok).toBe(true);
      expect((await notes.list()).data.map((r) => r.id)).toEqual(['r1']);
      await raw(url, 'DELETE', `/buckets/${bucket}/collections/notes`);
      await raw(url, 'PUT', `/buckets/${bucket}/collections/notes`, { data: {} });
      const flushed = await notes.sync().then(
        () => null,
        (error: Error) => error,
      );
      expect(flushed?.constructor.name, url).toBe('ServerWasFlushedError');
      expect(flushed?.message).toContain('Server has been flushed');
    }
  });
});
