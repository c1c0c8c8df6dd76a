/**
 * The memory of idle change streams (not a test; issue 29, defect 5: "an idle stream ≤ 32 KB"):
 *
 *   cd packages/server && node --import tsx --conditions=@quire/source bench/streams-memory.ts \
 *     [--url postgresql://postgres@127.0.0.1:5432/test] [--streams 10000]
 *
 * A real `quire start` process (src/cli.ts, started with --expose-gc) on a fresh PostgreSQL
 * schema; the bench process holds `--streams` streams open with node:http (one socket each, as
 * that many browsers would), each following a bucket of its user's (a few collections, so each
 * stream got its first entries), then idle. The server's memory is read after a full GC before
 * and after: RSS, and the V8 heap + external + array buffers; per stream = the difference / count.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test' },
    streams: { type: 'string', default: '10000' },
  },
});

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const probe = fileURLToPath(new URL('./support/memory-probe.cjs', import.meta.url));
const packageDir = fileURLToPath(new URL('..', import.meta.url));
const MONITOR = 'buckets/monitor/collections/changes/records';
const auth = (user: string) => `Basic ${Buffer.from(`${user}:bench`).toString('base64')}`;

interface Memory {
  rss: number;
  heap: number;
  heapTotal: number;
}

function start(env: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const { QUIRE_STORAGE_URL: _u, QUIRE_CONFIG: _c, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--expose-gc', '--require', probe, '--import', 'tsx', cli, 'start'], {
    cwd: packageDir,
    env: { ...inherited, QUIRE_LOG_LEVEL: 'warn', QUIRE_HOST: '127.0.0.1', QUIRE_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+\/v1\/)/.exec(output);
      if (match?.[1]) resolve({ child, base: match[1] });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', () => reject(new Error(`server exited:\n${output}`)));
  });
}

/** A full GC in the server, then its memory (bench/support/memory-probe.cjs answers over IPC). */
function memory(child: ChildProcess): Promise<Memory> {
  return new Promise((resolve) => {
    child.once('message', (message) => resolve(message as Memory));
    child.send('memory');
  });
}

async function request(method: string, url: string, authorization: string, body?: unknown): Promise<number> {
  const response = await fetch(url, {
    method,
    headers: { authorization, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Opens a stream; resolves once its first event arrived (its snapshot was read and written). */
function openStream(url: string, authorization: string): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent: false, headers: { authorization, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
      res.once('data', () => resolve(req));
      res.on('data', () => {});
      res.on('error', () => {});
    });
    req.on('error', reject);
    req.end();
  });
}

async function main(): Promise<void> {
  const count = Number(args.streams);
  const users = 500;
  const schema = `quire_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: args.url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const storageUrl =
    `${args.url}${args.url!.includes('?') ? '&' : '?'}` + `options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  let server: ChildProcess | undefined;
  const streams: http.ClientRequest[] = [];
  try {
    const started = await start({
      QUIRE_STORAGE_URL: storageUrl,
      QUIRE_STORAGE_AUTO_MIGRATE: 'true',
      QUIRE_USERID_HMAC_SECRET: 'bench-secret',
      QUIRE_CHANGES_STREAM_MAX_PER_ADDRESS: String(count * 2),
      QUIRE_CHANGES_STREAM_MAX_PER_PROCESS: String(count * 2),
    });
    server = started.child;
    const base = started.base;
    // Each user: a bucket with three collections.
    for (let u = 0; u < users; u += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => {
          const user = auth(`user${u + j}`);
          await request('PUT', `${base}buckets/b${u + j}`, user);
          for (const c of ['tasks', 'notes', 'lists'])
            await request('PUT', `${base}buckets/b${u + j}/collections/${c}`, user);
        }),
      );
    }
    // Warm: every code path a stream takes, once, before measuring.
    for (let i = 0; i < 50; i++)
      streams.push(await openStream(`${base}${MONITOR}?bucket=b${i % users}`, auth(`user${i % users}`)));
    for (const stream of streams.splice(0)) stream.destroy();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = await memory(server);
    for (let i = 0; i < count; i += 200) {
      streams.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(200, count - i) }, (_, j) =>
            openStream(`${base}${MONITOR}?bucket=b${(i + j) % users}`, auth(`user${(i + j) % users}`)),
          ),
        )),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const after = await memory(server);
    const kb = (bytes: number) => (bytes / 1024).toFixed(1);
    console.log(
      `node ${process.version}; ${count} idle streams on one quire process (PostgreSQL store), ${users} users, ` +
        'each stream following a bucket of 3 collections',
    );
    console.log(
      `  RSS           ${(before.rss / 2 ** 20).toFixed(0)} MB -> ${(after.rss / 2 ** 20).toFixed(0)} MB: ` +
        `${kb((after.rss - before.rss) / count)} KB per stream`,
    );
    console.log(
      `  heap+external ${(before.heap / 2 ** 20).toFixed(0)} MB -> ${(after.heap / 2 ** 20).toFixed(0)} MB: ` +
        `${kb((after.heap - before.heap) / count)} KB per stream (after a full GC)`,
    );
    const native = (memory: Memory) => memory.rss - memory.heapTotal;
    console.log(
      `  outside V8's heap (RSS - heap reserved: sockets, parsers, allocator) ` +
        `${kb((native(after) - native(before)) / count)} KB per stream; ` +
        `V8 heap reserved ${kb((after.heapTotal - before.heapTotal) / count)} KB per stream`,
    );
  } finally {
    for (const stream of streams) stream.destroy();
    server?.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 500));
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
  }
}

await main();
