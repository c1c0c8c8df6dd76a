/**
 * A PgBouncer of a test's own, in front of the shared PostgreSQL (QUIRE_TEST_PG_URL): its
 * configuration written to a temporary directory, `pgbouncer` started on a free port, stopped
 * (and the directory removed) by `stop` or when the test process ends. The configuration is
 * PgBouncer's stock one but for what a test must choose: the address, the pool mode
 * (transaction pooling unless told), trust authentication and the pool's size. In particular
 * `ignore_startup_parameters` is left empty, so a client that sends `options` is refused, as a
 * stock deployment refuses it.
 *
 * PgBouncer refuses to run as root: as root it runs as the `postgres` user (its `-u`). Where
 * the binary is missing, the tests skip with the reason; under QUIRE_TEST_REQUIRE_PG (CI, which
 * installs it in .ci/run) that is a failure.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PG_URL, runAsAdmin } from './postgres.js';
import { freePort } from './private-postgres.js';

export interface Pgbouncer {
  readonly port: number;
  /** A URL to `database` through the pooler, as the user of QUIRE_TEST_PG_URL. */
  url(database: string): string;
  /** The pooler's log so far (for a failing test's message). */
  log(): string;
  stop(): Promise<void>;
}

export interface PgbouncerOptions {
  poolMode?: 'transaction' | 'session' | 'statement';
  /** Server connections per (database, user) pair: default 10. */
  poolSize?: number;
  /** Startup parameters accepted and dropped (none in the stock configuration). */
  ignoreStartupParameters?: string[];
  /** The PostgreSQL it pools (default QUIRE_TEST_PG_URL): its host, port and user. */
  target?: string;
}

const CANDIDATES = [
  '/usr/sbin/pgbouncer',
  '/usr/bin/pgbouncer',
  '/usr/local/bin/pgbouncer',
  '/usr/local/sbin/pgbouncer',
];

function findBinary(): string | undefined {
  const fromPath = (process.env.PATH ?? '').split(':').map((dir) => join(dir, 'pgbouncer'));
  return [process.env.QUIRE_TEST_PGBOUNCER, ...fromPath, ...CANDIDATES].find(
    (path): path is string => !!path && existsSync(path),
  );
}

/** Why the pooler tests cannot run here, printed; under QUIRE_TEST_REQUIRE_PG, thrown instead. */
function unavailable(file: string, reason: string): string {
  if (process.env.QUIRE_TEST_REQUIRE_PG) throw new Error(`${file}: ${reason} and QUIRE_TEST_REQUIRE_PG is set`);
  console.warn(`${file}: PgBouncer tests skipped: ${reason}`);
  return reason;
}

/** Whether PgBouncer can run here: undefined when it can, else the reason (printed; thrown in CI). */
export function pgbouncerUnavailable(file: string): string | undefined {
  return findBinary()
    ? undefined
    : unavailable(file, 'pgbouncer not found (apt-get install pgbouncer, or set QUIRE_TEST_PGBOUNCER to its path)');
}

/** Accepts connections on the port? */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts a PgBouncer in front of QUIRE_TEST_PG_URL's server (call `pgbouncerUnavailable` first). */
export async function startPgbouncer({
  poolMode = 'transaction',
  poolSize = 10,
  ignoreStartupParameters = [],
  target: targetUrl = PG_URL,
}: PgbouncerOptions = {}): Promise<Pgbouncer> {
  const binary = findBinary();
  if (!binary) throw new Error('pgbouncer not found');
  const target = new URL(targetUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  // As root, pgbouncer itself switches to `postgres` (-u): the process to stop is the child.
  const asUser: string[] = [];
  let owner: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    owner = {
      uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
      gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
    };
    asUser.push('-u', 'postgres');
  }
  const dir = mkdtempSync(join(tmpdir(), 'quire-pgbouncer-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const port = await freePort();
  const logFile = join(dir, 'pgbouncer.log');
  const config = join(dir, 'pgbouncer.ini');
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`);
  writeFileSync(
    config,
    [
      '[databases]',
      // Every database of the target server, under its own name.
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `pool_mode = ${poolMode}`,
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      ...(ignoreStartupParameters.length ? [`ignore_startup_parameters = ${ignoreStartupParameters.join(',')}`] : []),
      `logfile = ${logFile}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  if (owner) for (const file of ['userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, file), owner.uid, owner.gid);

  const child: ChildProcess = spawn(binary, [...asUser, config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const log = () => {
    let file = '';
    try {
      file = readFileSync(logFile, 'utf8');
    } catch {
      // not written yet
    }
    return output + file;
  };
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', kill);

  const deadline = Date.now() + 10_000;
  while (!(await answers(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      kill();
      process.removeListener('exit', kill);
      throw new Error(`pgbouncer did not start on port ${port}:\n${log()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    url: (database) => `postgresql://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(database)}`,
    log,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM'); // immediate shutdown (SIGINT would wait for the clients)
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      kill();
      process.removeListener('exit', kill);
    },
  };
}

/**
 * A database of a test's own on QUIRE_TEST_PG_URL's server: through a pooler the schema
 * cannot be chosen per connection (no `options`), so each test gets a database instead.
 */
export async function createTestDatabase(): Promise<{ name: string; drop: () => Promise<void> }> {
  const name = `quire_pgb_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await runAsAdmin(`CREATE DATABASE ${name}`);
  return { name, drop: () => runAsAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
