/**
 * The conformance CLI (`quire-conformance`, packages/conformance/src/cli.ts) run as operators
 * run it: a child process against a live server, here ours on the embedded store and on
 * PostgreSQL. Asserts zero unexpected failures, readable reports, that an expectations file
 * turns a deliberate failure green, that --read-only creates nothing, that the run leaves
 * no bucket behind, and that the checks of the operating modes (readonly, end of service,
 * Backoff, history auto-trim, flush) run and pass against servers in those modes.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { loadSettings, type Settings } from '../src/config.js';
import { createPostgresStorage } from '../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { dropSchema, PG_URL, testClient } from './helpers/postgres.js';

const SERVER_DIR = fileURLToPath(new URL('..', import.meta.url));
const CLI = fileURLToPath(new URL('../../conformance/src/cli.ts', import.meta.url));
const MAX_BODY_BYTES = 256 * 1024;
const FULL_RUN_MS = 300_000;

interface Target {
  url: string;
  storage: Storage;
  /** Closes the server (not its store, which the caller owns). */
  close(): Promise<void>;
}

async function startServer(storage: Storage, overrides: Partial<Settings> = {}): Promise<Target> {
  const settings = loadSettings({
    env: {},
    overrides: {
      userid_hmac_secret: 'conformance-cli-secret',
      log_level: 'silent',
      host: '127.0.0.1',
      port: 0,
      max_body_bytes: MAX_BODY_BYTES,
      ...overrides,
    },
  });
  const app = await buildServer({ settings, storage, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server did not bind a TCP port');
  return { url: `http://127.0.0.1:${address.port}/v1`, storage, close: () => app.close() };
}

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a child process (asynchronously: the server answers from this process). */
function runCli(args: string[]): Promise<CliResult> {
  // The child is a fresh vitest run: none of this worker's vitest state may leak into it.
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(VITEST|QUIRE_CONFORMANCE_|NODE_OPTIONS$|TEST$)/.test(k)) env[k] = v;
  }
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, ...args],
      { cwd: SERVER_DIR, env, maxBuffer: 64 * 1024 * 1024, timeout: FULL_RUN_MS - 10_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function countBuckets(storage: Storage): Promise<number> {
  return storage.read((session) => session.objects.count({ resourceName: 'bucket', parentId: '' }));
}

/** Minimal well-formedness check: balanced tags, quoted attributes, escaped text. */
function expectWellFormedXml(text: string): void {
  expect(text.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
  const body = text.replace(/^<\?xml[^>]*\?>/, '');
  const stack: string[] = [];
  const tag = /<(\/?)([A-Za-z_][\w:.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(body); m; m = tag.exec(body)) {
    const between = body.slice(last, m.index);
    expect(between, `raw markup before ${m[0]}`).not.toMatch(/[<>]/);
    expect(between.replace(/&(amp|lt|gt|quot|apos|#\d+);/g, ''), 'unescaped &').not.toContain('&');
    last = tag.lastIndex;
    if (m[1]) expect(stack.pop(), `closing ${m[2]}`).toBe(m[2]);
    else if (!m[4]) stack.push(m[2] as string);
  }
  expect(body.slice(last).trim()).toBe('');
  expect(stack).toEqual([]);
}

/** What these tests read of the JSON report (RunReport, packages/conformance/src/report/model.ts). */
interface JsonReport {
  summary: { total: number; passed: number; failed: number; 'expected-failure': number; unexpected: number };
  server: { capabilities: string[] };
  mode: { readOnly: boolean };
  sections: Array<{ file: string }>;
  tests: Array<{
    id: string;
    outcome: string;
    reason?: string;
    exchanges?: Array<{ request: { method: string }; response: { status: number } }>;
  }>;
}

function readJsonReport(dir: string): JsonReport {
  return JSON.parse(readFileSync(join(dir, 'conformance-report.json'), 'utf8'));
}

/** Opens a store for a block of runs, or says why it cannot (the block is then skipped). */
type OpenStore = () => Promise<{ storage: Storage; dispose?: () => Promise<void> } | string>;

function describeFullRun(backend: string, open: OpenStore) {
  describe(`quire-conformance against Quire on ${backend}`, () => {
    let target: Target | undefined;
    let dispose: (() => Promise<void>) | undefined;
    let skipReason: string | undefined;
    const out = mkdtempSync(join(tmpdir(), `quire-conformance-cli-${backend}-`));

    beforeAll(async () => {
      const opened = await open();
      if (typeof opened === 'string') {
        skipReason = opened;
        console.warn(`[conformance-cli:${backend}] SKIPPED: ${opened}`);
        return;
      }
      dispose = opened.dispose;
      target = await startServer(opened.storage);
    }, 60_000);

    afterAll(async () => {
      await target?.close();
      await target?.storage.close();
      await dispose?.();
      rmSync(out, { recursive: true, force: true });
    });

    it(
      'runs every applicable check with zero unexpected failures, writes the three reports and leaves no bucket',
      async (ctx) => {
        if (skipReason) return ctx.skip(skipReason);
        const t = target as Target;
        const res = await runCli([
          t.url,
          '--report',
          'json,junit,html',
          '--output',
          out,
          '--max-body-bytes',
          String(MAX_BODY_BYTES),
        ]);
        expect(res.code, `${res.stdout}\n${res.stderr}`).toBe(0);
        expect(res.stdout).toMatch(/^OK: \d+ passed, 0 failed/m);

        const report = readJsonReport(out);
        expect(report.summary.unexpected).toBe(0);
        expect(report.summary.failed).toBe(0);
        expect(report.summary.passed).toBeGreaterThan(300);
        expect(report.server.capabilities).toContain('basicauth');
        expect(report.sections.length).toBeGreaterThanOrEqual(17);
        // Sections that do not apply are skipped with their reason, never silently.
        for (const t of report.tests.filter((x) => x.outcome === 'skipped')) expect(t.reason, t.id).toBeTruthy();

        const junit = readFileSync(join(out, 'conformance-report.xml'), 'utf8');
        expectWellFormedXml(junit);
        expect(junit).toContain(`tests="${report.summary.total}"`);

        const html = readFileSync(join(out, 'conformance-report.html'), 'utf8');
        expect(html).toMatch(/^<!doctype html>/);
        expect(html).toContain('<table id="sections"');
        for (const s of report.sections) expect(html).toContain(s.file);
        expect(html).toContain('No unexpected failure.');

        expect(await countBuckets(t.storage)).toBe(0);
      },
      FULL_RUN_MS,
    );
  });
}

const openEmbedded: OpenStore = async () => ({ storage: await createSqliteStorage() });

/** A fresh schema, or why PostgreSQL cannot be used (a failure under QUIRE_TEST_REQUIRE_PG). */
const openPostgres: OpenStore = async () => {
  // Closed at once: a connection left idle for the run dies with any PostgreSQL restart.
  const probe = testClient({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await probe.connect();
  } catch (error) {
    if (process.env.QUIRE_TEST_REQUIRE_PG)
      throw new Error(`PostgreSQL required but unreachable at ${PG_URL}: ${(error as Error).message}`);
    return `PostgreSQL unreachable at ${PG_URL} (${(error as Error).message})`;
  } finally {
    await probe.end().catch(() => {});
  }
  const schema = `quire_cli_${randomBytes(6).toString('hex')}`;
  const storage = await createPostgresStorage({ url: PG_URL, schema, autoMigrate: true, poolSize: 10 });
  return { storage, dispose: () => dropSchema(schema) };
};

describeFullRun('the embedded store', openEmbedded);
describeFullRun('PostgreSQL', openPostgres);

/**
 * The checks that apply only to deployments in a given mode, each run against a server in that
 * mode (one store per backend, shared by the runs; the flush, which wipes it, comes last).
 */
function describeModeRuns(backend: string, open: OpenStore) {
  describe(`quire-conformance against Quire in its operating modes, on ${backend}`, () => {
    let storage: Storage | undefined;
    let dispose: (() => Promise<void>) | undefined;
    let skipReason: string | undefined;
    const out = mkdtempSync(join(tmpdir(), `quire-conformance-modes-${backend.replace(/\W+/g, '-')}-`));

    beforeAll(async () => {
      const opened = await open();
      if (typeof opened === 'string') {
        skipReason = opened;
        console.warn(`[conformance-cli modes:${backend}] SKIPPED: ${opened}`);
        return;
      }
      ({ storage, dispose } = opened);
    }, 60_000);

    afterAll(async () => {
      await storage?.close();
      await dispose?.();
      rmSync(out, { recursive: true, force: true });
    });

    /** Runs the CLI with `args` against a server started with `overrides`; returns the JSON report. */
    async function runAgainst(name: string, overrides: Partial<Settings>, args: string[]): Promise<JsonReport> {
      const target = await startServer(storage as Storage, overrides);
      try {
        const dir = join(out, name);
        const res = await runCli([target.url, ...args, '--report', 'json', '--output', dir]);
        expect(res.code, `${res.stdout}\n${res.stderr}`).toBe(0);
        const report = readJsonReport(dir);
        expect(report.summary.unexpected).toBe(0);
        return report;
      } finally {
        await target.close();
      }
    }

    const outcomes = (report: JsonReport, file: string): string[] =>
      report.tests.filter((t) => t.id.startsWith(`${file} >`)).map((t) => t.outcome);

    it(
      'readonly, end of service and Backoff: every operations check runs and passes',
      async (ctx) => {
        if (skipReason) return ctx.skip(skipReason);
        const modes = { readonly: true, eos: '2999-12-31', eos_message: 'Moving to a new home', backoff: 30 };
        const report = await runAgainst('modes', modes, [
          'operations',
          'root',
          'http',
          '--read-only',
          '--backoff',
          '30',
        ]);
        const operations = outcomes(report, 'operations.test.ts');
        expect(operations.length).toBeGreaterThanOrEqual(10);
        expect(
          operations.every((outcome) => outcome === 'passed'),
          operations.join(', '),
        ).toBe(true);
        // Nothing was written, the readonly probes included.
        expect(await countBuckets(storage as Storage)).toBe(0);
      },
      FULL_RUN_MS,
    );

    it(
      'history auto-trim: the history checks pass, the trim check included',
      async (ctx) => {
        if (skipReason) return ctx.skip(skipReason);
        const report = await runAgainst('trim', { history_enabled: true, history_auto_trim_max_count: 10 }, [
          'history',
        ]);
        const trim = report.tests.filter((t) => t.id.includes('history auto-trim'));
        expect(trim.map((t) => t.outcome)).toEqual(['passed']);
        expect(outcomes(report, 'history.test.ts').filter((outcome) => outcome !== 'passed')).toEqual([]);
      },
      FULL_RUN_MS,
    );

    it(
      '--allow-flush: the destructive flush check runs and passes',
      async (ctx) => {
        if (skipReason) return ctx.skip(skipReason);
        const report = await runAgainst('flush', { flush_endpoint_enabled: true }, ['flush', '--allow-flush']);
        const flush = outcomes(report, 'flush.test.ts');
        expect(flush.length).toBeGreaterThanOrEqual(3);
        expect(
          flush.every((outcome) => outcome === 'passed'),
          flush.join(', '),
        ).toBe(true);
      },
      FULL_RUN_MS,
    );
  });
}

describeModeRuns('the embedded store', openEmbedded);
describeModeRuns('PostgreSQL', openPostgres);

describe('quire-conformance options (embedded store)', () => {
  let target: Target;
  const out = mkdtempSync(join(tmpdir(), 'quire-conformance-cli-options-'));

  beforeAll(async () => {
    target = await startServer(await createSqliteStorage());
  }, 60_000);

  afterAll(async () => {
    await target?.close();
    await target?.storage.close();
    rmSync(out, { recursive: true, force: true });
  });

  // Claiming a body limit lower than the real one makes the 413 check fail on purpose.
  const deliberate = ['errors', '--max-body-bytes', '1024'];

  it(
    'fails (exit 1) on a deliberate deviation, showing request and response in the HTML report',
    async () => {
      const dir = join(out, 'deviation');
      const res = await runCli([target.url, ...deliberate, '--report', 'json,html', '--output', dir]);
      expect(res.code, res.stdout + res.stderr).toBe(1);
      const report = readJsonReport(dir);
      const failed = report.tests.filter((t) => t.outcome === 'failed');
      expect(failed.map((t) => t.id)).toEqual([
        'errors.test.ts > §1.1 error envelope per status > ' +
          '413 errno 113 for a body over the advertised limit (QUIRE_CONFORMANCE_MAX_BODY_BYTES)',
      ]);
      expect(failed[0]?.exchanges?.at(-1)?.request.method).toBe('POST');
      expect(failed[0]?.exchanges?.at(-1)?.response.status).toBe(201);
      const html = readFileSync(join(dir, 'conformance-report.html'), 'utf8');
      expect(html).toContain('1 unexpected failure.');
      expect(html).toContain('Actual response');
      expect(html).toContain('Expected');
      expect(html).not.toMatch(/Basic [A-Za-z0-9+/=]{20,}/); // credentials are redacted
    },
    FULL_RUN_MS,
  );

  it(
    'an expectations file turns the deliberate deviation into an expected one (exit 0)',
    async () => {
      const dir = join(out, 'expected');
      const file = join(out, 'expectations.jsonc');
      writeFileSync(
        file,
        `{
  // This deployment's body limit is larger than what the operator told the suite.
  "deviations": [
    {
      "test": "errors.test.ts > * > 413 errno 113 *",
      "reason": "the limit given on the command line is deliberately too low"
    },
    { "test": "/never matches anything/", "reason": "unused entries are harmless" }
  ]
}`,
      );
      const res = await runCli([
        target.url,
        ...deliberate,
        '--expectations',
        file,
        '--report',
        'json',
        '--output',
        dir,
      ]);
      expect(res.code, res.stdout + res.stderr).toBe(0);
      const report = readJsonReport(dir);
      expect(report.summary.failed).toBe(0);
      expect(report.summary['expected-failure']).toBe(1);
      const expected = report.tests.find((t) => t.outcome === 'expected-failure');
      expect(expected?.reason).toBe('the limit given on the command line is deliberately too low');
    },
    FULL_RUN_MS,
  );

  it(
    '--read-only runs the checks that write nothing and creates no bucket',
    async () => {
      const dir = join(out, 'read-only');
      expect(await countBuckets(target.storage)).toBe(0);
      const res = await runCli([target.url, '--read-only', '--report', 'json', '--output', dir]);
      expect(res.code, res.stdout + res.stderr).toBe(0);
      const report = readJsonReport(dir);
      expect(report.mode.readOnly).toBe(true);
      expect(report.summary.passed).toBeGreaterThan(20);
      expect(report.tests.filter((t) => t.reason === 'read-only mode: this check writes').length).toBeGreaterThan(100);
      expect(await countBuckets(target.storage)).toBe(0);
    },
    FULL_RUN_MS,
  );

  it('exits 2 with a clear message when the URL is not a Kinto-protocol server', async () => {
    const res = await runCli([`${target.url.replace(/\/v1$/, '')}/nothing/v1`]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/not the JSON root of a Kinto-protocol server/);
  }, 60_000);
});
