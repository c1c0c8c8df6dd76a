/**
 * Library entry of the conformance runner: reads `GET /`, sets up identities, runs the suites
 * with vitest (the same files Quire's own tests run), deletes whatever is left, and returns the
 * run report. The CLI (cli.ts) is a thin layer over `runConformance`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { createVitest, type Vitest } from 'vitest/node';
import { normaliseBaseUrl } from './harness/config.js';
import { packageRoot } from './package-root.js';
import { loadExpectations, resolveExpectations, type Expectations } from './report/expectations.js';
import { toHtml } from './report/html.js';
import { toJson } from './report/json.js';
import { toJUnit } from './report/junit.js';
import { summarise, type RunReport } from './report/model.js';
import { ConformanceReporter } from './report/reporter.js';
import { setSuiteEnv } from './suite-env.js';
import { type Credentials, cleanupJournal, probeAccountSignUp, readServer } from './target.js';

export type ReportFormat = 'json' | 'junit' | 'html';
export const REPORT_FORMATS: ReportFormat[] = ['json', 'junit', 'html'];
const REPORT_FILES: Record<ReportFormat, string> = {
  json: 'conformance-report.json',
  junit: 'conformance-report.xml',
  html: 'conformance-report.html',
};

export interface RunOptions {
  /** Base URL, with `/v1` (a bare origin gets `/v1` appended). */
  baseUrl: string;
  /** Credentials of existing users (for deployments without `basicauth`). */
  users?: Credentials[];
  /**
   * Create throwaway accounts through the accounts plugin (capability `accounts`, anonymous
   * sign-up): each check's identities are new accounts, created on first use, deleted after
   * their file and at the end of the run.
   */
  createAccounts?: boolean;
  /**
   * An administrator account (`id:password`, listed in `account_write_principals`): runs the
   * accounts administration checks.
   */
  accountsAdmin?: Credentials;
  /**
   * An identity granted `read` on every bucket by the settings (`bucket_read_principals`): runs
   * the "globally granted principal" checks.
   */
  bucketReader?: Credentials;
  /** Only the checks that write nothing. */
  readOnly?: boolean;
  /**
   * The target is a reader: writes go to this URL (a writer of the same deployment), reads to
   * the target, each write waited for on the target (harness/replica.ts).
   */
  writerUrl?: string;
  /** How long a write is waited for on the target (default 10 s). */
  replicaWaitSeconds?: number;
  /** How long a reader's permissions and groups may lag a write it shows (ms, default 0). */
  replicaSettleMs?: number;
  /**
   * Expectations (known deviations): a parsed object, the path of a file, or the name of a file
   * shipped in the package's `expectations/` folder (`kinto-26.3`).
   */
  expectations?: Expectations | string;
  /**
   * Report files to write, into `outputDir`: by default the current directory, or, when that
   * is inside this package (a package script), the directory the script was started from.
   */
  reports?: ReportFormat[];
  outputDir?: string;
  /** Suite name filters (e.g. `records`, `batch`): runs only the matching files. */
  suites?: string[];
  /** The deployment's body limit in bytes, to check its 413 answer (not advertised by `GET /`). */
  maxBodyBytes?: number;
  /** The deployment's `Backoff` seconds when it sends them on every response (§12.1). */
  backoffSeconds?: number;
  /** Run the destructive flush check (§13.5): wipes the whole deployment. */
  allowFlush?: boolean;
  /** The quota limits of one bucket (JSON, suites/quotas.test.ts), to check the 507 answers (§13.6). */
  quotas?: string;
  /** Where progress goes (default: stdout). */
  out?: Writable;
  /** Called with a function that interrupts the run (cleanup and reports still happen). */
  onInterruptible?: (interrupt: () => void) => void;
}

export interface RunResult {
  report: RunReport;
  /** Paths of the report files written. */
  files: string[];
  /** 0: no unexpected failure; 1: unexpected failures; 130: interrupted. */
  exitCode: number;
}

const PACKAGE_ROOT = packageRoot();

function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * Where relative paths given by the user start: the current directory, except when it is this
 * package's own folder (`pnpm --filter @quire/conformance conformance …` runs there): then the
 * directory pnpm or npm was started from (INIT_CWD). Nothing a run writes lands in the package.
 */
