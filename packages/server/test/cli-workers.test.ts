/**
 * `quire start` with `workers` > 1, as an operator runs it: one port served by several processes
 * on PostgreSQL, a killed worker replaced, SIGTERM stopping them all, workers that cannot start
 * not restarted forever, and clear refusals of what cannot work.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useCli } from './helpers/cli.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable, runAsAdmin } from './helpers/postgres.js';

const auth = `Basic ${Buffer.from('alice:secret').toString('base64')}`;
const pgReason = await postgresUnavailable('cli-workers.test.ts');
const start = useCli();

/** `quire start` on 127.0.0.1 with `env`. */
const run = (env: Record<string, string>) => start(['start'], { QUIRE_HOST: '127.0.0.1', ...env });

/** One request on a connection of its own: the primary hands each new connection to a worker in turn. */
function request(method: string, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent: false, headers: { Authorization: auth } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${url}: no answer within 10 s`)));
    req.end();
  });
}

/** `ps` with these arguments; its output, empty when it matches no process. */
async function ps(...args: string[]): Promise<string> {
  return (await promisify(execFile)('ps', args).catch(() => ({ stdout: '' }))).stdout;
}

/** The worker processes of a primary (tsx also gives it an esbuild child, left out). */
async function workerPids(primary: number): Promise<number[]> {
  const lines = (await ps('-o', 'pid=,args=', '--ppid', String(primary))).split('\n');
  return lines.filter((line) => line.includes('cli.ts')).map((line) => Number(line.trim().split(/\s+/)[0]));
}

/** Whether a process runs (a zombie, exited but not reaped yet, does not). */
async function alive(pid: number): Promise<boolean> {
  const state = (await ps('-o', 'stat=', '-p', String(pid))).trim();
  return state !== '' && !state.startsWith('Z');
}

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.skipIf(pgReason !== undefined)('quire start with workers = 2 on PostgreSQL', () => {
  const schema = newSchemaName();
  // There is no schema setting: the schema is the connections' search_path, set in the URL.
  const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  // The primary migrates the empty schema before forking (storage_auto_migrate).
  const env = {
    QUIRE_STORAGE_URL: url,
    QUIRE_STORAGE_AUTO_MIGRATE: 'true',
    QUIRE_USERID_HMAC_SECRET: 'workers-secret',
    QUIRE_WORKERS: '2',
  };

  beforeAll(() => runAsAdmin(`CREATE SCHEMA ${schema}`));
  afterAll(() => dropSchema(schema));

  it('serves from two processes, replaces a killed worker, and stops them all on SIGTERM', async () => {
    const server = run({ ...env, PORT: '0' });
    const base = await server.listening;
    expect(server.output()).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+\/v1\/ \(PostgreSQL, 2 workers\)/);
    const primary = server.child.pid!;
    const first = await workerPids(primary);
    expect(first).toHaveLength(2);

    expect((await request('PUT', `${base}buckets/shared`)).status).toBe(201);
    // Fresh connections go to both workers in turn: each reads what the other may have written.
    for (let i = 0; i < 4; i++) expect((await request('GET', `${base}buckets/shared`)).status).toBe(200);

    const [killed, survivor] = first as [number, number];
    process.kill(killed, 'SIGKILL');
    // Once the primary knows (a connection it hands over just before is lost with the worker),
    // the survivor serves alone until the replacement listens.
    await waitFor('the primary to see the death', () =>
      server.output().includes(`worker ${killed} died (signal SIGKILL); starting another in 100 ms`),
    );
    expect((await request('PUT', `${base}buckets/shared/collections/c`)).status).toBe(201);
    await waitFor('the replacement to listen', () => /worker \d+ is listening \(2 of 2\)/.test(server.output()));
    const replacement = Number(/worker (\d+) is listening/.exec(server.output())![1]);
    expect(await workerPids(primary)).toEqual(expect.arrayContaining([survivor, replacement]));
    expect(replacement).not.toBe(killed);
    for (let i = 0; i < 4; i++) expect((await request('GET', `${base}buckets/shared`)).status).toBe(200);
    const read = await request('GET', `${base}buckets/shared/collections/c`);
    expect(read.status).toBe(200);
    expect((JSON.parse(read.body) as { data: { id: string } }).data.id).toBe('c');

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(await alive(survivor)).toBe(false);
    expect(await alive(replacement)).toBe(false);
  }, 60_000);

  it('answers metrics for all workers on metrics_port, from the primary', async () => {
    const free = net.createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const metricsPort = (free.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => free.close(() => resolve()));
    const server = run({ ...env, PORT: '0', QUIRE_METRICS_ENABLED: 'true', QUIRE_METRICS_PORT: String(metricsPort) });
    const base = await server.listening;
    expect((await request('PUT', `${base}buckets/metered`)).status).toBe(201);
    // Fresh connections: the primary hands them to both workers in turn.
    for (let i = 0; i < 6; i++) expect((await request('GET', `${base}buckets/metered`)).status).toBe(200);
    const scraped = await request('GET', `http://127.0.0.1:${metricsPort}/__metrics__`);
    expect(scraped.status).toBe(200);
    const line = scraped.body
      .split('\n')
      .find(
        (l) =>
          l.startsWith('quire_http_requests_total{') &&
          l.includes('method="GET"') &&
          l.includes('route="/v1/buckets/:bucket_id"') &&
          l.includes('status="200"'),
      );
    expect(Number(line?.split(' ').at(-1))).toBe(6);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 60_000);

  it('stops the workers when the primary dies', async () => {
    const server = run({ ...env, PORT: '0' });
    await server.listening;
    const pids = await workerPids(server.child.pid!);
    expect(pids).toHaveLength(2);
    server.child.kill('SIGKILL');
    await waitFor('the workers to exit', async () => !(await alive(pids[0]!)) && !(await alive(pids[1]!)), 10_000);
  }, 45_000);

  it("gives up, with the workers' exit code, when they keep dying at start", async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const server = run({ ...env, PORT: String((taken.address() as net.AddressInfo).port) });
      expect(await server.exited).toBe(71); // cannot listen
      expect(server.output()).toMatch(/quire: cannot listen on .*EADDRINUSE.*set port/);
      expect(server.output()).toMatch(
        /quire: workers keep dying at start \(5 in a row, the last by exit code 71\); stopping/,
      );
    } finally {
      taken.close();
    }
  }, 45_000);
});

describe('quire start with workers: refusals', () => {
  it('refuses workers > 1 on the embedded store, with one clear line', async () => {
    const server = run({ QUIRE_WORKERS: '2', QUIRE_DATA_DIR: mkdtempSync(join(tmpdir(), 'quire-workers-')) });
    expect(await server.exited).toBe(78);
    expect(server.output().trim()).toBe(
      'quire: workers = 2 needs PostgreSQL (storage_url): the embedded store is one process; set workers to 1',
    );
  }, 30_000);

  it('refuses a workers value that is neither a positive integer nor auto', async () => {
    const server = run({ QUIRE_WORKERS: 'abc', QUIRE_DATA_DIR: mkdtempSync(join(tmpdir(), 'quire-workers-')) });
    expect(await server.exited).toBe(78);
    expect(server.output()).toMatch(
      /Invalid setting workers \(from QUIRE_WORKERS\): expected an integer or auto, got "abc"/,
    );
  }, 30_000);
});
