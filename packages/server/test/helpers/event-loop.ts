/**
 * The longest stall of this process's event loop while some work runs: what a request that
 * computes synchronously (a backtracking pattern, a statement of the embedded store) makes every
 * other request wait. A timer-drift probe: a 5 ms interval notes how late each tick comes, and
 * the time from its last tick to the end counts too. (`perf_hooks.monitorEventLoopDelay` misses
 * a block that starts before its timer's second tick: its first one only sets its origin, and an
 * in-process store can run a whole request in microtasks, without the loop ever turning.)
 */

const PERIOD_MS = 5;

export interface Stalls<T> {
  result: T;
  /** The worst event-loop delay seen while `work` ran, in milliseconds. */
  worstMs: number;
  elapsedMs: number;
}

export async function measureStalls<T>(work: () => Promise<T>): Promise<Stalls<T>> {
  const started = performance.now();
  let last = started;
  let worst = 0;
  const tick = () => {
    const now = performance.now();
    worst = Math.max(worst, now - last - PERIOD_MS);
    last = now;
  };
  const timer = setInterval(tick, PERIOD_MS);
  try {
    const result = await work();
    const elapsedMs = performance.now() - started;
    tick();
    return { result, worstMs: Math.max(0, worst), elapsedMs };
  } finally {
    clearInterval(timer);
  }
}

/**
 * `measureStalls`, with a stall at or past `budgetMs` confirmed by running `work` again, up to
 * `attempts` times in all: the machine's other work can delay a timer now and then, a slow
 * computation delays it every time. The run with the smallest stall counts.
 */
export async function confirmedStalls<T>(work: () => Promise<T>, budgetMs: number, attempts = 3): Promise<Stalls<T>> {
  let best = await measureStalls(work);
  for (let attempt = 1; attempt < attempts && best.worstMs >= budgetMs; attempt++) {
    const again = await measureStalls(work);
    if (again.worstMs < best.worstMs) best = again;
  }
  return best;
}