export function invocationDir(cwd = process.cwd(), initCwd = process.env.INIT_CWD): string {
  if (!isInside(cwd, PACKAGE_ROOT)) return cwd;
  if (initCwd && !isInside(resolve(initCwd), PACKAGE_ROOT)) return resolve(initCwd);
  return cwd;
}

/**
 * The report directory: as given (relative to `invocationDir()`), else `invocationDir()`; by
 * default never this package's folder (then a folder in the system's temporary directory).
 */
export function reportDir(outputDir?: string, cwd = process.cwd(), initCwd = process.env.INIT_CWD): string {
  const from = invocationDir(cwd, initCwd);
  if (outputDir !== undefined) return resolve(from, outputDir);
  return isInside(from, PACKAGE_ROOT) ? join(tmpdir(), 'quire-conformance-reports') : from;
}

function toolVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** Who the checks act as: the given users, throwaway accounts, or random Basic Auth users. */
async function chooseIdentities(
  base: string,
  capabilities: string[],
  options: RunOptions,
): Promise<RunReport['mode']['identities']> {
  if (options.users?.length) return 'given';
  if (options.createAccounts) {
    if (!capabilities.includes('accounts'))
      throw new Error('--create-accounts: the deployment has no "accounts" capability');
    if (options.readOnly) throw new Error('--create-accounts writes; it cannot be combined with --read-only');
    await probeAccountSignUp(base);
    return 'created-accounts';
  }
  if (!capabilities.includes('basicauth')) {
    const orAccounts = capabilities.includes('accounts') ? ', or --create-accounts' : '';
    throw new Error(
      'the deployment offers no "basicauth" capability, so the suite needs identities: ' +
        `give --user name:password (twice or more)${orAccounts}`,
    );
  }
  return 'basicauth';
}

/** Writes the report in each format asked for; answers the files' paths. */
function writeReports(report: RunReport, formats: ReportFormat[], outputDir: string | undefined): string[] {
  const files: string[] = [];
  const dir = reportDir(outputDir);
  if (formats.length) mkdirSync(dir, { recursive: true });
  for (const format of formats) {
    const path = join(dir, REPORT_FILES[format]);
    writeFileSync(path, format === 'json' ? toJson(report) : format === 'junit' ? toJUnit(report) : toHtml(report));
    files.push(path);
  }
  return files;
}

/** How the run's identities are described in its log. */
const IDENTITIES: Record<RunReport['mode']['identities'], (given: number) => string> = {
  basicauth: () => 'random Basic Auth users',
  given: (given) => `${given} given user(s)`,
  'created-accounts': () => 'throwaway accounts, created as the checks use them',
};

/** vitest over the suites, reporting to `reporter`; the caller's signal handlers stay in charge. */
async function createSuiteRunner(
  reporter: ConformanceReporter,
  workDir: string,
  out: Writable,
  fileParallelism: boolean,
): Promise<Vitest> {
  const signalListeners = {
    SIGINT: new Set(process.listeners('SIGINT')),
    SIGTERM: new Set(process.listeners('SIGTERM')),
  };
  const vitest = await createVitest(
    'test',
    {
      config: false,
      root: PACKAGE_ROOT,
      include: ['src/suites/**/*.test.ts'],
      reporters: [reporter],
      watch: false,
      // Nothing is written into the package (installed, it may be read-only): no results cache.
      cache: false,
      testTimeout: 20_000,
      hookTimeout: 30_000,
      // Given users are shared by every file: then the files run one after another.
      fileParallelism,
      passWithNoTests: false,
    },
    { logLevel: 'error', cacheDir: join(workDir, 'vite-cache') },
    { stdout: out },
  );
  // vitest's logger exits the process on SIGINT/SIGTERM; the caller's handler must win so
  // that the cleanup runs.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    for (const listener of process.listeners(signal))
      if (!signalListeners[signal].has(listener)) process.removeListener(signal, listener);
  }
  return vitest;
}

