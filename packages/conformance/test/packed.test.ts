/**
 * The three packages as users get them. Each is packed by `pnpm pack` (its prepack builds it,
 * `files` and `exports` apply, `workspace:*` becomes a version), the tarballs are installed with
 * npm into an empty folder where nothing else of this repository is, and then used as the
 * READMEs say:
 * - `npx quire start` (@quire/server) answers `GET /v1/`;
 * - `npx quire-conformance <url> --expectations kinto-26.3` (@quire/conformance) against that
 *   server: exit 0, the reports in the current directory, every shipped expectation names a
 *   real check, nothing written into the installed package;
 * - `--create-accounts` against an accounts-only server (the demo's settings): the files that
 *   use many identities run, and no account is left behind;
 * - `import { createClient } from '@quire/client'` in Node (ESM and CommonJS) and in a browser
 *   bundle built with esbuild, which must not contain undici (a Node-only HTTP library).
 *
 * better-sqlite3 (a dependency of the server) installs its prebuilt binary or compiles itself;
 * no download can happen here, so when the workspace holds a build of the same version, it is
 * offered as that prebuilt binary (npm_config_better_sqlite3_local_prebuilds), else npm compiles.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../src/index.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGES = ['server', 'client', 'conformance'] as const;
const MINUTE = 60_000;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** An environment without this run's vitest, pnpm and Quire variables: what a user's shell has. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(VITEST|QUIRE_|npm_|PNPM_|INIT_CWD$|NODE_OPTIONS$|NODE_ENV$|TEST$)/i.test(k)) env[k] = v;
  }
  return { ...env, ...extra };
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeout: number): Promise<Result> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** pnpm as this test was started by it (`pnpm test`), else the one on the PATH. */
function pnpm(): [string, string[]] {
  const execpath = process.env.npm_execpath;
  if (execpath && /pnpm/i.test(execpath))
    return /\.(c?js|mjs)$/.test(execpath) ? [process.execPath, [execpath]] : [execpath, []];
  return ['pnpm', []];
}

/**
 * better-sqlite3's prebuilt binary, made from the workspace's own build when it exists: a
 * tarball named as prebuild-install looks for it. Returns the folder, or undefined.
 */
async function localPrebuild(dir: string): Promise<string | undefined> {
  try {
    const fromServer = createRequire(join(REPO, 'packages/server/package.json'));
    const pkgDir = join(fromServer.resolve('better-sqlite3/package.json'), '..');
    const version = (JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { version: string }).version;
    if (!existsSync(join(pkgDir, 'build/Release/better_sqlite3.node'))) return undefined;
    mkdirSync(dir, { recursive: true });
    const abi = `node-v${process.versions.modules}-${process.platform}-${process.arch}`;
    const name = `better-sqlite3-v${version}-${abi}.tar.gz`;
    const res = await run(
      'tar',
      ['czf', join(dir, name), '-C', pkgDir, 'build/Release/better_sqlite3.node'],
      dir,
      userEnv(),
      MINUTE,
    );
    return res.code === 0 ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** Every file below `dir` with its size and modification time, to see that a run changed nothing. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const s = statSync(path);
        out.set(relative(dir, path), `${s.size}:${s.mtimeMs}`);
      }
    }
  };
  walk(dir);
  return out;
}

interface Server {
  url: string;
  process: ChildProcess;
  output: () => string;
}

/** `npx quire start --config <file>` in the install folder; resolves with its URL once it listens. */
function startServer(app: string, settings: Record<string, unknown>, name: string): Promise<Server> {
  const config = join(app, `${name}.settings.json`);
  writeFileSync(
    config,
    JSON.stringify({ host: '127.0.0.1', port: 0, log_level: 'warn', data_dir: join(app, `${name}-data`), ...settings }),
  );
  // Its own process group: npx starts node, and both stop together.
  const child = spawn('npx', ['quire', 'start', '--config', config], {
    cwd: app,
    env: userEnv(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`quire start did not listen within 60 s:\n${output}`)), MINUTE);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /Quire is listening on (http:\/\/\S+?)\/v1\//.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ url: `${m[1]}/v1`, process: child, output: () => output });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`quire start exited (${code}):\n${output}`));
    });
  });
}

function stopServer(server: Server | undefined): void {
  if (server?.process.pid && server.process.exitCode === null) {
    try {
      process.kill(-server.process.pid, 'SIGTERM');
    } catch {
      // Already gone.
    }
  }
}

/** The part of esbuild's API used here (esbuild is not a direct dependency of this package). */
interface Esbuild {
  build(
    options: Record<string, unknown>,
  ): Promise<{ metafile: { inputs: Record<string, unknown> }; outputFiles: { text: string }[] }>;
}

