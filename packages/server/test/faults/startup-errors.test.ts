/**
 * The commonest mistakes at start, as an operator meets them: the port is taken, the database
 * does not answer (yet), the database does not exist. Each ends in one line on stderr that names
 * the setting to change — no stack trace — and an exit code of its own (README, `quire --help`):
 * 71 cannot listen, 69 database unavailable, 78 configuration. An unreachable database is
 * retried for storage_connect_timeout_seconds first, with a line per attempt, by `quire start`,
 * `quire migrate` and the primary of `workers`.
 */
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { useCli } from '../helpers/cli.js';
import { startPrivatePostgres } from '../helpers/private-postgres.js';

const FILE = 'startup-errors.test.ts';
const run = useCli();
const SECRET = { QUIRE_USERID_HMAC_SECRET: 'startup-secret', QUIRE_HOST: '127.0.0.1' };

/** A port nothing listens on (free a moment ago). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The lines of the process's own (`quire: …`); the output must hold no stack trace. */
function quireLines(output: string): string[] {
  expect(output).not.toMatch(/^\s+at /m);
  return output.split('\n').filter((line) => line.startsWith('quire: '));
}

const figures: string[] = [];
afterAll(() => console.log(`${FILE}:\n  ${figures.join('\n  ')}`));

describe('quire start: clear failures', () => {
  it('port in use: one line naming port and host, exit 71', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const server = run(['start'], {
        QUIRE_HOST: '127.0.0.1',
        QUIRE_PORT: String(port),
        QUIRE_DATA_DIR: mkdtempSync(join(tmpdir(), 'quire-faults-')),
      });
      expect(await server.exited).toBe(71);
      const lines = quireLines(server.output());
      expect(lines).toEqual([
        `quire: cannot listen on 127.0.0.1:${port}: the address is in use by another process (EADDRINUSE): ` +
          'set port (QUIRE_PORT) or host (QUIRE_HOST), or stop that process',
      ]);
      figures.push(`port in use → exit 71: ${lines[0]}`);
    } finally {
      taken.close();
    }
  }, 30_000);

  it('database unreachable, storage_connect_timeout_seconds=0: one line naming storage_url, exit 69', async () => {
    const port = await closedPort();
    const server = run(['start'], {
      ...SECRET,
      QUIRE_STORAGE_URL: `postgresql://quire:hunter2@127.0.0.1:${port}/quire`,
      QUIRE_STORAGE_CONNECT_TIMEOUT_SECONDS: '0',
    });
    expect(await server.exited).toBe(69);
    const lines = quireLines(server.output());
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^quire: PostgreSQL at 127\\.0\\.0\\.1:${port}/quire is unavailable ` +
          '\\(connect ECONNREFUSED .*one attempt.*\\): check storage_url',
      ),
    );
    expect(server.output()).not.toContain('hunter2'); // storage_url is a secret
    figures.push(`database unreachable → exit 69: ${lines[0]}`);
  }, 30_000);

  it('database unreachable: a line per retry for storage_connect_timeout_seconds, then exit 69', async () => {
    const port = await closedPort();
    const started = Date.now();
    const server = run(['start'], {
      ...SECRET,
      QUIRE_STORAGE_URL: `postgresql://postgres@127.0.0.1:${port}/quire`,
      QUIRE_STORAGE_CONNECT_TIMEOUT_SECONDS: '2',
    });
    expect(await server.exited).toBe(69);
    const lines = quireLines(server.output());
    const attempts = lines.filter((line) =>
      /attempt \d+ failed, next in [\d.]+ s \(storage_connect_timeout_seconds: \d+ s left\)/.test(line),
    );
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(lines.at(-1)).toMatch(
      /is unavailable \(.*\d+ attempts in \d+ s, storage_connect_timeout_seconds = 2\): check storage_url/,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    figures.push(
      `database unreachable, storage_connect_timeout_seconds = 2 → ${attempts.length} retry lines, then exit 69`,
    );
  }, 30_000);

  it('quire migrate and the workers primary retry the same way', async () => {
    const port = await closedPort();
    const env = {
      ...SECRET,
      QUIRE_STORAGE_URL: `postgresql://postgres@127.0.0.1:${port}/quire`,
      QUIRE_STORAGE_CONNECT_TIMEOUT_SECONDS: '1',
    };
    const migrate = run(['migrate'], env);
    const workers = run(['start'], { ...env, QUIRE_WORKERS: '2' });
    expect(await migrate.exited).toBe(69);
    expect(await workers.exited).toBe(69);
    for (const { output } of [migrate, workers]) {
      const lines = quireLines(output());
      expect(lines[0]).toMatch(/attempt 1 failed/);
      expect(lines.at(-1)).toMatch(/is unavailable .*check storage_url/);
    }
    expect(workers.output()).not.toMatch(/worker \d+/); // nothing was forked
    figures.push('quire migrate, workers = 2 → retried, exit 69');
  }, 30_000);

  it('documents the exit codes in --help', async () => {
    const help = run(['--help'], {});
    expect(await help.exited).toBe(0);
    expect(help.output()).toMatch(
      /Exit codes:[\s\S]*69 .*PostgreSQL unavailable[\s\S]*71 .*cannot listen[\s\S]*78 .*configuration/,
    );
  }, 30_000);
});

const db = await startPrivatePostgres(FILE);

describe.skipIf(typeof db === 'string')(
  'quire start against a PostgreSQL that is missing a database, or not up yet',
  () => {
    afterAll(async () => {
      if (typeof db !== 'string') await db.destroy();
    });

    it('database missing: one line naming the database and storage_url, exit 78 (no retry)', async () => {
      if (typeof db === 'string') return;
      const server = run(['start'], {
        ...SECRET,
        QUIRE_STORAGE_URL: db.url('no_such_database'),
        QUIRE_STORAGE_CONNECT_TIMEOUT_SECONDS: '30',
      });
      expect(await server.exited).toBe(78);
      const lines = quireLines(server.output());
      expect(lines).toEqual([
        `quire: database "no_such_database" does not exist on PostgreSQL at 127.0.0.1:${db.port}/no_such_database: ` +
          'create it (e.g. createdb no_such_database) or fix storage_url',
      ]);
      figures.push(`database missing → exit 78: ${lines[0]}`);
    }, 30_000);

    it('a database that comes up within storage_connect_timeout_seconds: the start waits for it', async () => {
      if (typeof db === 'string') return;
      await db.stop('fast');
      const server = run(['start'], {
        ...SECRET,
        QUIRE_PORT: '0',
        QUIRE_STORAGE_URL: db.url(),
        QUIRE_STORAGE_AUTO_MIGRATE: 'true',
        QUIRE_STORAGE_CONNECT_TIMEOUT_SECONDS: '30',
      });
      for (const deadline = Date.now() + 20_000; !/attempt 1 failed/.test(server.output()); await sleep(50)) {
        if (Date.now() > deadline || server.child.exitCode !== null)
          throw new Error(`no retry line:\n${server.output()}`);
      }
      await db.start();
      const url = await server.listening;
      const put = await fetch(`${url}buckets/waited`, {
        method: 'PUT',
        headers: { Authorization: `Basic ${btoa('alice:secret')}` },
      });
      expect(put.status).toBe(201);
      const attempts = quireLines(server.output()).filter((line) => /attempt \d+ failed/.test(line)).length;
      figures.push(
        'database down at start, started after the first failed attempt → ' +
          `listening after ${attempts} failed attempt(s)`,
      );
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    }, 60_000);
  },
);
