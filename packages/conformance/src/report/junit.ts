/**
 * JUnit XML (the dialect CI systems read): one <testsuite> per suite file; an expected
 * deviation is a passing <testcase> with a <system-out> note, a skip carries its reason.
 */
import type { RunReport, TestOutcome } from './model.js';

function xml(text: string): string {
  // XML 1.0 forbids most control characters even escaped.
  return (
    text
      // biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point: they are replaced
      .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g, '\uFFFD')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
  );
}

function failureBody(t: TestOutcome): string {
  const parts: string[] = [];
  for (const e of t.errors ?? []) {
    parts.push(e.message);
    if (e.diff) parts.push(e.diff);
  }
  for (const x of t.exchanges ?? []) {
    parts.push(`> ${x.request.method} ${x.request.url}${x.request.body ? `\n> ${x.request.body}` : ''}`);
    if (x.response) parts.push(`< ${x.response.status}\n< ${x.response.body}`);
    if (x.error) parts.push(`< network error: ${x.error}`);
  }
  return parts.join('\n');
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}

function testcase(t: TestOutcome): string {
  const classname = xml(`${t.file} > ${t.section}`);
  const name = xml(t.id.slice(t.file.length + 3));
  const open = `    <testcase classname="${classname}" name="${name}" time="${seconds(t.durationMs)}"`;
  const close = '\n    </testcase>';
  switch (t.outcome) {
    case 'passed':
      return `${open}/>`;
    case 'skipped':
      return `${open}>\n      <skipped message="${xml(t.reason ?? '')}"/>${close}`;
    case 'expected-failure':
      return `${open}>\n      <system-out>${xml(`expected deviation: ${t.reason ?? ''}`)}</system-out>${close}`;
    case 'unexpected-pass':
      return `${open}>\n      <system-out>${xml(t.reason ?? 'unexpectedly passed')}</system-out>${close}`;
    case 'failed': {
      const message = xml(t.errors?.[0]?.message.split('\n')[0] ?? 'failed');
      const failure = `<failure message="${message}" type="AssertionError">${xml(failureBody(t))}</failure>`;
      return `${open}>\n      ${failure}${close}`;
    }
  }
}

export function toJUnit(report: RunReport): string {
  const out = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const s = report.summary;
  out.push(
    `<testsuites name="quire-conformance ${xml(report.server.url)}" tests="${s.total}" failures="${s.failed}" ` +
      `errors="${report.runErrors.length}" skipped="${s.skipped}" time="${seconds(report.durationMs)}">`,
  );
  for (const section of report.sections) {
    const tests = report.tests.filter((t) => t.file === section.file);
    const c = section.counts;
    out.push(
      `  <testsuite name="${xml(`${section.file}: ${section.title}`)}" tests="${tests.length}" ` +
        `failures="${c.failed}" errors="0" skipped="${c.skipped}">`,
    );
    for (const t of tests) out.push(testcase(t));
    out.push('  </testsuite>');
  }
  if (report.runErrors.length > 0) {
    out.push(
      `  <testsuite name="run" tests="${report.runErrors.length}" failures="0" errors="${report.runErrors.length}">`,
    );
    for (const [i, e] of report.runErrors.entries()) {
      out.push(
        `    <testcase classname="run" name="run error ${i + 1}">` +
          `<error message="${xml(e.split('\n')[0] ?? '')}">${xml(e)}</error></testcase>`,
      );
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>', '');
  return out.join('\n');
}
