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
  /**
   * A hot standby of this server (`pg_basebackup -R`, streaming replication) on another spare
   * port, or why it cannot start. Its `url` names the databases it replicates.
   */
  standby(): Promise<PrivatePostgres | string>;
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

/** A tool beside initdb, else where the PATH or Debian has it (/usr/local/bin may hold only initdb and pg_ctl). */
function toolPath(bin: string, tool: string): string {
  const dirs = [bin, ...(process.env.PATH ?? '').split(':')];
  if (existsSync('/usr/lib/postgresql'))
    dirs.push(...readdirSync('/usr/lib/postgresql').map((version) => join('/usr/lib/postgresql', version, 'bin')));
  return dirs.map((dir) => join(dir, tool)).find((path) => existsSync(path)) ?? join(bin, tool);
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
  const tools = { bin, asUser, owner };
  const cluster = await newCluster(tools);
  try {
    await cluster.command('initdb', ['-D', cluster.data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  } catch (error) {
    rmSync(cluster.dir, { recursive: true, force: true });
    return unavailable(file, `initdb failed: ${(error as Error).message.split('\n')[0]}`);
  }
  const started = await startCluster(file, cluster, true);
  return typeof started === 'string' ? started : handle(file, tools, cluster);
}

interface Tools {
  bin: string;
  asUser: string[];
  owner: { uid: number; gid: number } | undefined;
}

interface Cluster {
  dir: string;
  data: string;
  port: number;
  command(tool: string, args: string[]): Promise<unknown>;
  pgCtl(...args: string[]): Promise<unknown>;
  kill(): void;
}

async function newCluster({ bin, asUser, owner }: Tools): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'quire-pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const port = await freePort();
  const argv = (tool: string, args: string[]) => [...asUser, toolPath(bin, tool), ...args] as [string, ...string[]];
  const command = (tool: string, args: string[]) => {
    const [program, ...rest] = argv(tool, args);
    return run(program, rest, { timeout: 60_000 });
  };
  const pgCtl = (...args: string[]) =>
    command('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '30', ...args]);
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
  return { dir, data, port, command, pgCtl, kill };
}

/** Configures and starts a cluster (a primary also gets database `quire`); a reason when it fails. */
async function startCluster(file: string, cluster: Cluster, primary: boolean): Promise<string | undefined> {
  const { dir, data, port } = cluster;
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
  process.once('exit', cluster.kill);
  const url = (database = 'quire') => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  try {
    await cluster.pgCtl('start');
    if (primary) {
      const admin = new pg.Client({ connectionString: url('postgres') });
      admin.on('error', () => {}); // the query below fails instead
      await admin.connect();
      try {
        await admin.query('CREATE DATABASE quire');
      } finally {
        await admin.end();
      }
    }
  } catch (error) {
    cluster.kill();
    process.removeListener('exit', cluster.kill);
    return unavailable(file, `the private PostgreSQL did not start: ${(error as Error).message.split('\n')[0]}`);
  }
  return undefined;
}

function handle(file: string, tools: Tools, cluster: Cluster): PrivatePostgres {
  const { port, pgCtl, kill } = cluster;
  const url = (database = 'quire') => `postgresql://postgres@127.0.0.1:${port}/${database}`;
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
    standby: async () => {
      const replica = await newCluster(tools);
      try {
        const source = ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres'];
        await replica.command('pg_basebackup', [
          ...source,
          '-D',
          replica.data,
          '-R',
          '-X',
          'stream',
          '--no-sync',
          '-c',
          'fast',
        ]);
      } catch (error) {
        rmSync(replica.dir, { recursive: true, force: true });
        return unavailable(file, `pg_basebackup failed: ${(error as Error).message.split('\n')[0]}`);
      }
      const started = await startCluster(file, replica, false);
      return typeof started === 'string' ? started : handle(file, tools, replica);
    },
  };
}
