/**
 * A deployment as users scale one out: N `quire start` processes on one PostgreSQL database,
 * every one through one PgBouncer in transaction mode (stock configuration, pgbouncer.ts), and a
 * round-robin HTTP proxy in front, so that a client's consecutive requests land on different
 * processes. The database is a fresh one, migrated through the pooler before the processes start.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import { createTestDatabase, type Pgbouncer, startPgbouncer } from './pgbouncer.js';
import { PG_URL } from './postgres.js';

const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const packageDir = fileURLToPath(new URL('../..', import.meta.url));

export interface PooledDeployment {
  /** The proxy's API root (`http://127.0.0.1:<port>/v1`): each request goes to the next process. */
  url: string;
  /** Each process's API root. */
  urls: string[];
  /** Each process's port. */
  ports: number[];
  bouncer: Pgbouncer;
  /** The database's URL through the pooler, and straight to PostgreSQL. */
  pooledUrl: string;
  directUrl: string;
  close(): Promise<void>;
}

export interface PooledDeploymentOptions {
  processes?: number;
  /** Settings of every process, as environment variables (`QUIRE_…`). */
  env?: Record<string, string>;
  /** Server connections of the pooler (default 10: fewer than the processes' pools together). */
  poolSize?: number;
}

/** A `quire start` process, resolved with its API root once it listens (bounded: 80 s, for a loaded machine). */
async function startProcess(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const { QUIRE_STORAGE_URL: _url, QUIRE_CONFIG: _config, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', cli, 'start'], {
    cwd: packageDir, // `--import tsx` resolves from here
    env: { ...inherited, QUIRE_HOST: '127.0.0.1', QUIRE_PORT: '0', QUIRE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within 80 s:\n${output}`)), 80_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+\/v1)\//.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${output}`));
    });
  }).catch(async (error: unknown) => {
    await stopProcess(child);
    throw error;
  });
  return { child, url };
}

/** SIGTERM (graceful: closes its pool), SIGKILL if still running after 10 s. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** An HTTP proxy sending each request to the next of `targets` (`host:port`), bodies streamed both ways. */
async function roundRobinProxy(
  targets: Array<{ host: string; port: number }>,
): Promise<{ port: number; close: () => Promise<void> }> {
  const agent = new http.Agent({ keepAlive: true });
  let next = 0;
  const server = http.createServer((request, response) => {
    const target = targets[next++ % targets.length]!;
    const forwarded = http.request(
      {
        host: target.host,
        port: target.port,
        method: request.method,
        path: request.url,
        headers: request.headers,
        agent,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on('error', () => {
      if (!response.headersSent) response.writeHead(502).end();
      else response.destroy();
    });
    response.on('close', () => forwarded.destroy());
    request.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      agent.destroy();
    },
  };
}

/** Starts the deployment (call `pgbouncerUnavailable` and `postgresUnavailable` first). */
export async function startPooledDeployment({
  processes = 4,
  env = {},
  poolSize = 10,
}: PooledDeploymentOptions = {}): Promise<PooledDeployment> {
  const cleanups: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  };
  try {
    const bouncer = await startPgbouncer({ poolSize });
    cleanups.push(() => bouncer.stop());
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const pooledUrl = bouncer.url(database.name);
    const direct = new URL(PG_URL);
    direct.pathname = `/${database.name}`;
    // Migrated once, through the pooler, so that the processes do not all migrate at start.
    await (await createPostgresStorage({ url: pooledUrl, autoMigrate: true, poolSize: 1 })).close();
    const started = await Promise.allSettled(
      Array.from({ length: processes }, () =>
        startProcess({
          QUIRE_STORAGE_URL: pooledUrl,
          QUIRE_STORAGE_AUTO_MIGRATE: 'false',
          QUIRE_USERID_HMAC_SECRET: 'pooled-secret',
          QUIRE_TRUST_PROXY: 'true',
          ...env,
        }),
      ),
    );
    for (const result of started)
      if (result.status === 'fulfilled') cleanups.push(() => stopProcess(result.value.child));
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    const urls = started.map((result) => (result as PromiseFulfilledResult<{ url: string }>).value.url);
    const ports = urls.map((url) => Number(new URL(url).port));
    const proxy = await roundRobinProxy(ports.map((port) => ({ host: '127.0.0.1', port })));
    cleanups.push(() => proxy.close());
    return {
      url: `http://127.0.0.1:${proxy.port}/v1`,
      urls,
      ports,
      bouncer,
      pooledUrl,
      directUrl: direct.toString(),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
