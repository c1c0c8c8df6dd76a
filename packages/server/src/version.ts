/**
 * What `GET /__version__` shows, in the shape of Kinto's `version.json`:
 * `{name, version, source, commit}`. The version is the package's; the commit is, in order:
 * the `__QUIRE_COMMIT__` constant a build may define (e.g. tsup
 * `define: { __QUIRE_COMMIT__: JSON.stringify(sha) }`), the `QUIRE_COMMIT` environment variable,
 * the Git checkout the code runs from, else `unknown`.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

declare const __QUIRE_COMMIT__: string | undefined;

export interface VersionInfo {
  name: string;
  version: string;
  source: string;
  commit: string;
}

const SOURCE = 'https://github.com/quire-sync/quire';

interface PackageJson {
  name?: string;
  version?: string;
}

/** The package.json of @quire/server and its directory (works from src/ and from dist/). */
function readPackage(): { pkg: PackageJson; dir: string } | null {
  for (const candidate of ['../package.json', '../../package.json']) {
    try {
      const url = new URL(candidate, import.meta.url);
      const pkg = JSON.parse(readFileSync(url, 'utf8')) as PackageJson;
      if (pkg.name === '@quire/server' && pkg.version) return { pkg, dir: dirname(fileURLToPath(url)) };
    } catch {
      // try the next location
    }
  }
  return null;
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

/**
 * The Git directories of a checkout at `dir`: its `.git` directory, or for a linked worktree
 * (`git worktree add`), where its `.git` file points (HEAD there, branches in the common one).
 */
function gitDirectories(dir: string): { own: string; common: string } | null {
  const dotGit = join(dir, '.git');
  if (readText(join(dotGit, 'HEAD')) !== null) return { own: dotGit, common: dotGit };
  const pointer = /^gitdir: (.+)$/.exec(readText(dotGit) ?? '')?.[1];
  if (!pointer) return null;
  const own = resolve(dir, pointer);
  const common = readText(join(own, 'commondir'));
  return { own, common: common ? resolve(own, common) : own };
}

/** HEAD's commit of the Git checkout holding `dir`, read from `.git` without running git. */
export function gitCommit(dir: string): string | null {
  for (let current = dir; ; current = dirname(current)) {
    const git = gitDirectories(current);
    const head = git && readText(join(git.own, 'HEAD'));
    if (git && head) {
      const ref = /^ref: (refs\/[\w./-]+)$/.exec(head)?.[1];
      if (!ref) return /^[0-9a-f]{40}$/.test(head) ? head : null;
      const loose = readText(join(git.common, ref));
      if (loose && /^[0-9a-f]{40}$/.test(loose)) return loose;
      const packed = readText(join(git.common, 'packed-refs')) ?? '';
      for (const line of packed.split('\n')) {
        const [sha, name] = line.split(' ');
        if (name === ref && sha && /^[0-9a-f]{40}$/.test(sha)) return sha;
      }
      return null;
    }
    if (dirname(current) === current) return null;
  }
}

function readVersionInfo(): VersionInfo {
  const found = readPackage();
  const built = typeof __QUIRE_COMMIT__ === 'string' && __QUIRE_COMMIT__ ? __QUIRE_COMMIT__ : null;
  const commit = built ?? (process.env.QUIRE_COMMIT || null) ?? (found ? gitCommit(found.dir) : null) ?? 'unknown';
  return { name: found?.pkg.name ?? '@quire/server', version: found?.pkg.version ?? '0.0.0', source: SOURCE, commit };
}

export const VERSION_INFO: VersionInfo = readVersionInfo();

/** The package version (`project_version` of `GET /`). */
export const VERSION = VERSION_INFO.version;
