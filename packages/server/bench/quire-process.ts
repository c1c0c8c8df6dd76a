/**
 * `quire start` as a child process of a bench (src/cli.ts on source, through tsx): its API's
 * base URL once it listens, and its pid. Every process a bench starts is killed by `stopAll`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const packageDir = fileURLToPath(new URL('..', import.meta.url));
const children: ChildProcess[] = [];

export interface QuireProcess {
  /** `http://127.0.0.1:<port>/v1/` */
  base: string;
  pid: number;
}

/** Starts `quire start` with `env` over the bench's own (its storage URL and config file left out). */
export async function startQuire(env: Record<string, string>): Promise<QuireProcess> {
  const { QUIRE_STORAGE_URL: _u, QUIRE_CONFIG: _c, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', cli, 'start'], {
    cwd: packageDir,
    env: { ...inherited, QUIRE_LOG_LEVEL: 'warn', QUIRE_HOST: '127.0.0.1', QUIRE_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+\/v1\/)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({ base: match[1], pid: child.pid! });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', () => reject(new Error(`server exited:\n${output}`)));
  });
}

/** Stops every process started here (SIGTERM), and gives them half a second. */
export async function stopAll(): Promise<void> {
  for (const child of children.splice(0)) child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 500));
}
