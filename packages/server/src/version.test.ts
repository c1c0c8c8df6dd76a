/** `GET /__version__`: Kinto's version.json shape, from the package and the Git checkout (§11.2). */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { useEmbeddedStore } from '../test/helpers/embedded-server.js';
import { gitCommit, VERSION, VERSION_INFO } from './version.js';

const { serverWith } = useEmbeddedStore();

function gitHead(): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: import.meta.dirname,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

describe('version', () => {
  it('comes from package.json, and the commit from the checkout the code runs from', async () => {
    const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
      name: string;
      version: string;
    };
    expect(VERSION).toBe(pkg.version);
    expect(VERSION_INFO).toMatchObject({
      name: pkg.name,
      version: pkg.version,
      source: expect.stringMatching(/^https:\/\//),
    });
    const head = gitHead();
    if (head === null) console.info('[version] git unavailable: commit not compared');
    // An explicit QUIRE_COMMIT (set by whoever runs the tests) takes precedence over the checkout.
    else expect(VERSION_INFO.commit).toBe(process.env.QUIRE_COMMIT || head);
  });

  it('prefers QUIRE_COMMIT to the checkout', async () => {
    vi.stubEnv('QUIRE_COMMIT', 'abc123');
    vi.resetModules();
    try {
      const fresh = await import('./version.js');
      expect(fresh.VERSION_INFO.commit).toBe('abc123');
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('reads the commit of a linked worktree (`git worktree add`), whose .git is a file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'quire-version-git-'));
    const git = (cwd: string, ...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
        cwd,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    try {
      const main = join(dir, 'main');
      execFileSync('git', ['init', '-q', main]);
      git(main, 'commit', '-q', '--allow-empty', '-m', 'first');
      git(main, 'worktree', 'add', '-q', '-b', 'other', join(dir, 'linked'));
      git(join(dir, 'linked'), 'commit', '-q', '--allow-empty', '-m', 'second');
      expect(gitCommit(join(dir, 'linked', 'some', 'folder'))).toBe(git(join(dir, 'linked'), 'rev-parse', 'HEAD'));
      expect(gitCommit(main)).toBe(git(main, 'rev-parse', 'HEAD'));
      git(main, 'pack-refs', '--all'); // branches moved into packed-refs
      expect(gitCommit(join(dir, 'linked'))).toBe(git(join(dir, 'linked'), 'rev-parse', 'HEAD'));
    } catch (error) {
      if (gitHead() === null) return console.info('[version] git unavailable: worktree case not checked');
      throw error;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('GET /__version__ answers {name, version, source, commit} and GET / the same version', async () => {
    const app = await serverWith({});
    const response = await app.inject({ url: '/v1/__version__' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(VERSION_INFO);
    expect((await app.inject({ url: '/v1/' })).json().project_version).toBe(VERSION);
    await app.close();
  });

  it('serves the file named by version_json_path, and 500 when it cannot be read (as Kinto)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'quire-version-'));
    try {
      const file = join(dir, 'version.json');
      await writeFile(file, JSON.stringify({ source: 'x', version: '9', commit: 'c', build: 'b' }));
      const app = await serverWith({ version_json_path: file });
      expect((await app.inject({ url: '/v1/__version__' })).json()).toEqual({
        source: 'x',
        version: '9',
        commit: 'c',
        build: 'b',
      });
      await app.close();
      const missing = await serverWith({ version_json_path: join(dir, 'missing.json') });
      expect((await missing.inject({ url: '/v1/__version__' })).statusCode).toBe(500);
      await missing.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
