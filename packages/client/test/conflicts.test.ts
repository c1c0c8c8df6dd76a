/**
 * Conflicts against a real server, incoming (found while pulling) and outgoing (412 on push),
 * under every strategy: server wins, client wins, manual, custom merge.
 */
import { describe, expect, inject, it } from 'vitest';
import type { FetchLike } from '../src/index.js';
import { createCollection, makeClient, raw, uniqueName } from './support/server.js';

const server = { url: inject('quireUrl') };

type Note = { title: string; tags?: string[] };

/** A synced replica holding record `r1`, plus a helper to write to the server behind its back. */
async function replica(
  options: Parameters<typeof makeClient>[1] = {},
  strategy?: 'server-wins' | 'client-wins' | 'manual',
) {
  const bucket = uniqueName('c');
  await createCollection(server.url, bucket, 'notes');
  await raw(server.url, 'PUT', `/buckets/${bucket}/collections/notes/records/r1`, { data: { title: 'base' } });
  const client = makeClient(server.url, options);
  const notes = client.bucket(bucket).collection<Note>('notes', strategy ? { strategy } : {});
  await notes.sync();
  const remoteWrite = (method: string, body?: unknown) =>
    raw(server.url, method, `/buckets/${bucket}/collections/notes/records/r1`, body);
  const serverRecord = async () =>
    (await raw(server.url, 'GET', `/buckets/${bucket}/collections/notes/records/r1`)).body?.data;
  return { client, notes, remoteWrite, serverRecord, bucket };
}

/** A fetch that runs `before` once, just before the first /batch request (a concurrent writer). */
function beforeFirstBatch(before: () => Promise<unknown>): FetchLike {
  let done = false;
  return async (input, init) => {
    if (!done && new URL(input).pathname.endsWith('/batch')) {
      done = true;
      await before();
    }
    return fetch(input, init);
  };
}

describe('incoming conflicts (pull)', () => {
  it('server-wins replaces the local edit with the server version', async () => {
    const { notes, remoteWrite, serverRecord } = await replica({}, 'server-wins');
    await notes.update('r1', { title: 'local' });
    await remoteWrite('PUT', { data: { title: 'remote' } });
    const result = await notes.sync();
    expect(result.ok).toBe(true);
    expect(result.conflicts).toMatchObject([
      { id: 'r1', type: 'incoming', resolution: 'remote', local: { title: 'local' }, remote: { title: 'remote' } },
    ]);
    expect(await notes.get('r1')).toEqual(await serverRecord());
    expect(await notes.pending()).toBe(0);
  });

  it('client-wins pushes the local edit over the newer server version', async () => {
    const { notes, remoteWrite, serverRecord } = await replica({}, 'client-wins');
    await notes.update('r1', { title: 'local' });
    await remoteWrite('PUT', { data: { title: 'remote' } });
    const result = await notes.sync();
    expect(result).toMatchObject({ ok: true, pushed: 1, conflicts: [{ id: 'r1', resolution: 'local' }] });
    expect((await serverRecord()).title).toBe('local');
    expect(await notes.get('r1')).toEqual(await serverRecord());
  });

  it('manual keeps the conflict until the app resolves it, then pushes the resolution', async () => {
    const { notes, remoteWrite, serverRecord } = await replica({}, 'manual');
    await notes.update('r1', { title: 'local' });
    await remoteWrite('PUT', { data: { title: 'remote' } });
    const first = await notes.sync();
    expect(first.ok).toBe(false);
    expect(first.conflicts).toMatchObject([{ id: 'r1', resolution: 'manual' }]);
    expect(await notes.conflicts()).toMatchObject([
      { id: 'r1', local: { title: 'local' }, remote: { title: 'remote' } },
    ]);
    // A blocked change is not pushed by later syncs.
    const second = await notes.sync();
    expect(second.pushed).toBe(0);
    expect((await serverRecord()).title).toBe('remote');
    expect((await notes.get('r1'))?.title).toBe('local');

    await notes.resolve('r1', { merged: { title: 'local + remote' } });
    expect(await notes.conflicts()).toEqual([]);
    const third = await notes.sync();
    expect(third).toMatchObject({ ok: true, pushed: 1 });
    expect((await serverRecord()).title).toBe('local + remote');
  });

  it('a custom merge function decides the kept version', async () => {
    const { notes, remoteWrite, serverRecord } = await replica();
    await notes.update('r1', { title: 'base', tags: ['mine'] });
    await remoteWrite('PUT', { data: { title: 'base', tags: ['theirs'] } });
    const result = await notes.sync({
      strategy: ({ local, remote }) => ({
        title: 'base',
        tags: [...((local?.tags as string[]) ?? []), ...((remote?.tags as string[]) ?? [])].sort(),
      }),
    });
    expect(result).toMatchObject({ ok: true, pushed: 1, conflicts: [{ resolution: 'merged' }] });
    expect((await serverRecord()).tags).toEqual(['mine', 'theirs']);
  });

  it('a local edit of a record deleted on the server: server-wins deletes it, client-wins re-creates it', async () => {
    const serverSide = await replica({}, 'server-wins');
    await serverSide.notes.update('r1', { title: 'local' });
    await serverSide.remoteWrite('DELETE');
    expect(await serverSide.notes.sync()).toMatchObject({
      ok: true,
      conflicts: [{ resolution: 'remote', remote: { deleted: true } }],
    });
    expect(await serverSide.notes.get('r1')).toBeUndefined();

    const clientSide = await replica({}, 'client-wins');
    await clientSide.notes.update('r1', { title: 'local' });
    await clientSide.remoteWrite('DELETE');
    expect(await clientSide.notes.sync()).toMatchObject({ ok: true, pushed: 1 });
    expect((await clientSide.serverRecord()).title).toBe('local');
  });

  it('deleted on both sides converges without a conflict', async () => {
    const { notes, remoteWrite } = await replica();
    await notes.delete('r1');
    await remoteWrite('DELETE');
    const result = await notes.sync();
    expect(result).toMatchObject({ ok: true, conflicts: [] });
    expect(await notes.pending()).toBe(0);
  });

  it('identical edits on both sides converge without a conflict', async () => {
    const { notes, remoteWrite, serverRecord } = await replica();
    await notes.update('r1', { title: 'same' });
    await remoteWrite('PUT', { data: { title: 'same' } });
    const result = await notes.sync();
    expect(result).toMatchObject({ ok: true, conflicts: [], pushed: 0 });
    expect(await notes.get('r1')).toEqual(await serverRecord());
  });
});

