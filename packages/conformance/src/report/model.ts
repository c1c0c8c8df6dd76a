/**
 * The outcome of a run, independent of vitest: what the JSON, JUnit and HTML reports and the
 * console table are written from. Built from vitest's reported tasks by `buildRunReport`.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { TestCase, TestModule, TestSuite } from 'vitest/node';
import type { RecordedExchange } from '../harness/http.js';
import { SKIP_MARKER } from '../harness/skip.js';
import type { SkipReason } from '../harness/capabilities.js';
import type { Expectations } from './expectations.js';

export type Outcome = 'passed' | 'failed' | 'expected-failure' | 'unexpected-pass' | 'skipped';

export interface FailureDetail {
  message: string;
  expected?: string;
  actual?: string;
  diff?: string;
  stack?: string;
}

export interface TestOutcome {
  /** `<file> > <describe> > <test>`: what expectation patterns match. */
  id: string;
  file: string;
  /** The top-level describe, which names the protocol section (`§6.2 If-Match …`). */
  section: string;
  name: string;
  outcome: Outcome;
  /** Why it was skipped, or the expectation's reason for an expected failure / unexpected pass. */
  reason?: string;
  durationMs: number;
  errors?: FailureDetail[];
  /** Last HTTP exchanges of a failing test (request and actual response). */
  exchanges?: RecordedExchange[];
}

export interface SectionSummary {
  file: string;
  /** First line of the suite's doc comment, e.g. "§8 Batch". */
  title: string;
  counts: Record<Outcome, number>;
  /** Distinct skip reasons in this section. */
  skipReasons: string[];
}

export interface ServerSummary {
  url: string;
  project_name?: string;
  project_version?: string;
  http_api_version?: string;
  capabilities: string[];
  settings?: Record<string, unknown>;
}

export interface RunReport {
  tool: { name: '@quire/conformance'; version: string };
  server: ServerSummary;
  startedAt: string;
  durationMs: number;
  mode: {
    readOnly: boolean;
    identities: 'basicauth' | 'given' | 'created-accounts';
    expectationsFile?: string;
    /** Where writes went, when the target was a reader. */
    writer?: string;
  };
  summary: Record<Outcome, number> & { total: number; unexpected: number };
  sections: SectionSummary[];
  tests: TestOutcome[];
  /** Errors outside any test (unhandled rejections, crashed workers, interrupted run). */
  runErrors: string[];
  /** Buckets the final cleanup still had to delete (left behind by interrupted files). */
  leftoverBucketsDeleted: number;
  interrupted: boolean;
}

function emptyCounts(): Record<Outcome, number> {
  return { passed: 0, failed: 0, 'expected-failure': 0, 'unexpected-pass': 0, skipped: 0 };
}

interface ErrorLike {
  message?: string;
  expected?: string;
  actual?: string;
  diff?: string;
  stack?: string;
}

function isSkipSignal(error: ErrorLike): boolean {
  return typeof error.message === 'string' && error.message.includes(SKIP_MARKER);
}

function skipSignalReason(error: ErrorLike): string {
  const message = error.message ?? '';
  return message.slice(message.indexOf(SKIP_MARKER) + SKIP_MARKER.length).trim();
}

function detail(error: ErrorLike): FailureDetail {
  const d: FailureDetail = { message: error.message ?? String(error) };
  if (error.expected !== undefined) d.expected = error.expected;
  if (error.actual !== undefined) d.actual = error.actual;
  if (error.diff !== undefined) d.diff = error.diff;
  if (error.stack !== undefined) d.stack = error.stack;
  return d;
}

/** First paragraph of the leading doc comment of a suite file, else its base name. */
function suiteTitle(moduleId: string, file: string): string {
  try {
    const source = readFileSync(moduleId, 'utf8');
    const m = /^\s*\/\*\*([\s\S]*?)\*\//.exec(source);
    const lines = (m?.[1] ?? '').split('\n').map((l) => l.replace(/^\s*\*\s?/, '').trim());
    const start = lines.findIndex((l) => l !== '');
    if (start >= 0) {
      const end = lines.indexOf('', start);
      const paragraph = lines.slice(start, end < 0 ? undefined : end).join(' ');
      return paragraph.length > 200 ? `${paragraph.slice(0, 199)}…` : paragraph;
    }
  } catch {
    // Not readable: fall back to the name.
  }
  return file.replace(/\.test\.ts$/, '');
}

type Parent = TestSuite | TestModule;

function ancestors(test: TestCase): Parent[] {
  const out: Parent[] = [];
  let p: Parent = test.parent;
  for (;;) {
    out.push(p);
    if (p.type === 'module') break;
    p = p.parent;
  }
  return out;
}

function skipReasonsOf(meta: object): SkipReason[] {
  return ((meta as Record<string, unknown>).skipReasons as SkipReason[] | undefined) ?? [];
}

