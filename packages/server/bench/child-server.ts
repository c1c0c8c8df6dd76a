/**
 * A benchmark's server runs in a CHILD process, so that the load generator's parsing does not
 * share the server's event loop. The bench script forks itself with `--serve`; the child gets
 * its config in `QUIRE_BENCH_CHILD`, listens on a free port, and answers messages over IPC.
 */
import { fork, type ChildProcess } from 'node:child_process';
import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import type { Storage } from '../src/storage/types.js';
import { runCluster } from '../src/workers.js';

/** True in the forked child. */
export const isServerChild = (): boolean => process.argv.includes('--serve');

/** The config the parent passed to `startServerChild`. */
export function childConfig<T>(): T {
  return JSON.parse(process.env.QUIRE_BENCH_CHILD ?? '{}') as T;
}

/**
 * In the child: listens, tells the parent its port, stops on 'stop' (or when the parent dies),
 * and answers every other message named in `replies` with what its function returns.
 * `storage` is null for a server without one (bench/throughput.ts's bare Fastify ceiling).
 */
export async function serveInChild(
  app: FastifyInstance,
  storage: Pick<Storage, 'close'> | null,
  replies: Record<string, () => unknown> = {},
): Promise<void> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no TCP port');
  const stop = async () => {
    await app.close();
    await storage?.close();
    process.exit(0);
  };
  process.on('message', (message) => {
    if (message === 'stop') void stop();
    const reply = replies[String(message)];
    if (reply) void Promise.resolve(reply()).then((value) => process.send!(value));
  });
  process.on('disconnect', () => void stop()); // the parent died
  process.send!({ port: address.port });
}

/**
 * serveInChild with `workers` processes on one port (src/workers.ts, as `quire start` runs
 * them): each worker runs `open` for an app and storage of its own and listens. The primary
 * tells the parent the port, stops the workers on 'stop' (or when the parent dies), and answers
 * 'cpu' (see `cpuReply` in support.ts) with the CPU time of all its processes: its own (it hands
 * connections over) and each worker's, which it asks them for.
 */
export async function serveClusterInChild(
  workers: number,
  open: () => Promise<{ app: FastifyInstance; storage: Pick<Storage, 'close'> }>,
): Promise<void> {
  const servers = await runCluster({
    workers,
    startWorker: async () => {
      const { app, storage } = await open();
      process.on(
        'SIGTERM',
        () =>
          void app
            .close()
            .then(() => storage.close())
            .then(() => process.exit(0)),
      );
      process.on('message', (message) => {
        if (message === 'cpu') process.send!(ownCpuMs());
      });
      await app.listen({ host: '127.0.0.1', port: 0 }); // the primary picks the port once, for all
    },
    log: (line) => console.error(`bench server: ${line}`),
  });
  if (!servers) return; // a worker
  const workersCpuMs = () =>
    Promise.all(
      Object.values(cluster.workers ?? {}).map(
        (worker) =>
          new Promise<number>((resolve) => {
            worker!.once('message', (ms: number) => resolve(ms));
            worker!.send('cpu');
          }),
      ),
    );
  process.on('message', (message) => {
    if (message === 'stop') servers.stop();
    if (message === 'cpu')
      void workersCpuMs().then((each) => process.send!({ cpuMs: ownCpuMs() + each.reduce((sum, ms) => sum + ms, 0) }));
  });
  process.on('disconnect', () => servers.stop()); // the parent died
  process.send!({ port: servers.port });
}

function ownCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/**
 * In the parent: forks `script` (the bench itself) as the server child and waits for its port.
 * `execArgv` adds Node options to the child's (e.g. `--cpu-prof`).
 */
export async function startServerChild(
  script: string,
  config: unknown,
  execArgv: string[] = [],
): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(script, ['--serve'], {
    execArgv: [...process.execArgv, ...execArgv],
    env: { ...process.env, QUIRE_BENCH_CHILD: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`server process exited (${code}) before listening`)));
    child.once('error', reject);
  });
  return { child, port };
}

/** Sends `message` to the child and resolves with its reply (one question at a time). */
export function askChild<T>(child: ChildProcess, message: string): Promise<T> {
  const reply = new Promise<T>((resolve) => child.once('message', (value) => resolve(value as T)));
  child.send(message);
  return reply;
}

export async function stopServerChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.send('stop');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
