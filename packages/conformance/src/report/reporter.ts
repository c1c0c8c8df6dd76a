/**
 * The vitest reporter of the CLI: prints progress while the suites run (a line per finished
 * suite, each unexpected failure as it happens) and keeps the per-module outcomes for the reports.
 */
import type { Writable } from 'node:stream';
import type { Reporter, SerializedError, TestCase, TestModule, TestRunEndReason } from 'vitest/node';
import type { Expectations } from './expectations.js';
import { moduleOutcomes, testOutcome, type SectionSummary, type TestOutcome } from './model.js';

export class ConformanceReporter implements Reporter {
  readonly sections: SectionSummary[] = [];
  readonly tests: TestOutcome[] = [];
  readonly runErrors: string[] = [];
  endReason: TestRunEndReason | undefined;
  private done = 0;
  private total = 0;

  constructor(
    private readonly out: Writable,
    private readonly expectations: Expectations | undefined,
  ) {}

  onTestRunStart(specifications: ReadonlyArray<unknown>): void {
    this.total = specifications.length;
    this.out.write(`Running ${this.total} suites…\n`);
  }

  onTestCaseResult(test: TestCase): void {
    const o = testOutcome(test, this.expectations);
    if (o.outcome === 'failed') this.out.write(`  ✗ ${o.id}\n      ${(o.errors?.[0]?.message ?? '').split('\n')[0]}\n`);
  }

  onTestModuleEnd(module: TestModule): void {
    const { section, tests } = moduleOutcomes(module, this.expectations);
    this.sections.push(section);
    this.tests.push(...tests);
    this.done += 1;
    const c = section.counts;
    const mark = c.failed > 0 ? '✗' : '✓';
    const extra = [
      c['expected-failure'] ? `${c['expected-failure']} expected deviations` : '',
      c['unexpected-pass'] ? `${c['unexpected-pass']} unexpectedly passed` : '',
      c.skipped ? `${c.skipped} skipped` : '',
    ]
      .filter(Boolean)
      .join(', ');
    this.out.write(
      `[${this.done}/${this.total}] ${mark} ${section.file.replace(/\.test\.ts$/, '').padEnd(24)} ${c.passed} ` +
        `passed, ${c.failed} failed${extra ? `, ${extra}` : ''}\n`,
    );
    for (const t of tests.filter((x) => x.outcome === 'failed' && x.name.includes('(setup'))) {
      this.out.write(`  ✗ ${t.id}\n      ${(t.errors?.[0]?.message ?? '').split('\n')[0]}\n`);
    }
  }

  onTestRunEnd(
    _modules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
    reason: TestRunEndReason,
  ): void {
    this.endReason = reason;
    for (const e of unhandledErrors)
      this.runErrors.push(`${e.name ?? 'Error'}: ${e.message}${e.stack ? `\n${e.stack}` : ''}`);
    // Modules that never reported an end (interrupted run).
    const seen = new Set(this.sections.map((s) => s.file));
    for (const m of _modules) {
      const { section, tests } = moduleOutcomes(m, this.expectations);
      if (seen.has(section.file)) continue;
      this.sections.push(section);
      this.tests.push(...tests);
    }
  }
}