function basic(name: string, password: string): string {
  return `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;
}

describe('the packed packages, installed with npm into an empty folder', () => {
  const work = mkdtempSync(join(tmpdir(), 'quire-packed-'));
  const tarballs = join(work, 'tarballs');
  const app = join(work, 'app');
  let installError: string | undefined;
  let basicServer: Server | undefined;
  let accountsServer: Server | undefined;

  beforeAll(async () => {
    mkdirSync(tarballs);
    mkdirSync(app);
    const [command, prefix] = pnpm();
    // One after the other: pack runs each package's prepack (its build).
    for (const name of PACKAGES) {
      const res = await run(
        command,
        [...prefix, 'pack', '--pack-destination', tarballs],
        join(REPO, 'packages', name),
        userEnv(),
        5 * MINUTE,
      );
      if (res.code !== 0)
        throw new Error(`pnpm pack of @quire/${name} failed (${res.code}):\n${res.stdout}\n${res.stderr}`);
    }
    const files = readdirSync(tarballs).filter((f) => f.endsWith('.tgz'));
    expect(files.sort()).toEqual(['quire-client-0.1.0.tgz', 'quire-conformance-0.1.0.tgz', 'quire-server-0.1.0.tgz']);

    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'packed-test', private: true, type: 'module' }));
    const prebuilds = await localPrebuild(join(work, 'prebuilds'));
    const res = await run(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', ...files.map((f) => join(tarballs, f))],
      app,
      userEnv(prebuilds ? { npm_config_better_sqlite3_local_prebuilds: prebuilds } : {}),
      12 * MINUTE,
    );
    if (res.code !== 0) installError = `npm install failed (${res.code}):\n${res.stdout}\n${res.stderr}`;
  }, 20 * MINUTE);

  afterAll(() => {
    stopServer(basicServer);
    stopServer(accountsServer);
    // The servers may still hold their data files for a moment: retry the removal.
    rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it('npm installs the three tarballs, with no workspace: version left', () => {
    expect(installError).toBeUndefined();
    for (const name of PACKAGES) {
      const manifest = readFileSync(join(app, 'node_modules/@quire', name, 'package.json'), 'utf8');
      expect(manifest, name).not.toContain('workspace:');
    }
  });

  it(
    'npx quire start (the packed server) answers GET /v1/',
    async () => {
      expect(installError).toBeUndefined();
      basicServer = await startServer(app, { experimental_collection_schema_validation: true }, 'basic');
      const res = await fetch(`${basicServer.url}/`);
      expect(res.status).toBe(200);
      const root = (await res.json()) as {
        project_name: string;
        http_api_version: string;
        capabilities: Record<string, unknown>;
      };
      expect(root.project_name).toBe('quire');
      expect(root.http_api_version).toBe('1.22');
      expect(Object.keys(root.capabilities)).toContain('basicauth');
    },
    2 * MINUTE,
  );

  it(
    'npx quire-conformance <url> --expectations kinto-26.3: exit 0, reports in the current directory, ' +
      'nothing written into the package',
    async () => {
      expect(basicServer, 'the packed server did not start').toBeDefined();
      const installed = join(app, 'node_modules/@quire/conformance');
      const before = snapshot(installed);
      // A folder of the user's project: npx finds the installed bin, the reports land here.
      const cwd = join(app, 'run-basic');
      mkdirSync(cwd);
      const res = await run(
        'npx',
        [
          'quire-conformance',
          (basicServer as Server).url,
          '--expectations',
          'kinto-26.3',
          '--report',
          'json,junit,html',
        ],
        cwd,
        userEnv(),
        8 * MINUTE,
      );
      expect(res.code, `${res.stdout}\n${res.stderr}`).toBe(0);
      expect(res.stdout).toMatch(/^OK: \d+ passed, 0 failed/m);
      expect(readdirSync(cwd).sort()).toEqual([
        'conformance-report.html',
        'conformance-report.json',
        'conformance-report.xml',
      ]);
      expect(snapshot(installed)).toEqual(before);

      const report = JSON.parse(readFileSync(join(cwd, 'conformance-report.json'), 'utf8')) as RunReport;
      expect(report.summary.failed).toBe(0);
      expect(report.summary.unexpected).toBe(0);
      expect(report.summary.passed).toBeGreaterThan(400);
      expect(report.mode.expectationsFile).toBe(join(installed, 'expectations/kinto-26.3.json'));

      // Quire passes what Kinto fails: every listed check ran and is "unexpectedly passed". And
      // each entry of each shipped file names exactly one check of the suite.
      const lib = (await import(
        pathToFileURL(join(installed, 'dist/index.js')).href
      )) as typeof import('../src/index.js');
      const ids: string[] = report.tests.map((t) => t.id);
      const kinto = lib.loadExpectations(lib.resolveExpectations('kinto-26.3'));
      // A known-flaky entry that passes is just passed.
      expect(report.tests.filter((t) => t.outcome === 'unexpected-pass').length).toBe(
        kinto.deviations.filter((d) => !d.flaky).length,
      );
      expect(lib.shippedExpectations()).toEqual([
        'kinto-26.3',
        'kinto-26.3-attachment',
        'kinto-26.3-common',
        'kinto-26.3-postgresql',
      ]);
      for (const name of lib.shippedExpectations()) {
        const expectations = lib.loadExpectations(lib.resolveExpectations(name));
        expect(expectations.deviations.length, name).toBeGreaterThan(0);
        for (const d of expectations.deviations) {
          expect(d.reason.length, `${name}: ${d.test}`).toBeGreaterThan(20);
          const matching = ids.filter((id) => lib.parseExpectations(JSON.stringify({ deviations: [d] })).match(id));
          expect(matching, `${name}: ${d.test}`).toHaveLength(1);
        }
      }
    },
    10 * MINUTE,
  );

  it(
    '--create-accounts against an accounts-only server (the demo settings): as many accounts as the checks use, ' +
      'none left',
    async () => {
      expect(installError).toBeUndefined();
      const demo = JSON.parse(readFileSync(join(REPO, 'apps/demo/quire.settings.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(demo.multiauth_policies).toEqual(['account']);
      // An administrator, only to list the accounts afterwards.
      const admin = { name: 'packed-admin', password: `pw-${randomBytes(8).toString('hex')}` };
      accountsServer = await startServer(
        app,
        { ...demo, account_write_principals: [`account:${admin.name}`] },
        'accounts',
      );
      const url = accountsServer.url;
      const signUp = await fetch(`${url}/accounts/${admin.name}`, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ data: { password: admin.password } }),
      });
      expect(signUp.status).toBe(201);

      const cwd = join(app, 'run-accounts');
      mkdirSync(cwd);
      const res = await run(
        'npx',
        [
          'quire-conformance',
          url,
          'default-bucket',
          'root',
          'permissions-basic',
          '--create-accounts',
          '--report',
          'json',
        ],
        cwd,
        userEnv(),
        8 * MINUTE,
      );
      expect(res.code, `${res.stdout}\n${res.stderr}`).toBe(0);
      const report = JSON.parse(readFileSync(join(cwd, 'conformance-report.json'), 'utf8')) as RunReport;
      expect(report.mode.identities).toBe('created-accounts');
      expect(report.summary.failed).toBe(0);
      // The personal-bucket checks each need a fresh identity: all run (history is off there).
      const personal = report.tests.filter((t) => t.file === 'default-bucket.test.ts');
      const notRun = personal.filter((t) => t.outcome !== 'passed');
      expect(notRun.map((t) => t.reason)).toEqual(['capability history not offered']);
      expect(personal.length).toBeGreaterThan(8);

      const accounts = await fetch(`${url}/accounts`, {
        headers: { Authorization: basic(admin.name, admin.password) },
      });
      expect(accounts.status).toBe(200);
      expect(((await accounts.json()) as { data: { id: string }[] }).data.map((a) => a.id)).toEqual([admin.name]);
    },
    10 * MINUTE,
  );

  it(
    "import { createClient } from '@quire/client' works in Node, as ESM and as CommonJS",
    async () => {
      expect(installError).toBeUndefined();
      const esm = await run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          "import { createClient } from '@quire/client'; console.log(typeof createClient);",
        ],
        app,
        userEnv(),
        MINUTE,
      );
      expect(esm.stdout.trim(), esm.stderr).toBe('function');
      const cjs = await run(
        process.execPath,
        ['-e', "console.log(typeof require('@quire/client').createClient)"],
        app,
        userEnv(),
        MINUTE,
      );
      expect(cjs.stdout.trim(), cjs.stderr).toBe('function');
    },
    2 * MINUTE,
  );

  it(
    'a browser bundle of @quire/client (esbuild) leaves undici and node: modules out',
    async () => {
      expect(installError).toBeUndefined();
      // esbuild as the repository has it (through tsup, the packages' build tool).
      const fromTsup = createRequire(createRequire(import.meta.url).resolve('tsup/package.json'));
      const esbuild = fromTsup('esbuild') as Esbuild;
      writeFileSync(
        join(app, 'entry.js'),
        "import { createClient } from '@quire/client';\nexport default createClient;\n",
      );
      const result = await esbuild.build({
        entryPoints: [join(app, 'entry.js')],
        absWorkingDir: app,
        bundle: true,
        platform: 'browser',
        format: 'esm',
        splitting: true,
        outdir: join(app, 'bundle'),
        write: false,
        metafile: true,
        logLevel: 'silent',
      });
      const inputs = Object.keys(result.metafile.inputs);
      expect(inputs).toContain('node_modules/@quire/client/dist/index.js');
      // The client's lazy `import('undici')` (Node only) resolves to an empty module: its
      // `browser` field maps undici to false.
      expect(inputs.filter((i) => /(^|\/)node_modules\/undici\//.test(i) && !i.startsWith('(disabled):'))).toEqual([]);
      expect(inputs.filter((i) => i.startsWith('node:'))).toEqual([]);
      const code = result.outputFiles.map((f) => f.text).join('\n');
      expect(code).not.toMatch(/from\s*["']node:|require\(["']node:/);
      expect(result.outputFiles.reduce((n, f) => n + f.text.length, 0)).toBeGreaterThan(10_000);
    },
    2 * MINUTE,
  );
});