describe('outgoing conflicts (412 on push)', () => {
  for (const strategy of ['server-wins', 'client-wins', 'manual'] as const) {
    it(`a write landing between pull and push is a 412 conflict settled by ${strategy}`, async () => {
      let write: (() => Promise<unknown>) | null = null;
      const { notes, remoteWrite, serverRecord } = await replica(
        { fetch: beforeFirstBatch(() => write?.() ?? Promise.resolve()) },
        strategy,
      );
      write = () => remoteWrite('PUT', { data: { title: 'concurrent' } });
      await notes.update('r1', { title: 'local' });
      const result = await notes.sync();
      const outgoing = result.conflicts.find((c) => c.type === 'outgoing');
      expect(outgoing).toMatchObject({ id: 'r1', local: { title: 'local' }, remote: { title: 'concurrent' } });
      const expected = { 'server-wins': 'concurrent', 'client-wins': 'local', manual: 'concurrent' }[strategy];
      expect((await serverRecord()).title).toBe(expected);
      if (strategy === 'manual') {
        expect(result.ok).toBe(false);
        await notes.resolve('r1', 'remote');
        expect((await notes.get('r1'))?.title).toBe('concurrent');
        expect(await notes.pending()).toBe(0);
      } else {
        expect(result.ok).toBe(true);
        expect(await notes.get('r1')).toEqual(await serverRecord());
      }
    });
  }

  it('the same id created on two replicas: the second creation gets a 412 with the first one', async () => {
    const bucket = uniqueName('c');
    await createCollection(server.url, bucket, 'notes');
    const a = makeClient(server.url).bucket(bucket).collection<Note>('notes');
    const b = makeClient(server.url).bucket(bucket).collection<Note>('notes', { strategy: 'server-wins' });
    await a.create({ id: 'same', title: 'from a' });
    await b.create({ id: 'same', title: 'from b' });
    await a.sync();
    const result = await b.sync();
    expect(result.conflicts).toMatchObject([{ id: 'same', remote: { title: 'from a' }, resolution: 'remote' }]);
    expect((await b.get('same'))?.title).toBe('from a');
  });

  it('a deletion of a record changed on the server meanwhile is a conflict (server-wins restores it)', async () => {
    let write: (() => Promise<unknown>) | null = null;
    const { notes, remoteWrite } = await replica(
      { fetch: beforeFirstBatch(() => write?.() ?? Promise.resolve()) },
      'server-wins',
    );
    write = () => remoteWrite('PATCH', { data: { title: 'changed' } });
    await notes.delete('r1');
    const result = await notes.sync();
    expect(result.conflicts).toMatchObject([{ id: 'r1', type: 'outgoing', local: null, remote: { title: 'changed' } }]);
    expect((await notes.get('r1'))?.title).toBe('changed');
  });
});
