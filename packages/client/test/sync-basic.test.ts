/**
 * Core sync paths against a real Quire server: both directions, updates, tombstones, 304 polls,
 * pagination, two replicas converging.
 */
import { describe, expect, inject, it } from 'vitest';
import { createCollection, makeClient, raw, seed, uniqueName } from './support/server.js';

const server = { url: inject('quireUrl') };

// An interface, as apps write models: collection<T> must take it (it once took type aliases only).
interface Todo {
  title: string;
  done?: boolean;
  n?: number;
}

async function setup() {
  const bucket = uniqueName('b');
  await createCollection(server.url, bucket, 'todos');
  return bucket;
}

describe('sync with a real server', () => {
  it('pushes local creations with client-generated ids and pulls them into another replica', async () => {
    const bucket = await setup();
    const a = makeClient(server.url);
    const todosA = a.bucket(bucket).collection<Todo>('todos');
    const created = await todosA.create({ title: 'write tests' });
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await todosA.pending()).toBe(1);

    const result = await todosA.sync();
    expect(result).toMatchObject({ ok: true, pushed: 1, conflicts: [], errors: [] });
    expect(await todosA.pending()).toBe(0);
    const local = await todosA.get(created.id);
    expect(local?.last_modified).toEqual(expect.any(Number));

    const remote = await raw(server.url, 'GET', `/buckets/${bucket}/collections/todos/records/${created.id}`);
    expect(remote.body.data).toMatchObject({
      id: created.id,
      title: 'write tests',
      last_modified: local?.last_modified,
    });

    const b = makeClient(server.url);
    const todosB = b.bucket(bucket).collection<Todo>('todos');
    const pulled = await todosB.sync();
    expect(pulled).toMatchObject({ ok: true, pulled: 1, pushed: 0 });
    expect(await todosB.get(created.id)).toEqual(local);
    await Promise.all([a.close(), b.close()]);
  });

  it('a sync queued behind others does what each caller asked: a later plain sync() still pushes', async () => {
    const bucket = await setup();
    const client = makeClient(server.url);
    const todos = client.bucket(bucket).collection<Todo>('todos');
    await todos.create({ title: 'to push' });
    const running = todos.sync({ pullOnly: true });
    const progress: string[] = [];
    // Both queued while the first runs: one follow-up for both, which must push (the second
    // caller did not ask for pullOnly) and report to each caller's onProgress.
    const queuedPullOnly = todos.sync({ pullOnly: true, onProgress: () => progress.push('first') });
    const queuedFull = todos.sync({ onProgress: () => progress.push('second') });
    expect(queuedFull).toBe(queuedPullOnly);
    expect((await running).pushed).toBe(0);
    const followUp = await queuedFull;
    expect(followUp).toMatchObject({ ok: true, pushed: 1 });
    expect(await todos.pending()).toBe(0);
    expect(progress).toContain('first');
    expect(progress).toContain('second');
    await client.close();
  });

  it('after close(), the client opens a fresh collection object on the same replica', async () => {
    const bucket = await setup();
    const client = makeClient(server.url);
    const first = client.bucket(bucket).collection<Todo>('todos');
    expect(client.bucket(bucket).collection<Todo>('todos')).toBe(first);
    const created = await first.create({ title: 'kept' });
    await first.close();
    const reopened = client.bucket(bucket).collection<Todo>('todos');
    expect(reopened).not.toBe(first);
    expect(await reopened.get(created.id)).toEqual(created);
    expect(await reopened.pending()).toBe(1);
    await client.close();
  });

  it('pulls server creations, updates and deletions (tombstones) into the replica', async () => {
    const bucket = await setup();
    await seed(server.url, bucket, 'todos', 5, (i) => ({ id: `r${i}`, title: `t${i}` }));
    const client = makeClient(server.url);
    const todos = client.bucket(bucket).collection<Todo>('todos');
    expect((await todos.sync()).pulled).toBe(5);
    expect(await todos.count()).toBe(5);

    await raw(server.url, 'PATCH', `/buckets/${bucket}/collections/todos/records/r1`, { data: { title: 'changed' } });
    await raw(server.url, 'DELETE', `/buckets/${bucket}/collections/todos/records/r2`);
    await raw(server.url, 'PUT', `/buckets/${bucket}/collections/todos/records/r9`, { data: { title: 'new' } });
    const result = await todos.sync();
    expect(result).toMatchObject({ ok: true, pulled: 3, pushed: 0 });
    expect((await todos.get('r1'))?.title).toBe('changed');
    expect(await todos.get('r2')).toBeUndefined();
    expect((await todos.get('r9'))?.title).toBe('new');
    expect(await todos.count()).toBe(5);
    await client.close();
  });

  it('pushes local updates with If-Match and deletions that leave tombstones', async () => {
    const bucket = await setup();
    await seed(server.url, bucket, 'todos', 3, (i) => ({ id: `r${i}`, title: `t${i}` }));
    const client = makeClient(server.url);
    const todos = client.bucket(bucket).collection<Todo>('todos');
    await todos.sync();
    await todos.update('r0', { title: 'patched', done: true });
    await todos.update('r1', { done: true }, { patch: true });
    await todos.delete('r2');
    expect(await todos.pending()).toBe(3);
    const result = await todos.sync();
    expect(result).toMatchObject({ ok: true, pushed: 3, conflicts: [] });
    const list = await raw(server.url, 'GET', `/buckets/${bucket}/collections/todos/records?_since=0&_sort=id`);
    const byId = Object.fromEntries(list.body.data.map((r: { id: string }) => [r.id, r]));
    expect(byId.r0).toMatchObject({ title: 'patched', done: true });
    expect(byId.r1).toMatchObject({ title: 't1', done: true });
    expect(byId.r2).toMatchObject({ deleted: true });
    expect(await todos.pending()).toBe(0);
    await client.close();
  });

  it('answers an unchanged poll with a single 304 request', async () => {
    const bucket = await setup();
    await seed(server.url, bucket, 'todos', 3);
    const calls: string[] = [];
    const client = makeClient(server.url, {
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        calls.push(`${init.method} ${new URL(input).pathname}${new URL(input).search} ${response.status}`);
        return response;
      },
    });
    const todos = client.bucket(bucket).collection<Todo>('todos', { checkReadable: false });
    await todos.sync();
    calls.length = 0;
    const result = await todos.sync();
    expect(result).toMatchObject({ ok: true, notModified: true, pulled: 0 });
    expect(calls).toEqual([expect.stringMatching(/^GET .*records\?.*_since=\d+.* 304$/)]);
    await client.close();
  });

  it('follows Next-Page page by page on a cold sync and reports progress with Total-Objects', async () => {
    const bucket = await setup();
    await seed(server.url, bucket, 'todos', 53);
    const client = makeClient(server.url);
    const todos = client.bucket(bucket).collection<Todo>('todos', { pageSize: 10 });
    const progress: { phase: string; done: number; total: number }[] = [];
    const result = await todos.sync({ onProgress: (p) => progress.push(p) });
    expect(result).toMatchObject({ ok: true, pulled: 53 });
    expect(await todos.count()).toBe(53);
    expect(progress.map((p) => p.done)).toEqual([10, 20, 30, 40, 50, 53]);
    expect(progress.every((p) => p.total === 53 && p.phase === 'pull')).toBe(true);
    await client.close();
  });

  it('pushes more changes than batch_max_requests in several batches', async () => {
    const bucket = await setup();
    const client = makeClient(server.url);
    const todos = client.bucket(bucket).collection<Todo>('todos');
    for (let i = 0; i < 60; i++) await todos.create({ title: `t${i}`, n: i });
    const batches: number[] = [];
    todos.on('progress', (p) => p.phase === 'push' && batches.push(p.done));
    const result = await todos.sync();
    expect(result).toMatchObject({ ok: true, pushed: 60 });
    expect(batches).toEqual([25, 50, 60]);
    const head = await raw(server.url, 'HEAD', `/buckets/${bucket}/collections/todos/records`);
    expect(head.headers.get('total-objects')).toBe('60');
    await client.close();
  });

  it('two replicas writing offline converge after syncing', async () => {
    const bucket = await setup();
    const a = makeClient(server.url).bucket(bucket).collection<Todo>('todos', { strategy: 'server-wins' });
    const b = makeClient(server.url, { user: 'alice' })
      .bucket(bucket)
      .collection<Todo>('todos', { strategy: 'server-wins' });
    const shared = await a.create({ title: 'shared' });
    await a.sync();
    await b.sync();
    // Offline edits on both sides.
    for (let i = 0; i < 5; i++) await a.create({ title: `a${i}` });
    for (let i = 0; i < 5; i++) await b.create({ title: `b${i}` });
    await a.update(shared.id, { title: 'from a' });
    await b.delete(shared.id);
    await a.sync();
    await b.sync();
    await a.sync();
    const [listA, listB] = await Promise.all([a.list(), b.list()]);
    expect(listA).toEqual(listB);
    expect(listA).toHaveLength(11);
    expect(listA.find((r) => r.id === shared.id)?.title).toBe('from a');
    expect(await a.pending()).toBe(0);
    expect(await b.pending()).toBe(0);
  });

  it('serves local queries from declared indexes and works offline', async () => {
    const client = makeClient('http://127.0.0.1:9/v1');
    const todos = client.bucket('offline').collection<Todo>('todos', { indexes: ['done', 'n'] });
    for (let i = 0; i < 10; i++) await todos.create({ title: `t${i}`, n: i, done: i % 2 === 0 });
    expect((await todos.list({ index: 'n', between: [3, 5] })).map((r) => r.n)).toEqual([3, 4, 5]);
    expect(await todos.count({ index: 'done', equals: 1 as never })).toBe(0);
    expect((await todos.list({ index: 'n', reverse: true, limit: 2 })).map((r) => r.n)).toEqual([9, 8]);
    await expect(todos.sync()).rejects.toMatchObject({ code: 'QUIRE_ERR_TRANSPORT_NETWORK' });
    expect(await todos.pending()).toBe(10);
    await client.close();
  });
});
