// @vitest-environment happy-dom
/**
 * The hooks in a DOM (happy-dom) over a real client on fake-indexeddb: lists, records, pending
 * changes and the sync status re-render as the replica changes; Suspense shows its fallback
 * until the first result; the client comes from the provider.
 */
import { type Collection, createClient, type QuireClient } from '@quire/client';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import { act, Suspense } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { QuireProvider, useCollection, usePending, useRecord, useRecords, useSyncStatus } from '../src/index.js';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

type Todo = { title: string; done: 0 | 1 };
let client: QuireClient;
let container: HTMLElement;
let root: Root;

beforeEach(() => {
  client = createClient({
    remote: 'http://127.0.0.1:9/v1',
    indexedDB: new IDBFactory(),
    IDBKeyRange,
    retries: 0,
    // No server here: every request fails as a network error would.
    fetch: () => Promise.reject(new TypeError('Failed to fetch')),
  });
  container = document.createElement('div');
  document.body.append(container);
  root = createRoot(container);
});

afterEach(async () => {
  await act(async () => root.unmount());
  container.remove();
  await client.close();
});

/** Waits until the DOM shows `text` (live queries settle asynchronously). */
async function shows(text: string): Promise<void> {
  await expect.poll(() => container.textContent, { timeout: 5000 }).toBe(text);
}

function TodoList() {
  const todos = useCollection<Todo>('app', 'todos', { indexes: ['done'] });
  const open = useRecords(todos, { index: 'done', equals: 0 });
  const pending = usePending(todos);
  if (!open) return <p>loading</p>;
  return (
    <p>
      {open.map((todo) => todo.title).join(',')}|{pending}
    </p>
  );
}

function One({ todos }: { todos: Collection<Todo> }) {
  const todo = useRecord(todos, 'x', { suspense: true });
  return <p>{todo?.title ?? 'none'}</p>;
}

function Status({ todos }: { todos: Collection<Todo> }) {
  const status = useSyncStatus(todos);
  return <p>{status.syncing ? 'syncing' : (status.error?.code ?? 'idle')}</p>;
}

describe('@quire/react hooks', () => {
  it('useRecords and usePending follow local writes, through the provider', async () => {
    await act(async () =>
      root.render(
        <QuireProvider client={client}>
          <TodoList />
        </QuireProvider>,
      ),
    );
    await shows('|0');
    const todos = client.bucket('app').collection<Todo>('todos');
    await act(async () => {
      await todos.create({ id: 'a', title: 'milk', done: 0 });
      await todos.create({ id: 'b', title: 'bread', done: 1 });
    });
    await shows('milk|2');
    await act(async () => {
      await todos.update('b', { title: 'bread', done: 0 });
    });
    await shows('milk,bread|2');
  });

  it('useRecord follows one record; Suspense shows the fallback until the first result', async () => {
    const todos = client.bucket('app').collection<Todo>('todos');
    await todos.create({ id: 'x', title: 'first', done: 0 });
    await act(async () =>
      root.render(
        <Suspense fallback={<p>waiting</p>}>
          <One todos={todos} />
        </Suspense>,
      ),
    );
    await shows('first');
    await act(async () => {
      await todos.update('x', { title: 'second', done: 1 });
    });
    await shows('second');
    await act(async () => {
      await todos.delete('x');
    });
    await shows('none');
  });

  it('useSyncStatus shows a sync running and its failure', async () => {
    const todos = client.bucket('app').collection<Todo>('todos');
    await act(async () => root.render(<Status todos={todos} />));
    await shows('idle');
    await act(async () => {
      await todos.sync().catch(() => {});
    });
    await shows('QUIRE_ERR_TRANSPORT_NETWORK');
  });
});
