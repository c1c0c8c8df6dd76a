/** The per-section pass/fail/skip table printed at the end of a run. */
import type { RunReport } from './model.js';

export function toTable(report: RunReport): string {
  const head = ['section', 'passed', 'failed', 'expected', 'unexp.pass', 'skipped'];
  const rows = report.sections
    .slice()
    .sort((a, b) => a.file.localeCompare(b.file))
    .map((s) =>
      [
        s.file.replace(/\.test\.ts$/, ''),
        s.counts.passed,
        s.counts.failed,
        s.counts['expected-failure'],
        s.counts['unexpected-pass'],
        s.counts.skipped,
      ].map(String),
    );
  const sm = report.summary;
  const total = ['TOTAL', sm.passed, sm.failed, sm['expected-failure'], sm['unexpected-pass'], sm.skipped].map(String);
  const widths = head.map((h, i) =>
    Math.max(h.length, ...rows.map((r) => (r[i] as string).length), (total[i] as string).length),
  );
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  const sep = widths.map((w) => '-'.repeat(w)).join('  ');
  const out = [line(head), sep, ...rows.map(line), sep, line(total)];
  const reasons = new Map<string, number>();
  for (const t of report.tests)
    if (t.outcome === 'skipped') reasons.set(t.reason ?? 'skipped', (reasons.get(t.reason ?? 'skipped') ?? 0) + 1);
  if (reasons.size) {
    out.push('', 'Skipped:');
    for (const [reason, n] of [...reasons.entries()].sort((a, b) => b[1] - a[1]))
      out.push(`  ${String(n).padStart(4)} × ${reason}`);
  }
  return `${out.join('\n')}\n`;
}
