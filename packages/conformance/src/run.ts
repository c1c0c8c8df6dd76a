/**
 * Library entry of the conformance runner: reads `GET /`, sets up identities, runs the suites
 * with vitest (the same files Quire's own tests run), deletes whatever is left, and returns the
 * run report. The CLI (cli.ts) is a thin layer over `runConformance`.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { createVitest, type Vitest } from 'vitest/node';
import type { RootBody } from './harness/bodies.js';
import { normaliseBaseUrl } from './harness/config.js';
import { packageRoot } from './package-root.js';
import { loadExpectations, resolveExpectations, type Expectations } from './report/expectations.js';
import { toHtml } from './report/html.js';
import { toJson } from './report/json.js';
import { toJUnit } from './report/junit.js';
import { summarise, type RunReport, type ServerSummary } from './report/model.js';
import { ConformanceReporter } from './report/reporter.js';

export type ReportFormat = 'json' | 'junit' | 'html';
export const REPORT_FORMATS: ReportFormat[] = ['json', 'junit', 'html'];
const REPORT_FILES: Record<ReportFormat, string> = {
  json: 'conformance-report.json',
  junit: 'conformance-report.xml',
  html: 'conformance-report.html',
};

export interface Credentials {
  name: string;
  password: string;
}

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
  /** An administrator account (`id:password`, listed in `account_write_principals`): runs the accounts administration checks. */
  accountsAdmin?: Credentials;
  /** An identity granted `read` on every bucket by the settings (`bucket_read_principals`): runs the "globally granted principal" checks. */
  bucketReader?: Credentials;
  /** Only the checks that write nothing. */
  readOnly?: boolean;
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

function basic(c: Credentials): string {
  return `Basic ${Buffer.from(`${c.name}:${c.password}`, 'utf8').toString('base64')}`;
}

interface FetchedJson {
  status: number;
  /** Parsed body; undefined when empty or not JSON. */
  json: unknown;
}

async function fetchJson(url: string, init: RequestInit = {}): Promise<FetchedJson> {
  const res = await fetch(url, { redirect: 'manual', ...init });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}

/** Reads `GET /`; throws a message an operator can act on when it is not a Kinto-protocol root. */
export async function readServer(base: string): Promise<ServerSummary & { root: Record<string, unknown> }> {
  let res: FetchedJson;
  try {
    res = await fetchJson(`${base}/`);
  } catch (error) {
    throw new Error(`cannot reach ${base}/: ${(error as Error).message}`);
  }
  if (res.status !== 200 || typeof res.json !== 'object' || res.json === null) {
    throw new Error(
      `GET ${base}/ answered ${res.status}, not the JSON root of a Kinto-protocol server (is the URL the API base, ending with /v1?)`,
    );
  }
  const root = res.json as Record<string, unknown>;
  const capabilities = Object.keys((root.capabilities as Record<string, unknown> | undefined) ?? {}).sort();
  return {
    root,
    url: base,
    ...(typeof root.project_name === 'string' ? { project_name: root.project_name } : {}),
    ...(typeof root.project_version === 'string' ? { project_version: root.project_version } : {}),
    ...(typeof root.http_api_version === 'string' ? { http_api_version: root.http_api_version } : {}),
    capabilities,
    ...(root.settings && typeof root.settings === 'object'
      ? { settings: root.settings as Record<string, unknown> }
      : {}),
  };
}

/**
 * `--create-accounts`: checks once, before the run, that an anonymous caller may sign up and
 * that the new account authenticates at once (the workers then create accounts as the checks
 * need them). The probe account is deleted right away.
 */
