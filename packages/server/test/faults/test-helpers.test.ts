/**
 * The test run itself must survive PostgreSQL dropping its connections. The conformance
 * suite's global setup runs in vitest's main process for the whole run: one idle client of
 * its own without an 'error' listener, and a PostgreSQL restart ended the whole run with an
 * unhandled 'error' event. Here that setup runs in a child process against a private
 * PostgreSQL, which is restarted under it (`-m fast`: every session ends with 57P01).
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startPrivatePostgres } from '../helpers/private-postgres.js';

const FILE = 'test-helpers.test.ts';
const db = await startPrivatePostgres(FILE);
const packageDir = fileURLToPath(new URL('../..', import.meta.url));

/** What the child runs: the global setup (with a stand-in for vitest's project), then its teardown when told. */
const CHILD = `
import setup from './test/conformance/postgres.setup.ts';
const provided = {};
const teardown = await setup({ provide: (key, value) => (provided[key] = value) });
console.log('ready ' + provided.conformanceUrl);
process.stdin.once('data', async () => {
  await teardown?.();
  console.log('torn down');
  process.exit(0);
});
`;

describe.skipIf(typeof db === 'string')('the test helpers when PostgreSQL restarts', () => {
  afterAll(async () => {
    if (typeof db !== 'string') await db.destroy();
  });

  it('the conformance setup lives through a restart, and its teardown works after it', async () => {
    if (typeof db === 'string') return;
    const { QUIRE_STORAGE_URL: _url, QUIRE_CONFIG: _config, ...inherited } = process.env;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], {
      cwd: packageDir,
      env: { ...inherited, QUIRE_TEST_PG_URL: db.url() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      for (const deadline = Date.now() + 30_000; !/^ready http/m.test(output); await sleep(50)) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the setup did not start:\n${output}`);
      }
      const conformanceUrl = /^ready (\S+)/m.exec(output)![1]!;

      await db.restart('fast');
      await sleep(1_000); // the dropped connections' 'error' events come at once
      expect(child.exitCode, output).toBe(null);
      // The server it started serves again: its pool reconnects.
      let status = 0;
      for (const deadline = Date.now() + 10_000; status !== 200 && Date.now() < deadline; await sleep(100)) {
        status = (
          await fetch(`${conformanceUrl}/buckets/probe`, {
            method: 'PUT',
            headers: { Authorization: `Basic ${btoa('a:b')}` },
          })
        ).status;
        if (status === 201) status = 200;
      }
      expect(status).toBe(200);

      child.stdin.write('teardown\n');
      expect(await exited, output).toBe(0);
      expect(output).toMatch(/torn down/);
      console.log(`${FILE}: conformance setup survived a PostgreSQL restart (-m fast), then tore down cleanly`);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 60_000);
});