/** Why a test that did not run was skipped: see capabilities.ts `recordSkipReason`. */
function skippedReason(test: TestCase, note: string | undefined): string {
  if (note) return note;
  for (const p of ancestors(test)) {
    const signal = p.errors().find(isSkipSignal);
    if (signal) return skipSignalReason(signal);
    const failure = p.errors()[0];
    if (failure) return `not run: setup failed (${failure.message})`;
  }
  const own = skipReasonsOf(test.meta());
  const all = [...own, ...ancestors(test).flatMap((p) => skipReasonsOf(p.meta()))];
  const name = test.fullName;
  const byName = all.find((r) => name.includes(r.section));
  if (byName) return byName.reason;
  const last = own[own.length - 1];
  if (last) return last.reason;
  const distinct = [...new Set(all.map((r) => r.reason))];
  if (distinct.length > 0) return distinct.join('; ');
  return test.options.mode === 'todo' ? 'not written yet (todo)' : 'skipped by the suite';
}

function topSection(test: TestCase): string {
  const chain = ancestors(test).filter((p): p is TestSuite => p.type === 'suite');
  return chain[chain.length - 1]?.name ?? '(file)';
}

function applyExpectation(outcome: TestOutcome, expectations: Expectations | undefined): void {
  const match = expectations?.match(outcome.id);
  if (!match) return;
  if (outcome.outcome === 'failed') {
    outcome.outcome = 'expected-failure';
    outcome.reason = match.flaky ? `known flaky: ${match.reason}` : match.reason;
  } else if (outcome.outcome === 'passed' && !match.flaky) {
    outcome.outcome = 'unexpected-pass';
    outcome.reason = `listed as a deviation (${match.reason}) but passed`;
  }
}

/** Classifies one test case. */
export function testOutcome(test: TestCase, expectations?: Expectations): TestOutcome {
  const file = basename(test.module.moduleId);
  const result = test.result();
  const out: TestOutcome = {
    id: `${file} > ${test.fullName}`,
    file,
    section: topSection(test),
    name: test.name,
    outcome: 'skipped',
    durationMs: Math.round(test.diagnostic()?.duration ?? 0),
  };
  if (result.state === 'passed') {
    out.outcome = 'passed';
  } else if (result.state === 'failed') {
    const errors = result.errors as readonly ErrorLike[];
    if (errors.length > 0 && errors.every(isSkipSignal)) {
      out.outcome = 'skipped';
      out.reason = skipSignalReason(errors[0] as ErrorLike);
    } else {
      out.outcome = 'failed';
      out.errors = errors.filter((e) => !isSkipSignal(e)).map(detail);
      const exchanges = (test.meta() as Record<string, unknown>).exchanges as RecordedExchange[] | undefined;
      if (exchanges?.length) out.exchanges = exchanges;
    }
  } else if (result.state === 'skipped') {
    out.reason = skippedReason(test, result.note);
  } else {
    out.reason = 'not run (the run was interrupted)';
  }
  applyExpectation(out, expectations);
  return out;
}

/** Errors of hooks and collection (no test to carry them), as pseudo-tests so that they count. */
function setupOutcomes(module: TestModule, expectations?: Expectations): TestOutcome[] {
  const file = basename(module.moduleId);
  const out: TestOutcome[] = [];
  const visit = (p: Parent, path: string[]) => {
    const errors = p.errors() as ErrorLike[];
    if (errors.length > 0) {
      const where = path.length ? `${path.join(' > ')} (setup and teardown)` : '(file setup and teardown)';
      const o: TestOutcome = {
        id: `${file} > ${where}`,
        file,
        section: path[0] ?? '(file)',
        name: where,
        outcome: 'failed',
        durationMs: 0,
      };
      if (errors.every(isSkipSignal)) {
        o.outcome = 'skipped';
        o.reason = skipSignalReason(errors[0] as ErrorLike);
      } else {
        o.errors = errors.filter((e) => !isSkipSignal(e)).map(detail);
      }
      applyExpectation(o, expectations);
      out.push(o);
    }
    for (const child of p.children) if (child.type === 'suite') visit(child, [...path, child.name]);
  };
  visit(module, []);
  return out;
}

export function moduleOutcomes(
  module: TestModule,
  expectations?: Expectations,
): { section: SectionSummary; tests: TestOutcome[] } {
  const file = basename(module.moduleId);
  const tests = [
    ...setupOutcomes(module, expectations),
    ...[...module.children.allTests()].map((t) => testOutcome(t, expectations)),
  ];
  const counts = emptyCounts();
  for (const t of tests) counts[t.outcome] += 1;
  const skipReasons = [
    ...new Set(tests.filter((t) => t.outcome === 'skipped' && t.reason).map((t) => t.reason as string)),
  ];
  return { section: { file, title: suiteTitle(module.moduleId, file), counts, skipReasons }, tests };
}

export function summarise(tests: TestOutcome[], runErrors: string[]): RunReport['summary'] {
  const counts = emptyCounts();
  for (const t of tests) counts[t.outcome] += 1;
  return { ...counts, total: tests.length, unexpected: counts.failed + runErrors.length };
}
