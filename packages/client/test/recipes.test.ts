/**
 * The README's recipes for Vue and Svelte, run as written: a live query is a Svelte store as it
 * is, and a Vue ref through six lines. No server: live queries read the replica only.
 */
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import { get as getStore, derived } from 'svelte/store';
import { effectScope, onScopeDispose, type Ref, shallowRef, watch } from 'vue';
import { describe, expect, it } from 'vitest';
import { createClient, type LiveQuery } from '../src/index.js';

/** The Vue recipe (README, "Vue and Svelte"). */
function useLive<R>(query: LiveQuery<R>): Ref<R | undefined> {
  const value = shallowRef(query.value);
  onScopeDispose(query.subscribe((next) => (value.value = next)));
  return value;
}

function newClient() {
  return createClient({
    remote: 'http://127.0.0.1:9/v1',
    indexedDB: new IDBFactory(),
    IDBKeyRange,
    fetch: () => Promise.reject(new TypeError('offline')),
  });
}

describe('recipes', () => {
  it('Svelte: a live query is a store ($todos), derived stores included', async () => {
    const client = newClient();
    const todos = client.bucket('app').collection<{ title: string; done: number }>('todos', { indexes: ['done'] });
    const open = todos.live({ index: 'done', equals: 0 });
    const titles = derived(open, (list) => (list ?? []).map((todo) => todo.title).join(','));
    const seen: string[] = [];
    const stop = titles.subscribe((value) => seen.push(value));
    await todos.create({ id: 'a', title: 'milk', done: 0 });
    await todos.create({ id: 'b', title: 'tea', done: 1 });
    await expect.poll(() => getStore(titles)).toBe('milk');
    await todos.update('b', { title: 'tea', done: 0 });
    await expect.poll(() => getStore(titles)).toBe('milk,tea');
    stop();
    expect(seen[0]).toBe('');
    expect(seen.at(-1)).toBe('milk,tea');
    await client.close();
  });

  it('Vue: useLive(query) is a ref kept current, unsubscribed with its scope', async () => {
    const client = newClient();
    const todos = client.bucket('app').collection<{ title: string }>('todos');
    const scope = effectScope();
    const list = scope.run(() => useLive(todos.live()))!;
    const seen: number[] = [];
    scope.run(() => watch(list, (value) => seen.push(value?.length ?? -1)));
    await todos.create({ id: 'a', title: 'one' });
    await expect.poll(() => list.value?.length).toBe(1);
    await todos.create({ id: 'b', title: 'two' });
    await expect.poll(() => list.value?.map((todo) => todo.title)).toEqual(['one', 'two']);
    scope.stop();
    await todos.create({ id: 'c', title: 'three' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(list.value?.length).toBe(2);
    expect(seen.at(-1)).toBe(2);
    await client.close();
  });
});
