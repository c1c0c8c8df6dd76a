#!/usr/bin/env node
/**
 * quire-conformance <base-url> [suite…] [options]: runs the conformance suite against a
 * deployment and exits non-zero on any unexpected failure. See README.md.
 */
import { parseArgs } from 'node:util';
import { shippedExpectations } from './report/expectations.js';
import type { RunReport } from './report/model.js';
import { toTable } from './report/table.js';
import { REPORT_FORMATS, runConformance, type ReportFormat } from './run.js';
import type { Credentials } from './target.js';

const USAGE = `Usage: quire-conformance <base-url> [suite…] [options]

Runs the Kinto protocol (HTTP API 1.22) conformance suite against a deployment.
<base-url> is the API root, e.g. https://kinto.example.com/v1. Suite names (records, batch…)
restrict the run to those files.

Options:
  --user name:password     Credentials of an existing user (repeat: two or more users are
                           needed for the permission checks). Not needed when the deployment
                           offers Basic Auth identities (capability "basicauth"). A check that
                           needs more identities than given is skipped, saying so.
                           Also: QUIRE_CONFORMANCE_USER_1, QUIRE_CONFORMANCE_USER_2, … (name:password).
  --create-accounts        Identities are throwaway accounts (capability "accounts", anonymous
                           sign-up), created as the checks use them and deleted at the end.
  --accounts-admin id:password
                           An account listed in account_write_principals: runs the accounts
                           administration checks (also QUIRE_CONFORMANCE_ACCOUNTS_ADMIN).
  --bucket-reader name:password
                           An identity granted read on every bucket by the settings
                           (bucket_read_principals): runs the "globally granted principal"
                           checks (also QUIRE_CONFORMANCE_BUCKET_READER).
  --read-only              Run only the checks that write nothing (creates no bucket).
  --writer <url>           The target is a reader (e.g. a readonly process on a replica): send
                           the writes to this writer of the same deployment instead, and wait
                           for each to show on the target before reading.
  --replica-wait <seconds> How long a write may take to show on the target (default 10).
  --replica-settle <ms>    How long the target's permissions and groups may lag a write it
                           shows (a reader's cache; Quire: storage_poll_cache_max_staleness_ms,
                           200 on a standby): waited after such a write (default 0).
  --expectations <name|file>
                           Known deviations of the target: a JSON file, or the name of one
                           shipped with the suite (${shippedExpectations().join(', ') || 'none'}).
  --report <formats>       Write reports: json, junit, html (comma-separated, or repeat).
  --output <dir>           Directory of the report files (default: the current directory).
  --max-body-bytes <n>     The deployment's request body limit, to check its 413 answer.
  --backoff <seconds>      The deployment sends Backoff: <seconds> on every response (its backoff
                           setting, without a percentage): check that it does.
  --quotas <json>          The quota limits of one bucket of the deployment (capability "quotas"),
                           which GET / does not tell, to check its 507 answers, e.g.
                           '{"bucket":"q","bucket_max_items":4,"collection_max_items":2}' (also
                           QUIRE_CONFORMANCE_QUOTAS; see the README). The bucket is deleted and created.
  --allow-flush            Run the flush check (capability "flush_endpoint"): POST /__flush__
                           DELETES EVERYTHING on the deployment. Test servers only.
  -h, --help               This help.

Exit status: 0 when nothing failed unexpectedly, 1 on unexpected failures, 2 on a usage or
connection error, 130 when interrupted (what the run created is deleted first).`;

