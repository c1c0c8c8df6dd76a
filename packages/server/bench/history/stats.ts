/** bench/history.ts's statistics: medians, and paired changes with a bootstrap interval. */

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * The change from off to on as `+x% [low, high]`: the median of the per-round ratios (each
 * round runs both modes back to back, so a ratio cancels what the machine did then) and a 95%
 * bootstrap interval of that median. An interval that holds 0 means no change this run could
 * tell from the machine's noise (runs on another day may still differ more than that).
 */
export function pairedChange(off: number[], on: number[]): string {
  const ratios = off.map((value, i) => on[i]! / value);
  const estimates = Array.from({ length: 2000 }, () =>
    median(ratios.map(() => ratios[Math.floor(Math.random() * ratios.length)]!)),
  ).sort((a, b) => a - b);
  const percent = (ratio: number) => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)}%`;
  return `${percent(median(ratios))} [${percent(estimates[50]!)}, ${percent(estimates[1949]!)}]`;
}
