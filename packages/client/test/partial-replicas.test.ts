/**
 * Partial replicas (issue 41 item 5): a collection synced with `filters` keeps exactly the
 * records that match now — a record edited on the server so that it no longer matches is dropped
 * locally, which a filtered `_since` poll cannot tell. With the server's `partial_replicas`
 * capability (the poll's stubs), on the embedded store and on PostgreSQL; and the fallback
 * against a server without it (`partial_replicas_enabled: false`, which then answers as the
 * original server does): the ids of the subset listed after a poll that changed something.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { postgresUnavailable } from '../../server/test/helpers/postgres.js';
import type { FetchLike } from '../src/index.js';
import { createCollection, makeClient, raw, startServer, type TestServer, uniqueName } from './support/server.js';

type Task = { title: string; done: boolean };

const noPostgres = await postgresUnavailable('partial-replicas.test.ts');
const started: Record<string, TestServer> = {};
beforeAll(async () => {
  started.fallback = await startServer({ partial_replicas_enabled: false });
  if (noPostgres) return;
  started.postgres = await startServer({}, 'postgresql');
  started.postgresFallback = await startServer({ partial_replicas_enabled: false }, 'postgresql');
});
afterAll(async () => {
  await Promise.all(Object.values(started).map((server) => server.close()));
});

const servers: Array<[string, boolean, () => string | null]> = [
  ['the embedded store', true, () => inject('quireUrl')],
  ['PostgreSQL', true, () => started.postgres?.url ?? null],
  ['the embedded store, capability off (fallback)', false, () => started.fallback?.url ?? null],
  ['PostgreSQL, capability off (fallback)', false, () => started.postgresFallback?.url ?? null],
];

/** A fetch that notes each request as `METHOD path?query`. */
function counting(calls: string[]): FetchLike {
  return async (input, init) => {
    const url = new URL(input);
    calls.push(`${init?.method ?? 'GET'} ${url.pathname.replace(/^\/v1/, '')}${decodeURIComponent(url.search)}`);
    return fetch(input, init);
  };
}

describe.each(servers)('partial replicas, on %s', (name, capability, urlOf) => {
  const skip = name.startsWith('PostgreSQL') && noPostgres !== undefined;

  async function setUp() {
    const url = urlOf()!;
    const bucket = uniqueName('pr');
    await createCollection(url, bucket, 'tasks');
    const put = (id: string, data: Task) =>
      raw(url, 'PUT', `/buckets/${bucket}/collections/tasks/records/${id}`, { data });
    await put('a', { title: 'a', done: false });
    await put('b', { title: 'b', done: false });
    await put('c', { title: 'c', done: true });
    const calls: string[] = [];
    const client = makeClient(url, { fetch: counting(calls) });
    const tasks = client.bucket(bucket).collection<Task>('tasks', { filters: { done: false } });
    return { url, bucket, put, calls, client, tasks };
  }

  const ids = async (tasks: { list(): Promise<Array<{ id: string }>> }) => (await tasks.list()).map((r) => r.id).sort();

  it.skipIf(skip)('keeps exactly what matches now: edited out, deleted, new, never held', async () => {
    const { url, bucket, put, calls, client, tasks } = await setUp();
    expect((await tasks.sync()).pulled).toBe(2);
    expect(await ids(tasks)).toEqual(['a', 'b']);

    await put('a', { title: 'a', done: true }); // edited out of the subset
    await raw(url, 'DELETE', `/buckets/${bucket}/collections/tasks/records/b`);
    await put('d', { title: 'd', done: false }); // new in the subset
    await put('e', { title: 'e', done: true }); // never in it
    calls.length = 0;
    const result = await tasks.sync();
    expect(result.ok).toBe(true);
    expect(await ids(tasks)).toEqual(['d']);
    expect(result.leftSubset).toBeGreaterThanOrEqual(1);
    const listings = calls.filter((call) => call.startsWith('GET /buckets'));
    if (capability) {
      // One poll tells everything: its stubs; no ids listed.
      expect(listings).toHaveLength(1);
      expect(listings[0]).toContain('_unmatched=true');
      expect(listings[0]).toContain('done=false');
    } else {
      expect(listings.some((call) => call.includes('_fields=id') && call.includes('done=false'))).toBe(true);
    }
    // Nothing changed: one request (304), nothing listed.
    calls.length = 0;
    expect((await tasks.sync()).notModified).toBe(true);
    expect(calls).toEqual([expect.stringMatching(/^GET \/buckets\/.*\/records\?done=false/)]);
    await client.close();
  });

  it.skipIf(skip)('a local edit that leaves the subset is pushed, then dropped', async () => {
    const { url, bucket, client, tasks } = await setUp();
    await tasks.sync();
    await tasks.update('a', { done: true }, { patch: true });
    const result = await tasks.sync();
    expect(result).toMatchObject({ ok: true, pushed: 1 });
    expect(await ids(tasks)).toEqual(['b']);
    const server = await raw(url, 'GET', `/buckets/${bucket}/collections/tasks/records/a`);
    expect(server.body.data).toMatchObject({ done: true });
    await client.close();
  });

  it.skipIf(skip)('a pending edit of a record edited out on the server: the conflict, then the subset', async () => {
    const { put, client, tasks } = await setUp();
    await tasks.sync();
    await tasks.update('a', { title: 'mine' }, { patch: true });
    await put('a', { title: 'theirs', done: true });
    const result = await tasks.sync({ strategy: 'server-wins' });
    expect(result.conflicts).toHaveLength(1);
    expect(await ids(tasks)).toEqual(['b']);
    expect(await tasks.pending()).toBe(0);
    await client.close();
  });

  it.skipIf(skip)('a filter change re-lists the new subset and drops what left it', async () => {
    const { calls, client, tasks } = await setUp();
    await tasks.sync();
    await tasks.create({ id: 'draft', title: 'draft', done: false });
    calls.length = 0;
    const result = await tasks.sync({ filters: { done: true } });
    expect(result.ok).toBe(true);
    // The pending creation is pushed, then left the new subset once on the server.
    expect(await ids(tasks)).toEqual(['c']);
    const listings = calls.filter((call) => call.startsWith('GET /buckets'));
    expect(listings.some((call) => call.includes('done=true') && !call.includes('_since'))).toBe(true);
    expect(listings.some((call) => call.includes('_fields=id') && call.includes('done=true'))).toBe(true);
    // The subset stays the last one given (auto-sync calls sync() without filters).
    calls.length = 0;
    expect((await tasks.sync()).notModified).toBe(true);
    expect(calls).toHaveLength(1);
    await client.close();
  });
});
