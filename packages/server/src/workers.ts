/**
 * Several server processes on one port (node:cluster), as several hosts share one PostgreSQL.
 * The primary forks the workers, replaces those that die and stops them all on SIGTERM/SIGINT;
 * it opens no store and serves nothing (it holds the listening socket and hands each new
 * connection to a worker, round-robin). Each worker runs `startWorker`: its own store, app and
 * `listen`. Listening on port 0 is fine: the primary opens that socket once, so every worker
 * gets the same port. A worker whose primary dies exits at once: node:cluster does that by itself
 * when the IPC channel drops (and with the primary gone, so is the listening socket). A worker
 * that dies loses its connections, and the one the primary may hand it before noticing the death.
 */
import cluster, { type Worker } from 'node:cluster';
import { EXIT } from './exit-codes.js';
import { backoffDelay } from './retry.js';

export interface ClusterOptions {
  /** How many worker processes. */
  workers: number;
  /** In each worker: opens its store, builds its app and listens. It must stop gracefully on SIGTERM. */
  startWorker: () => Promise<unknown>;
  /** In the primary, once, before forking (e.g. migrations). */
  prepare?: () => Promise<void>;
  /** The primary's lines: deaths, restarts, giving up. */
  log: (line: string) => void;
}

export interface Cluster {
  /** The port every worker listens on. */
  port: number;
  /** Stops every worker gracefully (SIGTERM), then exits the process (0 if they all stopped cleanly). */
  stop: () => void;
}

/**
 * Workers that cannot start (port taken, bug) are not restarted forever: after this many deaths
 * in a row before listening, the primary gives up. Counted, not timed: a slow start on a busy
 * machine must not hide a failing one.
 */
const MAX_FAILED_STARTS = 5;
/** The first restart waits this long; each further death within the window doubles it, up to the max. */
const FIRST_RESTART_DELAY_MS = 100;
const MAX_RESTART_DELAY_MS = 10_000;
const BACKOFF_WINDOW_MS = 10_000;

/**
 * In the primary: runs `prepare`, forks the workers and resolves once they all listen (it never
 * resolves when they cannot start: it then exits the process, non-zero). In a worker: runs
 * `startWorker` and resolves with null.
 */
export async function runCluster(options: ClusterOptions): Promise<Cluster | null> {
  if (cluster.isWorker) {
    await options.startWorker();
    return null;
  }
  await options.prepare?.();
  return supervise(options);
}

/** The wait before a dead worker's replacement starts: it grows with the deaths of the last window. */
function nextRestartDelay(deaths: number[]): number {
  const now = Date.now();
  deaths.push(now);
  while (deaths[0]! <= now - BACKOFF_WINDOW_MS) deaths.shift();
  return backoffDelay({ firstMs: FIRST_RESTART_DELAY_MS, maxMs: MAX_RESTART_DELAY_MS }, deaths.length - 1);
}

function supervise({ workers: count, log }: ClusterOptions): Promise<Cluster> {
  return new Promise((resolve) => {
    const live = new Set<Worker>();
    const listening = new Set<Worker>();
    const restarts = new Set<NodeJS.Timeout>();
    const deaths: number[] = [];
    let failedStarts = 0;
    let started = false;
    let stopping = false;
    let exitCode = 0;

    const exitWhenAllGone = () => stopping && live.size === 0 && process.exit(exitCode);

    const stop = (code: number) => {
      if (stopping) return;
      stopping = true;
      exitCode = code;
      for (const timer of restarts) clearTimeout(timer);
      // The signal itself, not worker.kill(): that would first disconnect the worker, and a
      // disconnected worker exits at once, without the graceful stop of `quire start`.
      for (const worker of live) worker.process.kill('SIGTERM');
      exitWhenAllGone();
    };

    const onExit = (worker: Worker, code: number | null, signal: string | null) => {
      const listened = listening.delete(worker);
      live.delete(worker);
      if (stopping) {
        // Killed by the SIGTERM before it set up its graceful stop: it was not serving yet.
        const clean = code === 0 || signal === 'SIGTERM';
        if (!clean && exitCode === 0) exitCode = 1;
        exitWhenAllGone();
        return;
      }
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      // A configuration error: a restart would fail the same way.
      if (code === EXIT.CONFIG) {
        log(`worker ${worker.process.pid} stopped on a configuration error; stopping`);
        stop(EXIT.CONFIG);
        return;
      }
      failedStarts = listened ? 0 : failedStarts + 1;
      if (failedStarts >= MAX_FAILED_STARTS) {
        log(`workers keep dying at start (${failedStarts} in a row, the last by ${how}); stopping`);
        // The last one's reason (e.g. 71: the port is taken, 69: the database stayed away).
        stop(code !== null && code > 0 ? code : EXIT.FAILURE);
        return;
      }
      const delay = nextRestartDelay(deaths);
      log(`worker ${worker.process.pid} died (${how}); starting another in ${delay} ms`);
      const timer = setTimeout(() => {
        restarts.delete(timer);
        fork();
      }, delay);
      restarts.add(timer);
    };

    const fork = () => {
      const worker = cluster.fork();
      live.add(worker);
      worker.on('listening', (address) => {
        if (listening.has(worker)) return; // its app listens on a second address (e.g. host localhost: IPv4 and IPv6)
        listening.add(worker);
        failedStarts = 0;
        if (started) {
          log(`worker ${worker.process.pid} is listening (${listening.size} of ${count})`);
        } else if (listening.size === count) {
          started = true;
          resolve({ port: address.port, stop: () => stop(0) });
        }
      });
      worker.on('exit', (code, signal) => onExit(worker, code, signal));
    };

    process.on('SIGTERM', () => stop(0));
    process.on('SIGINT', () => stop(0));
    for (let i = 0; i < count; i++) fork();
  });
}
