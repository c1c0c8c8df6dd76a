/**
 * `quire` run as an operator runs it, for the CLI tests: a real process (`node --import tsx
 * src/cli.ts`), its output gathered, its start awaited on the "listening on" line. Every process
 * started is killed after each test (call `useCli()` at the top of the file), or after the file's
 * last one (`useCli('file')`: processes that several tests share, started in a `beforeAll`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach } from 'vitest';

const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const packageDir = fileURLToPath(new URL('../..', import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  /** The API's URL once it listens (rejects if the process exits first or after 30 s). */
  listening: Promise<string>;
  output: () => string;
}

export function useCli(until: 'test' | 'file' = 'test'): (args: string[], env: Record<string, string>) => CliProcess {
  const children: ChildProcess[] = [];
  (until === 'test' ? afterEach : afterAll)(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });
  return (args, env) => {
    // The environment's own store and config file must not leak into a test's process.
    const { QUIRE_STORAGE_URL: _url, QUIRE_CONFIG: _config, ...inherited } = process.env;
    const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
      cwd: packageDir, // `--import tsx` resolves from here (pnpm does not hoist it to the root)
      env: { ...inherited, QUIRE_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const listening = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
      child.stdout!.on('data', () => {
        const match = /listening on (http:\/\/\S+\/v1\/)/.exec(output);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      child.on('exit', () => reject(new Error(`server exited:\n${output}`)));
    });
    listening.catch(() => undefined); // awaited only by the tests that expect a start
    return { child, exited, listening, output: () => output };
  };
}
