/**
 * A runnable example: two "devices" share a todo list through a Quire server.
 *
 *   pnpm --filter @quire/client example                       # boots an in-process server
 *   QUIRE_URL=http://127.0.0.1:8888/v1 pnpm --filter @quire/client example   # or use yours
 *
 * Node has no IndexedDB: each device gets its own `fake-indexeddb`. In a browser, omit
 * `indexedDB`/`IDBKeyRange` and the real ones are used.
 */
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import { createClient } from '../src/index.js';

type Todo = { title: string; done: 0 | 1 };

async function serverUrl(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.QUIRE_URL) return { url: process.env.QUIRE_URL, stop: async () => {} };
  const { buildServer, createPgliteStorage, loadSettings } = await import('@quire/server');
  const storage = await createPgliteStorage();
  const app = await buildServer({
    storage,
    settings: loadSettings({ env: {}, overrides: { userid_hmac_secret: 'example', log_level: 'silent' } }),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  const stop = async () => {
    await app.close();
    await storage.close();
  };
  return { url: `http://127.0.0.1:${port}/v1`, stop };
}

const { url, stop } = await serverUrl();
const auth = { type: 'basic' as const, username: 'ada', password: 's3cret' };

// The bucket and collection are created once, through the direct remote API.
const admin = createClient({ remote: url, auth });
await admin.remote.createBucket('todo-app', {}, {}).catch(() => {});
await admin.remote.createCollection('todo-app', 'todos', {}, {}).catch(() => {});

function device(name: string) {
  const client = createClient({ remote: url, auth, indexedDB: new IDBFactory(), IDBKeyRange, dbPrefix: name });
  const todos = client.bucket('todo-app').collection<Todo>('todos', { indexes: ['done'], strategy: 'server-wins' });
  todos.on('change', (event) =>
    console.log(
      `[${name}] ${event.source} change: ${event.changes.map((c) => `${c.type} ${c.id.slice(0, 8)}`).join(', ')}`,
    ),
  );
  return { client, todos };
}

const laptop = device('laptop');
const phone = device('phone');

// Offline-first: writes land locally at once and are queued.
const milk = await laptop.todos.create({ title: 'buy milk', done: 0 });
await laptop.todos.create({ title: 'write the report', done: 0 });
console.log('laptop pending changes:', await laptop.todos.pending());

console.log('laptop sync:', summary(await laptop.todos.sync()));
console.log(
  'phone sync:',
  summary(await phone.todos.sync({ onProgress: (p) => console.log(`  phone ${p.phase} ${p.done}/${p.total}`) })),
);

// The phone ticks an item; a local query served by the `done` index.
await phone.todos.update(milk.id, { done: 1 }, { patch: true });
console.log('phone sync:', summary(await phone.todos.sync()));
console.log('laptop sync:', summary(await laptop.todos.sync()));
console.log(
  'laptop, done:',
  (await laptop.todos.list({ index: 'done', equals: 1 })).map((t) => t.title),
);
console.log(
  'laptop, open:',
  (await laptop.todos.list({ index: 'done', equals: 0 })).map((t) => t.title),
);

await Promise.all([laptop.client.close(), phone.client.close(), admin.close()]);
await stop();

function summary(result: { ok: boolean; pulled: number; pushed: number; conflicts: unknown[] }) {
  return `ok=${result.ok} pulled=${result.pulled} pushed=${result.pushed} conflicts=${result.conflicts.length}`;
}
