/**
 * Server-side rendering (Node, no IndexedDB, no DOM): every hook renders its "not loaded yet"
 * state and nothing is read; Suspense does not suspend on the server.
 */
import { createClient } from '@quire/client';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import {
  QuireProvider,
  useCollection,
  useConflicts,
  usePending,
  useRecord,
  useRecords,
  useSyncStatus,
} from '../src/index.js';

function Page() {
  const todos = useCollection<{ title: string }>('app', 'todos');
  const list = useRecords(todos, {}, { suspense: true });
  const one = useRecord(todos, 'a');
  const conflicts = useConflicts(todos);
  const pending = usePending(todos);
  const status = useSyncStatus(todos);
  return (
    <p>
      {list === undefined ? 'loading' : list.length}/{one === undefined ? 'no record' : 'record'}/{conflicts.length}/
      {pending ?? '?'}/{String(status.lastSyncAt)}
    </p>
  );
}

describe('server-side rendering', () => {
  it('renders the loading state without IndexedDB and without suspending', async () => {
    expect(typeof (globalThis as { indexedDB?: unknown }).indexedDB).toBe('undefined');
    const client = createClient({
      remote: 'http://127.0.0.1:9/v1',
      fetch: () => Promise.reject(new TypeError('no network on the server')),
    });
    const html = renderToString(
      <QuireProvider client={client}>
        <Page />
      </QuireProvider>,
    );
    expect(html).toBe(
      '<p>loading<!-- -->/<!-- -->no record<!-- -->/<!-- -->0<!-- -->/<!-- -->?<!-- -->/<!-- -->null</p>',
    );
    await client.close();
  });
});
