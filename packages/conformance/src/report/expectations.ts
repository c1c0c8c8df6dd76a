/**
 * Expectations file: the known, deliberate deviations of a target, so that a run against it
 * can be green. JSON, with `//` and `/* … *\/` comments allowed:
 *
 *   {
 *     "target": "our staging (Kinto 19)",
 *     "extends": "kinto-26.3-common",
 *     "deviations": [
 *       { "test": "batch.test.ts > §8.1 batch request validation > *", "reason": "limit raised on purpose" },
 *       { "test": "/If-Match .* deleted record/i", "reason": "answers 404, see ticket 123" }
 *     ]
 *   }
 *
 * `test` matches a test id (`<file> > <describe> > … > <test name>`, as printed in every
 * report): a glob where `*` stands for any text, or a regular expression between slashes
 * (searched anywhere in the id). A listed test that fails is an "expected deviation"; one that
 * passes is reported as "unexpectedly passed" so the file can be tidied, without failing the run.
 * An entry with `"flaky": true` is a known intermittent failure of the target (a race of its
 * own): failing, it is an expected deviation; passing, it is simply passed.
 * `extends` (a name or a path, relative to the file) adds the deviations of another file first.
 *
 * The package ships files for known servers in `expectations/` (see `shippedExpectations()`):
 * `--expectations kinto-26.3` names `expectations/kinto-26.3.json`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { packageRoot } from '../package-root.js';

export interface Deviation {
  test: string;
  reason: string;
  /** Fails only sometimes: passing is not "unexpected". */
  flaky?: boolean;
}

export interface Expectations {
  file: string;
  deviations: Deviation[];
  /** The first deviation whose pattern matches the test id. */
  match(id: string): Deviation | undefined;
}

/** Removes comments outside strings (JSONC). */
function stripJsonComments(text: string): string {
  let out = '';
  let i = 0;
  let inString = false;
  while (i < text.length) {
    const c = text[i] as string;
    if (inString) {
      out += c;
      if (c === '\\') {
        out += text[i + 1] ?? '';
        i += 2;
        continue;
      }
      if (c === '"') inString = false;
      i += 1;
    } else if (c === '"') {
      inString = true;
      out += c;
      i += 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i += 1;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

function compile(pattern: string): (id: string) => boolean {
  const regex = /^\/(.+)\/([a-z]*)$/s.exec(pattern);
  if (regex) {
    const re = new RegExp(regex[1] as string, regex[2]);
    return (id) => re.test(id);
  }
  const escaped = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  const glob = new RegExp(`^${escaped.join('.*')}$`, 's');
  return (id) => glob.test(id);
}

export function parseExpectations(text: string, file = '(inline)', seen: string[] = []): Expectations {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripJsonComments(text));
  } catch (error) {
    throw new Error(`expectations file ${file}: not valid JSON: ${(error as Error).message}`);
  }
  const list = (parsed as { deviations?: unknown })?.deviations;
  if (!Array.isArray(list)) throw new Error(`expectations file ${file}: needs a "deviations" list`);
  const own: Deviation[] = list.map((d: unknown, i: number) => {
    const { test, reason, flaky } = (d ?? {}) as { test?: unknown; reason?: unknown; flaky?: unknown };
    if (typeof test !== 'string' || test === '')
      throw new Error(`expectations file ${file}: deviations[${i}].test must be a non-empty string`);
    if (typeof reason !== 'string' || reason.trim() === '')
      throw new Error(`expectations file ${file}: deviations[${i}].reason must say why`);
    if (flaky !== undefined && typeof flaky !== 'boolean')
      throw new Error(`expectations file ${file}: deviations[${i}].flaky must be true or false`);
    return flaky ? { test, reason, flaky } : { test, reason };
  });
  const base = (parsed as { extends?: unknown }).extends;
  let inherited: Deviation[] = [];
  if (base !== undefined) {
    if (typeof base !== 'string' || base === '')
      throw new Error(`expectations file ${file}: "extends" must name a file`);
    const path = resolveExpectations(base, file === '(inline)' ? process.cwd() : dirname(file));
    if (seen.includes(path)) throw new Error(`expectations file ${file}: "extends" loops back to ${path}`);
    inherited = loadExpectations(path, [...seen, file]).deviations;
  }
  const deviations = [...inherited, ...own];
  const matchers = deviations.map((d) => ({ d, test: compile(d.test) }));
  return {
    file,
    deviations,
    match: (id) => matchers.find((m) => m.test(id))?.d,
  };
}

/** The `expectations/` folder of the package (next to `src/` and `dist/`). */
function shippedExpectationsDir(): string {
  return join(packageRoot(), 'expectations');
}

/** Names of the expectation files shipped with the package (`kinto-26.3`, …). */
export function shippedExpectations(): string[] {
  try {
    return readdirSync(shippedExpectationsDir())
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.slice(0, -'.json'.length))
      .sort();
  } catch {
    return [];
  }
}

/**
 * A path (absolute, or relative to `from`) when such a file exists, else the name of a shipped
 * file (`kinto-26.3` → `expectations/kinto-26.3.json`).
 */
export function resolveExpectations(nameOrPath: string, from = process.cwd()): string {
  const path = isAbsolute(nameOrPath) ? nameOrPath : resolve(from, nameOrPath);
  if (existsSync(path)) return path;
  if (/^[\w.-]+$/.test(nameOrPath)) {
    const shipped = join(shippedExpectationsDir(), nameOrPath.endsWith('.json') ? nameOrPath : `${nameOrPath}.json`);
    if (existsSync(shipped)) return shipped;
  }
  const names = shippedExpectations();
  const shipped = names.length
    ? `, and no shipped expectations named ${JSON.stringify(nameOrPath)} (shipped: ${names.join(', ')})`
    : '';
  throw new Error(`expectations: no file ${path}${shipped}`);
}

export function loadExpectations(path: string, seen: string[] = []): Expectations {
  return parseExpectations(readFileSync(path, 'utf8'), path, seen);
}
