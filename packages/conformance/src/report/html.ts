/**
 * A self-contained HTML report for a person: verdict, per-section table, then every unexpected
 * failure with the assertion (expected / actual) and the HTTP exchanges that led to it, then the
 * expected deviations, the skips grouped by reason, and every test per section.
 */
import type { RecordedExchange } from '../harness/http.js';
import type { FailureDetail, RunReport, TestOutcome } from './model.js';

function esc(text: unknown): string {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function pretty(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

const LABEL: Record<TestOutcome['outcome'], string> = {
  passed: 'passed',
  failed: 'FAILED',
  'expected-failure': 'expected deviation',
  'unexpected-pass': 'unexpectedly passed',
  skipped: 'skipped',
};

function headers(h: Record<string, string>): string {
  return Object.entries(h)
    .map(([k, v]) => `${esc(k)}: ${esc(v)}`)
    .join('\n');
}

function exchange(x: RecordedExchange, title: string): string {
  const req = x.request;
  const res = x.response;
  const request = `${esc(req.method)} ${esc(req.url)}\n${headers(req.headers)}${body(req.body)}`;
  const response = res
    ? `${res.status}\n${headers(res.headers)}${res.body ? body(res.body) : ''}`
    : `no response: ${esc(x.error ?? 'unknown error')}`;
  return `<div class="exchange"><h5>${esc(title)}</h5>
<div class="cols"><div><h6>Request</h6><pre>${request}</pre></div>
<div><h6>Actual response</h6><pre>${response}</pre></div></div></div>`;
}

/** A message body after the headers, pretty when it is JSON. */
function body(text: string | undefined): string {
  return text !== undefined ? `\n\n${esc(pretty(text))}` : '';
}

/** Two blocks side by side. */
function columns(left: string, right: string): string {
  return `<div class="cols"><div>${left}</div><div>${right}</div></div>`;
}

function failureDetail(e: FailureDetail): string {
  const message = e.message.length > MAX_MESSAGE ? `${e.message.slice(0, MAX_MESSAGE)}… (truncated)` : e.message;
  const parts = [`<pre class="message">${esc(message)}</pre>`];
  if (e.expected !== undefined || e.actual !== undefined) {
    parts.push(
      columns(
        `<h6>Expected</h6><pre>${esc(e.expected ?? '')}</pre>`,
        `<h6>Actual</h6><pre>${esc(e.actual ?? '')}</pre>`,
      ),
    );
  }
  if (e.stack) parts.push(`<details><summary>Stack</summary><pre>${esc(e.stack)}</pre></details>`);
  return parts.join('\n');
}

/** The last exchange first and open (it is usually the one the assertion is about); earlier ones folded. */
function exchanges(xs: RecordedExchange[]): string {
  const last = xs[xs.length - 1];
  if (!last) return '<p class="muted">No HTTP exchange was recorded for this test.</p>';
  const earlier = xs.slice(0, -1);
  const folded = earlier.length
    ? `<details><summary>Earlier exchanges of this check (${earlier.length})</summary>${earlier
        .map((x, i) => exchange(x, `Exchange ${i + 1}`))
        .join('\n')}</details>`
    : '';
  return `${exchange(last, 'Last HTTP exchange before the failure')}${folded}`;
}

const MAX_MESSAGE = 1_500;

function failure(t: TestOutcome): string {
  const xs = t.exchanges ?? [];
  return `<details class="failure" open><summary><span class="badge failed">FAILED</span> ${esc(t.id)}</summary>
<p class="where">Section: <b>${esc(t.section)}</b> — file <code>${esc(t.file)}</code></p>
${(t.errors ?? []).map(failureDetail).join('\n')}
${exchanges(xs)}
</details>`;
}

const SECTION_COLUMNS = [
  'Section',
  'Covers',
  'Passed',
  'Failed',
  'Expected deviations',
  'Unexpectedly passed',
  'Skipped',
  'Skip reasons',
];

function sectionsTable(report: RunReport): string {
  const rows = report.sections.map((s) => {
    const c = s.counts;
    const cls =
      c.failed > 0
        ? 'row-failed'
        : c.passed + c['expected-failure'] + c['unexpected-pass'] === 0
          ? 'row-skipped'
          : 'row-passed';
    const link = `<a href="#file-${esc(s.file)}">${esc(s.file.replace(/\.test\.ts$/, ''))}</a>`;
    const numbers = [c.passed, c.failed, c['expected-failure'], c['unexpected-pass'], c.skipped];
    const cells = numbers.map((n) => `<td class="n">${n}</td>`).join('');
    const reasons = s.skipReasons.map(esc).join('<br>');
    return `<tr class="${cls}"><td>${link}</td><td>${esc(s.title)}</td>${cells}<td>${reasons}</td></tr>`;
  });
  const titles = SECTION_COLUMNS.map((title) => `<th>${title}</th>`).join('');
  return `<table id="sections" class="sections"><thead><tr>${titles}</tr></thead><tbody>
${rows.join('\n')}
</tbody></table>`;
}

function skipsByReason(tests: TestOutcome[]): string {
  const groups = new Map<string, TestOutcome[]>();
  for (const t of tests.filter((x) => x.outcome === 'skipped')) {
    const key = t.reason ?? 'skipped';
    groups.set(key, [...(groups.get(key) ?? []), t]);
  }
  if (groups.size === 0) return '<p class="muted">Nothing was skipped.</p>';
  return [...groups.entries()]
    .map(
      ([reason, list]) =>
        `<details><summary><b>${list.length}</b> × ${esc(reason)}</summary>` +
        `<ul>${list.map((t) => `<li>${esc(t.id)}</li>`).join('')}</ul></details>`,
    )
    .join('\n');
}

function badge(t: TestOutcome): string {
  return `<span class="badge ${t.outcome}">${LABEL[t.outcome]}</span>`;
}

function testRow(t: TestOutcome): string {
  const reason = t.reason ? `<div class="muted">${esc(t.reason)}</div>` : '';
  const name = esc(t.id.slice(t.file.length + 3));
  return `<tr><td>${badge(t)}</td><td>${name}${reason}</td><td class="n">${t.durationMs} ms</td></tr>`;
}

function allTests(report: RunReport): string {
  return report.sections
    .map((s) => {
      const tests = report.tests.filter((t) => t.file === s.file);
      const summary = `<summary><b>${esc(s.file)}</b> — ${esc(s.title)} (${tests.length})</summary>`;
      return `<details id="file-${esc(s.file)}">${summary}<table class="tests"><tbody>
${tests.map(testRow).join('\n')}
</tbody></table></details>`;
    })
    .join('\n');
}

// A line ending in a backslash goes on in the next one (a template literal's line continuation).
const CSS = `
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1200px;\
padding:0 1rem;color:#1d1d1f}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.verdict{padding:.8rem 1rem;border-radius:6px;font-weight:600;margin:1rem 0}.verdict.ok{background:#e3f6e7;\
color:#135c26}.verdict.ko{background:#fde7e7;color:#8a1313}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #e5e5e5;padding:.3rem .5rem;\
text-align:left;vertical-align:top}td.n{text-align:right;white-space:nowrap}
.row-failed td:first-child{border-left:4px solid #d33}.row-passed td:first-child{border-left:4px solid #2a2}\
.row-skipped td:first-child{border-left:4px solid #aaa}
.badge{display:inline-block;border-radius:3px;padding:0 .4rem;font-size:.8rem;white-space:nowrap}\
.badge.passed{background:#e3f6e7}.badge.failed{background:#d33;color:#fff}
.badge.expected-failure{background:#fff1c2}.badge.unexpected-pass{background:#dbe9ff}.badge.skipped{background:#eee}
pre{background:#f6f6f6;padding:.6rem;overflow:auto;max-height:28rem;white-space:pre-wrap;word-break:break-word;\
font-size:.85rem}
pre.message{background:#fff4f4}.cols{display:grid;grid-template-columns:1fr 1fr;gap:.8rem}\
.cols h6,.exchange h5{margin:.4rem 0 .2rem}
details.failure{border:1px solid #f0c0c0;border-radius:6px;padding:.5rem .8rem;margin:.8rem 0}\
details>summary{cursor:pointer}
.muted{color:#777;font-size:.85rem}dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem}\
dl.meta dt{color:#666}dl.meta dd{margin:0}
`;

/** Who was tested, how, when, by what. */
function meta(report: RunReport): string {
  const server = report.server;
  const capabilities = server.capabilities.length ? server.capabilities.map(esc).join(', ') : '<i>none</i>';
  const expectations = report.mode.expectationsFile
    ? `; expectations: <code>${esc(report.mode.expectationsFile)}</code>`
    : '';
  const mode = report.mode.readOnly ? 'read-only (checks that write were skipped)' : 'full';
  const interrupted = report.interrupted ? ' — <b>interrupted</b>' : '';
  return `<dl class="meta">
<dt>Target</dt><dd><code>${esc(server.url)}</code></dd>
<dt>Server</dt><dd>${esc(server.project_name ?? '?')} ${esc(server.project_version ?? '')} \
— HTTP API ${esc(server.http_api_version ?? '?')}</dd>
<dt>Capabilities</dt><dd>${capabilities}</dd>
<dt>Mode</dt><dd>${mode}; identities: ${esc(report.mode.identities)}${expectations}</dd>
<dt>Run</dt><dd>${esc(report.startedAt)}, ${(report.durationMs / 1000).toFixed(1)} s${interrupted}</dd>
<dt>Tool</dt><dd>${esc(report.tool.name)} ${esc(report.tool.version)}</dd>
</dl>`;
}

function verdict(s: RunReport['summary']): string {
  const ok = s.unexpected === 0;
  const headline = ok
    ? 'No unexpected failure.'
    : `${s.unexpected} unexpected failure${s.unexpected === 1 ? '' : 's'}.`;
  return `<div class="verdict ${ok ? 'ok' : 'ko'}">${headline}
 ${s.passed} passed, ${s.failed} failed, ${s['expected-failure']} expected deviations, \
${s['unexpected-pass']} unexpectedly passed, ${s.skipped} skipped (${s.total} checks).</div>`;
}

function runErrors(errors: string[]): string {
  if (!errors.length) return '';
  return `<h2>Run errors</h2>${errors.map((e) => `<pre class="message">${esc(e)}</pre>`).join('\n')}`;
}

const FAILURES_INTRO =
  "<p>Each failure shows the check (with the protocol section it tests), the assertion's expected and actual " +
  'values, and the last HTTP exchanges of the test: the request sent and the actual response. If a deviation is ' +
  'deliberate, list the test id in an expectations file with the reason.</p>';

function failures(tests: TestOutcome[]): string {
  return tests.length ? `${FAILURES_INTRO}${tests.map(failure).join('\n')}` : '<p class="muted">None.</p>';
}

function expectedDeviations(tests: TestOutcome[]): string {
  if (!tests.length) return '<p class="muted">None.</p>';
  const rows = tests.map(
    (t) => `<tr><td>${badge(t)}</td><td>${esc(t.id)}<div class="muted">${esc(t.reason ?? '')}</div></td></tr>`,
  );
  return `<table class="tests"><tbody>${rows.join('\n')}</tbody></table>`;
}

export function toHtml(report: RunReport): string {
  const s = report.summary;
  const failed = report.tests.filter((t) => t.outcome === 'failed');
  const expected = report.tests.filter((t) => t.outcome === 'expected-failure' || t.outcome === 'unexpected-pass');
  const leftovers = report.leftoverBucketsDeleted
    ? `<p>Final cleanup deleted ${report.leftoverBucketsDeleted} bucket(s) left behind.</p>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Conformance report — ${esc(report.server.url)}</title><style>${CSS}</style></head><body>
<h1>Kinto protocol conformance report</h1>
${meta(report)}
${verdict(s)}
<h2>Sections</h2>
${sectionsTable(report)}
${runErrors(report.runErrors)}
<h2>Failures (${failed.length})</h2>
${failures(failed)}
<h2>Expected deviations (${expected.length})</h2>
${expectedDeviations(expected)}
<h2>Skipped, by reason (${s.skipped})</h2>
${skipsByReason(report.tests)}
${leftovers}
<h2>All checks</h2>
${allTests(report)}
</body></html>
`;
}