async function probeAccountSignUp(base: string): Promise<void> {
  const c = { name: `conf-${randomBytes(8).toString('hex')}`, password: `pw-${randomBytes(12).toString('hex')}` };
  const res = await fetchJson(`${base}/accounts/${c.name}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ data: { password: c.password } }),
  });
  if (res.status !== 201) {
    throw new Error(
      `--create-accounts: PUT /accounts/${c.name} answered ${res.status} ${JSON.stringify(res.json)} (does the deployment allow anonymous sign-up?)`,
    );
  }
  try {
    const who = await fetchJson(`${base}/`, { headers: { Authorization: basic(c) } });
    if (who.status !== 200) {
      throw new Error(
        `--create-accounts: GET / with a new account answered ${who.status} ${JSON.stringify(who.json)} (a login limit on this client address?)`,
      );
    }
    const user = (who.json as Partial<RootBody> | undefined)?.user?.id;
    if (user !== `account:${c.name}`) {
      throw new Error(
        `--create-accounts: a new account does not authenticate (GET / says user ${JSON.stringify(user ?? null)}); do accounts need validation first?`,
      );
    }
  } finally {
    await deleteAccounts(base, [c]);
  }
}

async function deleteAccounts(base: string, accounts: Credentials[]): Promise<void> {
  await Promise.all(
    accounts.map((c) =>
      fetch(`${base}/accounts/${encodeURIComponent(c.name)}`, {
        method: 'DELETE',
        headers: { Authorization: basic(c) },
      })
        .then((r) => r.text())
        .catch(() => undefined),
    ),
  );
}

/**
 * Deletes every bucket listed in the journal (written by the workers before each creation),
 * then every throwaway account it lists. Returns how many buckets still existed, i.e. were left
 * behind by an interrupted file.
 */
export async function cleanupJournal(base: string, journal: string): Promise<number> {
  if (!existsSync(journal)) return 0;
  const seen = new Set<string>();
  const buckets: { id: string; authorization: string | null }[] = [];
  const accounts: { account: string; authorization: string }[] = [];
  for (const line of readFileSync(journal, 'utf8').split('\n')) {
    if (!line.trim() || seen.has(line)) continue;
    seen.add(line);
    try {
      const entry = JSON.parse(line) as { id?: string; account?: string; authorization: string | null };
      if (typeof entry.account === 'string' && entry.authorization)
        accounts.push({ account: entry.account, authorization: entry.authorization });
      else if (typeof entry.id === 'string') buckets.push({ id: entry.id, authorization: entry.authorization });
    } catch {
      // A line cut by a killed worker: nothing to delete from it.
    }
  }
  let leftovers = 0;
  const drain = async <T>(queue: T[], remove: (item: T) => Promise<void>) => {
    const worker = async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await remove(item);
    };
    await Promise.all(Array.from({ length: 4 }, worker));
  };
  await drain(buckets, async (e) => {
    const headers: Record<string, string> = e.authorization ? { Authorization: e.authorization } : {};
    try {
      const res = await fetch(`${base}/buckets/${encodeURIComponent(e.id)}`, { method: 'DELETE', headers });
      await res.text();
      if (res.status === 200) leftovers += 1;
    } catch {
      // Unreachable server: nothing more we can do.
    }
  });
  // After the buckets: deleting those needed the accounts. Already deleted by their file: 401/404.
  await drain(accounts, async (e) => {
    try {
      await (
        await fetch(`${base}/accounts/${encodeURIComponent(e.account)}`, {
          method: 'DELETE',
          headers: { Authorization: e.authorization },
        })
      ).text();
    } catch {
      // Unreachable server: nothing more we can do.
    }
  });
  return leftovers;
}

const ENV_KEYS = [
  'QUIRE_CONFORMANCE_URL',
  'QUIRE_CONFORMANCE_USERS',
  'QUIRE_CONFORMANCE_USERS_DISPOSABLE',
  'QUIRE_CONFORMANCE_CREATE_ACCOUNTS',
  'QUIRE_CONFORMANCE_ACCOUNTS_ADMIN',
  'QUIRE_CONFORMANCE_BUCKET_READER',
  'QUIRE_CONFORMANCE_READ_ONLY',
  'QUIRE_CONFORMANCE_JOURNAL',
  'QUIRE_CONFORMANCE_MAX_BODY_BYTES',
  'QUIRE_CONFORMANCE_BACKOFF',
  'QUIRE_CONFORMANCE_ALLOW_FLUSH',
  'QUIRE_CONFORMANCE_QUOTAS',
] as const;

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
  const server = await readServer(base);
  const { root: _root, ...serverSummary } = server;
  out.write(
    `Target ${base}: ${server.project_name ?? '?'} ${server.project_version ?? ''}, HTTP API ${server.http_api_version ?? '?'}\n`,
  );
  out.write(`Capabilities: ${server.capabilities.join(', ') || '(none)'}\n`);

  let identities: RunReport['mode']['identities'] = 'basicauth';
  const users: Credentials[] = options.users ?? [];
  if (users.length > 0) {
    identities = 'given';
  } else if (options.createAccounts) {
    if (!server.capabilities.includes('accounts'))
      throw new Error('--create-accounts: the deployment has no "accounts" capability');
    if (options.readOnly) throw new Error('--create-accounts writes; it cannot be combined with --read-only');
    await probeAccountSignUp(base);
    identities = 'created-accounts';
  } else if (!server.capabilities.includes('basicauth')) {
    throw new Error(
      'the deployment offers no "basicauth" capability, so the suite needs identities: ' +
        `give --user name:password (twice or more)${server.capabilities.includes('accounts') ? ', or --create-accounts' : ''}`,
    );
  }
  out.write(
    `Identities: ${identities === 'basicauth' ? 'random Basic Auth users' : identities === 'given' ? `${users.length} given user(s)` : 'throwaway accounts, created as the checks use them'}${options.readOnly ? '; read-only mode' : ''}\n`,
  );

  const workDir = mkdtempSync(join(tmpdir(), 'quire-conformance-'));
  const journal = join(workDir, 'created-buckets.jsonl');
  const savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  process.env.QUIRE_CONFORMANCE_URL = base;
  process.env.QUIRE_CONFORMANCE_JOURNAL = journal;
  if (users.length) process.env.QUIRE_CONFORMANCE_USERS = JSON.stringify(users);
  else delete process.env.QUIRE_CONFORMANCE_USERS;
  delete process.env.QUIRE_CONFORMANCE_USERS_DISPOSABLE;
  if (identities === 'created-accounts') process.env.QUIRE_CONFORMANCE_CREATE_ACCOUNTS = '1';
  else delete process.env.QUIRE_CONFORMANCE_CREATE_ACCOUNTS;
  if (options.accountsAdmin)
    process.env.QUIRE_CONFORMANCE_ACCOUNTS_ADMIN = `${options.accountsAdmin.name}:${options.accountsAdmin.password}`;
  if (options.bucketReader)
    process.env.QUIRE_CONFORMANCE_BUCKET_READER = `${options.bucketReader.name}:${options.bucketReader.password}`;
  if (options.readOnly) process.env.QUIRE_CONFORMANCE_READ_ONLY = '1';
  else delete process.env.QUIRE_CONFORMANCE_READ_ONLY;
  if (options.maxBodyBytes) process.env.QUIRE_CONFORMANCE_MAX_BODY_BYTES = String(options.maxBodyBytes);
  if (options.backoffSeconds !== undefined) process.env.QUIRE_CONFORMANCE_BACKOFF = String(options.backoffSeconds);
  else delete process.env.QUIRE_CONFORMANCE_BACKOFF;
  if (options.quotas !== undefined) process.env.QUIRE_CONFORMANCE_QUOTAS = options.quotas;
  else delete process.env.QUIRE_CONFORMANCE_QUOTAS;
  // Only ever on request: a flush wipes the deployment.
  if (options.allowFlush) process.env.QUIRE_CONFORMANCE_ALLOW_FLUSH = '1';
  else delete process.env.QUIRE_CONFORMANCE_ALLOW_FLUSH;

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
  const signalListeners = {
    SIGINT: new Set(process.listeners('SIGINT')),
    SIGTERM: new Set(process.listeners('SIGTERM')),
  };
  try {
    vitest = await createVitest(
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
        // Given users are shared by every file: run the files one after another.
        fileParallelism: identities !== 'given',
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
    if (!interrupted) await vitest.start(options.suites ?? []);
  } catch (error) {
    reporter.runErrors.push(`the run failed: ${(error as Error).message}`);
  } finally {
    await vitest?.close().catch(() => undefined);
    leftovers = await cleanupJournal(base, journal);
    rmSync(workDir, { recursive: true, force: true });
    for (const [k, v] of Object.entries(savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  if (leftovers) out.write(`Final cleanup: deleted ${leftovers} more bucket(s) created by the run.\n`);

  const tests = reporter.tests.sort((a, b) => a.id.localeCompare(b.id));
  const report: RunReport = {
    tool: { name: '@quire/conformance', version: toolVersion() },
    server: serverSummary,
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    mode: {
      readOnly: Boolean(options.readOnly),
      identities,
      ...(expectations ? { expectationsFile: expectations.file } : {}),
    },
    summary: summarise(tests, reporter.runErrors),
    sections: reporter.sections.sort((a, b) => a.file.localeCompare(b.file)),
    tests,
    runErrors: reporter.runErrors,
    leftoverBucketsDeleted: leftovers,
    interrupted,
  };
  if (report.tests.length === 0 && !interrupted)
    report.runErrors.push('no check ran (do the suite filters match a suite?)');
  report.summary = summarise(tests, report.runErrors);

  const files: string[] = [];
  const dir = reportDir(options.outputDir);
  if (options.reports?.length) mkdirSync(dir, { recursive: true });
  for (const format of options.reports ?? []) {
    const path = join(dir, REPORT_FILES[format]);
    writeFileSync(path, format === 'json' ? toJson(report) : format === 'junit' ? toJUnit(report) : toHtml(report));
    files.push(path);
  }
  const exitCode = interrupted ? 130 : report.summary.unexpected > 0 ? 1 : 0;
  return { report, files, exitCode };
}
