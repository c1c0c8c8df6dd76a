/** How several `sync()` calls made while one runs become the one follow-up sync they share. */
import type { ConflictStrategy } from '../sync/conflicts.js';
import type { SyncOptions, SyncProgress } from '../sync/engine.js';

/**
 * One sync that does what each of several callers asked: it pushes unless all of them asked
 * for pullOnly, ignores Backoff if any did, uses the latest strategy and subset given, reports progress
 * to each, and is aborted only once every caller's signal is (a caller without one wants it).
 */
export function mergeSyncOptions(
  callers: Array<SyncOptions & { strategy?: ConflictStrategy }>,
): SyncOptions & { strategy?: ConflictStrategy } {
  const signals = callers.map((caller) => caller.signal);
  let signal: AbortSignal | undefined;
  if (signals.every((each): each is AbortSignal => each !== undefined)) {
    const all = new AbortController();
    const check = () => {
      if (signals.every((each) => each.aborted)) all.abort(signals.at(-1)!.reason);
    };
    for (const each of signals) each.addEventListener('abort', check, { once: true });
    check();
    signal = all.signal;
  }
  const strategy = callers.findLast((caller) => caller.strategy !== undefined)?.strategy;
  const subset = callers.findLast((caller) => caller.filters !== undefined);
  const progress = callers.flatMap((caller) => (caller.onProgress ? [caller.onProgress] : []));
  const onProgress = (update: SyncProgress) => {
    for (const report of progress) report(update);
  };
  return {
    pullOnly: callers.every((caller) => caller.pullOnly === true),
    ignoreBackoff: callers.some((caller) => caller.ignoreBackoff === true),
    ...(strategy === undefined ? {} : { strategy }),
    ...(subset ? { filters: subset.filters } : {}),
    ...(signal ? { signal } : {}),
    ...(progress.length > 0 ? { onProgress } : {}),
  };
}
