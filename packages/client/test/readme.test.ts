/**
 * The README's first example runs as written, in an environment with IndexedDB (a browser's;
 * here fake-indexeddb on globalThis, support/browser-globals.ts), against a real server: only the server's URL and the
 * package's import are substituted, and the client is closed at the end.
 */
import './support/browser-globals.js';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, inject, it } from 'vitest';
import { createCollection, raw } from './support/server.js';

const url = inject('quireUrl');
const packageDir = fileURLToPath(new URL('..', import.meta.url));
it("runs the README's first example as written", async () => {
  const readme = await readFile(join(packageDir, 'README.md'), 'utf8');
  const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(example).toContain('createClient');
  // The example's bucket exists on a real deployment; any signed-in user may write in it here.
  await createCollection(url, 'todo-app', 'todos', 'alice', { write: ['system.Authenticated'] });
  const runnable = `${example!
    .replace("from '@quire/client'", `from ${JSON.stringify(join(packageDir, 'src/index.ts'))}`)
    .replace("'https://quire.example/v1'", JSON.stringify(url))}
export const outcome = { result, open: await todos.list(), pending: await todos.pending() };
await client.close();
`;
  const dir = await mkdtemp(join(packageDir, 'test/.readme-'));
  try {
    const file = join(dir, 'example.ts');
    await writeFile(file, runnable);
    const { outcome } = (await import(file)) as {
      outcome: { result: { ok: boolean; pushed: number }; open: unknown[]; pending: number };
    };
    expect(outcome.result).toMatchObject({ ok: true, pushed: 1 });
    expect(outcome.pending).toBe(0);
    const remote = await raw(url, 'GET', '/buckets/todo-app/collections/todos/records');
    expect(remote.body.data).toEqual([expect.objectContaining({ title: 'buy milk', done: 1 })]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