/** The run's report from what the reporter collected. */
function buildReport(
  reporter: ConformanceReporter,
  run: Pick<RunReport, 'server' | 'mode' | 'leftoverBucketsDeleted' | 'interrupted'> & { startedAt: Date },
): RunReport {
  const tests = reporter.tests.sort((a, b) => a.id.localeCompare(b.id));
  const runErrors = reporter.runErrors;
  if (tests.length === 0 && !run.interrupted) runErrors.push('no check ran (do the suite filters match a suite?)');
  return {
    tool: { name: '@quire/conformance', version: toolVersion() },
    server: run.server,
    startedAt: run.startedAt.toISOString(),
    durationMs: Date.now() - run.startedAt.getTime(),
    mode: run.mode,
    summary: summarise(tests, runErrors),
    sections: reporter.sections.sort((a, b) => a.file.localeCompare(b.file)),
    tests,
    runErrors,
    leftoverBucketsDeleted: run.leftoverBucketsDeleted,
    interrupted: run.interrupted,
  };
}

export async function runConformance(options: RunOptions): Promise<RunResult> {
  const out = options.out ?? process.stdout;
  const base = normaliseBaseUrl(options.baseUrl);
  const startedAt = new Date();
  const expectations =
    typeof options.expectations === 'string'
      ? loadExpectations(resolveExpectations(options.expectations, invocationDir()))
      : options.expectations;

  if (options.allowFlush && options.readOnly)
    throw new Error('--allow-flush wipes the deployment; it cannot be combined with --read-only');
  if (options.writerUrl && options.readOnly)
    throw new Error('--writer sends the writes somewhere; it cannot be combined with --read-only');
  const writer = options.writerUrl ? normaliseBaseUrl(options.writerUrl) : undefined;
  const server = await readServer(base);
  const { root: _root, ...serverSummary } = server;
  out.write(
    `Target ${base}: ${server.project_name ?? '?'} ${server.project_version ?? ''}, ` +
      `HTTP API ${server.http_api_version ?? '?'}\n`,
  );
  out.write(`Capabilities: ${server.capabilities.join(', ') || '(none)'}\n`);
  if (writer) out.write(`Writes go to ${writer}, and are waited for on the target\n`);

  const users: Credentials[] = options.users ?? [];
  const identities = await chooseIdentities(writer ?? base, server.capabilities, options);
  out.write(`Identities: ${IDENTITIES[identities](users.length)}${options.readOnly ? '; read-only mode' : ''}\n`);

  const workDir = mkdtempSync(join(tmpdir(), 'quire-conformance-'));
  const journal = join(workDir, 'created-buckets.jsonl');
  const restoreEnv = setSuiteEnv({
    ...options,
    base,
    journal,
    users,
    writerUrl: writer,
    replicaWaitSeconds: options.replicaWaitSeconds,
    replicaSettleMs: options.replicaSettleMs,
    createAccounts: identities === 'created-accounts',
  });

  const reporter = new ConformanceReporter(out, expectations);
  let vitest: Vitest | undefined;
  let interrupted = false;
  options.onInterruptible?.(() => {
    if (interrupted) return;
    interrupted = true;
    out.write('\nInterrupted: stopping the run, then deleting what it created…\n');
    void vitest?.cancelCurrentRun('keyboard-input');
  });
  let leftovers = 0;
  try {
    vitest = await createSuiteRunner(reporter, workDir, out, identities !== 'given');
    if (!interrupted) await vitest.start(options.suites ?? []);
  } catch (error) {
    reporter.runErrors.push(`the run failed: ${(error as Error).message}`);
  } finally {
    await vitest?.close().catch(() => undefined);
    leftovers = await cleanupJournal(writer ?? base, journal);
    rmSync(workDir, { recursive: true, force: true });
    restoreEnv();
  }
  if (leftovers) out.write(`Final cleanup: deleted ${leftovers} more bucket(s) created by the run.\n`);

  const report = buildReport(reporter, {
    server: serverSummary,
    startedAt,
    mode: {
      readOnly: Boolean(options.readOnly),
      identities,
      ...(writer ? { writer } : {}),
      ...(expectations ? { expectationsFile: expectations.file } : {}),
    },
    leftoverBucketsDeleted: leftovers,
    interrupted,
  });
  const files = writeReports(report, options.reports ?? [], options.outputDir);
  const exitCode = interrupted ? 130 : report.summary.unexpected > 0 ? 1 : 0;
  return { report, files, exitCode };
}
