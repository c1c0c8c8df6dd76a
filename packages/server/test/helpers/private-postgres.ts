/**
 * A PostgreSQL of a test's own, for the fault tests that stop and restart it: `initdb` in a
 * temporary directory, `pg_ctl` on a spare port. The shared server of the other tests
 * (QUIRE_TEST_PG_URL) is never touched. initdb refuses to run as root: as root, the cluster
 * belongs to the `postgres` user and every command runs through `runuser -u postgres --`.
 * Without the binaries the tests skip with the reason; under QUIRE_TEST_REQUIRE_PG (CI) that
 * is a failure.
 */
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

export interface PrivatePostgres {
  readonly port: number;
  /** A URL to `database` (default `quire`, created at start) as the `postgres` superuser. */
  url(database?: string): string;
  /** `pg_ctl stop`: `fast` rolls back open transactions and ends every session (57P01); `immediate` is a crash. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stops the server and removes its directory. */
  destroy(): Promise<void>;
}

/** The directory of initdb and pg_ctl: QUIRE_TEST_PG_BIN, the PATH, or Debian's newest /usr/lib/postgresql/N/bin. */
function findBinDir(): string | undefined {
  const candidates = [process.env.QUIRE_TEST_PG_BIN, ...(process.env.PATH ?? '').split(':')];
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((name) => /^\d+$/.test(name))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((version) => join(debian, version, 'bin')));
  }
  return candidates.find(
    (dir): dir is string => !!dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl')),
  );
}

/** A TCP port free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Why a private PostgreSQL cannot run here, or undefined. Under QUIRE_TEST_REQUIRE_PG, throws instead. */
function unavailable(file: string, reason: string): string {
  if (process.env.QUIRE_TEST_REQUIRE_PG) throw new Error(`${file}: ${reason} and QUIRE_TEST_REQUIRE_PG is set`);
  console.warn(`${file}: skipped: ${reason}`);
  return reason;
}

/**
 * Starts a private PostgreSQL, or returns why it cannot (the caller skips). The tests' own
 * clients must listen for 'error': stopping the server ends their sessions too.
 */
export async function startPrivatePostgres(file: string): Promise<PrivatePostgres | string> {
  const bin = findBinDir();
  if (!bin) return unavailable(file, 'initdb/pg_ctl not found (set QUIRE_TEST_PG_BIN to their directory)');
  let asUser: string[] = [];
  let owner: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    try {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      owner = { uid, gid };
      asUser = ['runuser', '-u', 'postgres', '--'];
    } catch {
      return unavailable(file, 'running as root and there is no `postgres` user to run initdb as');
    }
  }
  const dir = mkdtempSync(join(tmpdir(), 'quire-pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const port = await freePort();
  const argv = (tool: string, args: string[]) => [...asUser, join(bin, tool), ...args] as [string, ...string[]];
  const command = (tool: string, args: string[]) => {
    const [program, ...rest] = argv(tool, args);
    return run(program, rest, { timeout: 60_000 });
  };
  const pgCtl = (...args: string[]) =>
    command('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '30', ...args]);

  try {
    await command('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    return unavailable(file, `initdb failed: ${(error as Error).message.split('\n')[0]}`);
  }
  // In the configuration file, so that every later start and restart keeps them. Small: the
  // machine is shared. fsync stays on: the suite checks that acknowledged writes survive a crash.
  appendFileSync(
    join(data, 'postgresql.conf'),
    [
      `port = ${port}`,
      `listen_addresses = '127.0.0.1'`,
      `unix_socket_directories = '${dir}'`,
      'max_connections = 40',
      'shared_buffers = 16MB',
      'autovacuum = off',
      '',
    ].join('\n'),
  );
  // Stopped however the test process ends: an orphan server would hold the port and the disk.
  const kill = () => {
    try {
      const [program, ...rest] = argv('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      execFileSync(program, rest, { stdio: 'ignore' });
    } catch {
      // already stopped
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', kill);

  const url = (database = 'quire') => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  try {
    await pgCtl('start');
    const admin = new pg.Client({ connectionString: url('postgres') });
    admin.on('error', () => {}); // the query below fails instead
    await admin.connect();
    try {
      await admin.query('CREATE DATABASE quire');
    } finally {
      await admin.end();
    }
  } catch (error) {
    kill();
    process.removeListener('exit', kill);
    return unavailable(file, `the private PostgreSQL did not start: ${(error as Error).message.split('\n')[0]}`);
  }

  return {
    port,
    url,
    stop: async (mode = 'fast') => void (await pgCtl('-m', mode, 'stop')),
    start: async () => void (await pgCtl('start')),
    restart: async (mode = 'fast') => void (await pgCtl('-m', mode, 'restart')),
    destroy: async () => {
      kill();
      process.removeListener('exit', kill);
    },
  };
}
