/**
 * Offline attachments benchmark: attach N photos offline, then sync — time and requests. Prints;
 * never asserted in tests.
 *
 *   pnpm --filter @quire/client bench:attachments [-- --photos 100 --size 250000]
 *
 * A Quire server in this process (embedded store, files on a temporary local directory); the
 * clients run in this process too, on fake-indexeddb, with a fetch that counts requests. Rows:
 * one device creates N tasks and attaches a photo to each while offline (local time), then goes
 * online and syncs (the records' batch, one multipart POST per photo, the pulls around them);
 * a second device syncs cold with the `eager` policy (records, then every photo downloaded and
 * checked by hash), then a no-change sync of that device.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildServer, createPgliteStorage, loadSettings } from '@quire/server';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import { attachments } from '../src/attachments/index.js';
import { createClient, createManualOnlineSource, type FetchLike } from '../src/index.js';

const { values } = parseArgs({
  options: { photos: { type: 'string', default: '100' }, size: { type: 'string', default: '250000' } },
});
const PHOTOS = Number(values.photos);
const SIZE = Number(values.size);
const AUTH = `Basic ${Buffer.from('bench:bench').toString('base64')}`;

/** Requests by kind: `POST /batch`, `POST …/attachment`, `GET …/records`, `GET /attachments/…`. */
function countingFetch() {
  const counts = new Map<string, number>();
  const fetchCounted: FetchLike = async (input, init) => {
    const path = new URL(input).pathname.replace(/^\/v1/, '');
    const kind = path.startsWith('/attachments/')
      ? 'GET /attachments/… (file)'
      : path.endsWith('/attachment')
        ? `${init.method} {record}/attachment`
        : path.endsWith('/records')
          ? `${init.method ?? 'GET'} {collection}/records`
          : `${init.method ?? 'GET'} ${path.replace(/\/buckets\/.*/, '/buckets/…')}`;
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
    return fetch(input, init);
  };
  return {
    fetch: fetchCounted,
    take() {
      const total = [...counts.values()].reduce((sum, n) => sum + n, 0);
      const detail = [...counts].map(([kind, n]) => `${n} × ${kind}`).join(', ');
      counts.clear();
      return { total, detail };
    },
  };
}

/** A Quire server in this process: embedded store (PGlite), files in a temporary directory. */
async function startServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const files = mkdtempSync(join(tmpdir(), 'quire-bench-attachments-'));
  const storage = await createPgliteStorage();
  const settings = loadSettings({
    env: {},
    overrides: {
      userid_hmac_secret: 'bench',
      log_level: 'silent',
      attachment_enabled: true,
      attachment_base_path: files,
    },
  });
  const app = await buildServer({ settings, storage, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no TCP port');
  const url = `http://127.0.0.1:${address.port}/v1`;
  const headers = { Authorization: AUTH, 'Content-Type': 'application/json' };
  for (const path of ['/buckets/bench', '/buckets/bench/collections/tasks']) {
    const response = await fetch(url + path, { method: 'PUT', headers, body: '{"data":{}}' });
    if (response.status >= 300) throw new Error(`${path}: ${response.status}`);
  }
  const close = async () => {
    await app.close();
    await storage.close();
    rmSync(files, { recursive: true, force: true });
  };
  return { url, close };
}

/** A device: a client with its own IndexedDB, a counting fetch and an online switch. */
function device(url: string, policy: 'lazy' | 'eager') {
  const counter = countingFetch();
  const online = createManualOnlineSource(true);
  const client = createClient({
    remote: url,
    auth: { type: 'basic', username: 'bench', password: 'bench' },
    indexedDB: new IDBFactory(),
    IDBKeyRange,
    fetch: counter.fetch,
    online,
  });
  const tasks = client.collection('bench', 'tasks', {
    attachments: attachments({ policy, cacheBytes: PHOTOS * SIZE * 2 }),
  });
  return { client, tasks, online, counter };
}

async function main(): Promise<void> {
  const server = await startServer();
  const rows: string[][] = [['step', 'time', 'requests', 'of which']];
  const row = (step: string, ms: number, requests: { total: number; detail: string }) => {
    rows.push([step, `${(ms / 1000).toFixed(2)} s`, String(requests.total), requests.detail || '—']);
    console.log(rows.at(-1)!.join(' | '));
  };

  console.log(
    `Offline attachments — ${PHOTOS} photos of ${(SIZE / 1000).toFixed(0)} kB (random bytes), ` +
      `server: embedded (PGlite) + local files, same process; node ${process.version}\n`,
  );
  const a = device(server.url, 'lazy');
  // The capability is learnt once online (as an app does at start), then the network goes.
  await a.tasks.sync();
  a.counter.take();
  a.online.set(false);
  const photos = Array.from({ length: PHOTOS }, () => randomBytes(SIZE));
  let start = performance.now();
  for (let i = 0; i < PHOTOS; i++) {
    const id = `task-${i}`;
    await a.tasks.create({ id, title: `task ${i}` });
    await a.tasks.attach(id, new Blob([photos[i]!], { type: 'image/jpeg' }), { filename: `photo-${i}.jpg` });
  }
  row(`offline: create ${PHOTOS} tasks + attach ${PHOTOS} photos (local)`, performance.now() - start, a.counter.take());

  a.online.set(true);
  start = performance.now();
  const result = await a.tasks.sync();
  const uploadMs = performance.now() - start;
  if (!result.ok || result.attachments?.uploaded !== PHOTOS)
    throw new Error(
      `sync: ${JSON.stringify({ ok: result.ok, attachments: result.attachments, errors: result.errors.slice(0, 3) })}`,
    );
  row(
    `online: sync (push ${result.pushed} records, upload ${result.attachments.uploaded} photos)`,
    uploadMs,
    a.counter.take(),
  );

  const b = device(server.url, 'eager');
  start = performance.now();
  const cold = await b.tasks.sync();
  if (cold.attachments?.downloaded !== PHOTOS) throw new Error(`cold sync downloaded ${cold.attachments?.downloaded}`);
  row(
    `other device, eager: cold sync (${cold.pulled} records, ` +
      `${cold.attachments.downloaded} photos downloaded, hash-checked)`,
    performance.now() - start,
    b.counter.take(),
  );
  start = performance.now();
  await b.tasks.sync();
  row('other device: no-change sync', performance.now() - start, b.counter.take());

  const mb = (PHOTOS * SIZE) / 1e6;
  console.log(`\nupload ${(mb / (uploadMs / 1000)).toFixed(1)} MB/s over the whole sync (${mb.toFixed(1)} MB)`);
  await a.client.close();
  await b.client.close();
  await server.close();
}

await main();