function fail(message: string): never {
  process.stderr.write(`quire-conformance: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

function parseCredentials(value: string, where: string): Credentials {
  const colon = value.indexOf(':');
  if (colon <= 0) fail(`${where}: expected name:password`);
  return { name: value.slice(0, colon), password: value.slice(colon + 1) };
}

function credentialsFromEnv(): Credentials[] {
  const out: Credentials[] = [];
  for (let i = 1; process.env[`QUIRE_CONFORMANCE_USER_${i}`]; i++) {
    out.push(parseCredentials(process.env[`QUIRE_CONFORMANCE_USER_${i}`] as string, `QUIRE_CONFORMANCE_USER_${i}`));
  }
  return out;
}

/** The command line, parsed; a usage error exits with status 2. */
function parseCommandLine() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        user: { type: 'string', multiple: true },
        'create-accounts': { type: 'boolean' },
        'accounts-admin': { type: 'string' },
        'bucket-reader': { type: 'string' },
        'read-only': { type: 'boolean' },
        writer: { type: 'string' },
        'replica-wait': { type: 'string' },
        'replica-settle': { type: 'string' },
        expectations: { type: 'string' },
        report: { type: 'string', multiple: true },
        output: { type: 'string' },
        'max-body-bytes': { type: 'string' },
        backoff: { type: 'string' },
        'allow-flush': { type: 'boolean' },
        quotas: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    return fail((error as Error).message);
  }
}

/** The numeric and JSON options, checked: a bad value fails before any request. */
function parseLimits(values: ReturnType<typeof parseCommandLine>['values']) {
  let maxBodyBytes: number | undefined;
  if (values['max-body-bytes'] !== undefined) {
    maxBodyBytes = Number(values['max-body-bytes']);
    if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes <= 0) fail('--max-body-bytes must be a positive integer');
  }
  const quotas = values.quotas ?? process.env.QUIRE_CONFORMANCE_QUOTAS;
  if (quotas !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(quotas);
    } catch {
      fail('--quotas must be a JSON object');
    }
    if (typeof (parsed as { bucket?: unknown } | null)?.bucket !== 'string')
      fail('--quotas needs "bucket", the id of the bucket whose limits it gives');
  }
  let backoffSeconds: number | undefined;
  if (values.backoff !== undefined) {
    backoffSeconds = Number(values.backoff);
    if (!Number.isSafeInteger(backoffSeconds) || backoffSeconds < 0)
      fail('--backoff must be a whole number of seconds');
  }
  return { maxBodyBytes, quotas, backoffSeconds };
}

/** The options of a reader as target (`--writer`), checked. */
function parseReplicaOptions(values: ReturnType<typeof parseCommandLine>['values']) {
  const number = (name: 'replica-wait' | 'replica-settle') => {
    const value = values[name];
    if (value === undefined) return undefined;
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < 0) fail(`--${name} must be a non-negative number`);
    return parsed;
  };
  const replicaWaitSeconds = number('replica-wait');
  const replicaSettleMs = number('replica-settle');
  return {
    ...(values.writer ? { writerUrl: values.writer } : {}),
    ...(replicaWaitSeconds !== undefined ? { replicaWaitSeconds } : {}),
    ...(replicaSettleMs !== undefined ? { replicaSettleMs } : {}),
  };
}

/** The console's end of a run: the table, run errors, what the expectations listed, the verdict. */
function printSummary(report: RunReport, files: string[]): void {
  const write = (text: string) => process.stdout.write(text);
  write(`\n${toTable(report)}\n`);
  for (const e of report.runErrors) write(`Run error: ${e.split('\n')[0]}\n`);
  const listed = report.tests.filter((t) => t.outcome === 'expected-failure' || t.outcome === 'unexpected-pass');
  if (listed.length) {
    write(`\nListed in ${report.mode.expectationsFile ?? 'the expectations'}:\n`);
    for (const t of listed)
      write(`  ${t.outcome === 'expected-failure' ? 'expected deviation ' : 'UNEXPECTEDLY PASSED'}  ${t.id}\n`);
  }
  const s = report.summary;
  const verdict = report.interrupted ? 'INTERRUPTED' : s.unexpected === 0 ? 'OK' : 'FAILED';
  const duration = (report.durationMs / 1000).toFixed(1);
  write(
    `${verdict}: ${s.passed} passed, ${s.failed} failed, ${s['expected-failure']} expected deviations, ` +
      `${s['unexpected-pass']} unexpectedly passed, ${s.skipped} skipped (${duration} s)\n`,
  );
  for (const f of files) write(`Report: ${f}\n`);
}

async function main(): Promise<number> {
  const { values, positionals } = parseCommandLine();
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [baseUrl, ...suites] = positionals;
  if (!baseUrl) fail('missing <base-url>');
  const reports = (values.report ?? [])
    .flatMap((r) => r.split(','))
    .map((r) => r.trim())
    .filter(Boolean);
  for (const r of reports)
    if (!REPORT_FORMATS.includes(r as ReportFormat))
      fail(`unknown report format ${JSON.stringify(r)} (json, junit, html)`);
  const users = [...(values.user ?? []).map((u) => parseCredentials(u, '--user')), ...credentialsFromEnv()];
  const accountsAdmin =
    values['accounts-admin'] !== undefined ? parseCredentials(values['accounts-admin'], '--accounts-admin') : undefined;
  const bucketReader =
    values['bucket-reader'] !== undefined ? parseCredentials(values['bucket-reader'], '--bucket-reader') : undefined;
  const { maxBodyBytes, quotas, backoffSeconds } = parseLimits(values);

  let signals = 0;
  let interrupt: (() => void) | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    // A second signal while the cleanup runs: the user insists.
    if (signals > 1) process.exit(signal === 'SIGINT' ? 130 : 143);
    interrupt?.();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    const { report, files, exitCode } = await runConformance({
      baseUrl,
      users,
      createAccounts: Boolean(values['create-accounts']),
      ...(accountsAdmin ? { accountsAdmin } : {}),
      ...(bucketReader ? { bucketReader } : {}),
      readOnly: Boolean(values['read-only']),
      ...parseReplicaOptions(values),
      ...(values.expectations ? { expectations: values.expectations } : {}),
      reports: reports as ReportFormat[],
      ...(values.output ? { outputDir: values.output } : {}),
      ...(suites.length ? { suites } : {}),
      ...(maxBodyBytes ? { maxBodyBytes } : {}),
      ...(backoffSeconds !== undefined ? { backoffSeconds } : {}),
      ...(quotas !== undefined ? { quotas } : {}),
      allowFlush: Boolean(values['allow-flush']),
      onInterruptible: (fn) => {
        interrupt = fn;
      },
    });
    printSummary(report, files);
    return exitCode;
  } catch (error) {
    process.stderr.write(`quire-conformance: ${(error as Error).message}\n`);
    return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`quire-conformance: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(2);
  },
);
