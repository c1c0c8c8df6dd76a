/**
 * The CLI's file options without a server: expectations by name or path (with `extends`), and
 * where reports go (never into this package).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  loadExpectations,
  parseExpectations,
  resolveExpectations,
  shippedExpectations,
} from '../src/report/expectations.js';
import { invocationDir, reportDir } from '../src/run.js';

const PACKAGE = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');

describe('expectations files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'quire-expectations-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the shipped files by name; an unknown name lists them', () => {
    expect(shippedExpectations()).toEqual([
      'kinto-26.3',
      'kinto-26.3-attachment',
      'kinto-26.3-common',
      'kinto-26.3-postgresql',
    ]);
    expect(resolveExpectations('kinto-26.3', dir)).toBe(join(PACKAGE, 'expectations/kinto-26.3.json'));
    expect(resolveExpectations('kinto-26.3-postgresql.json', dir)).toBe(
      join(PACKAGE, 'expectations/kinto-26.3-postgresql.json'),
    );
    expect(() => resolveExpectations('kinto-1.0', dir)).toThrow(
      /shipped: kinto-26.3, kinto-26.3-attachment, kinto-26.3-common, kinto-26.3-postgresql/,
    );
  });

  it('prefers an existing file, relative to the given directory', () => {
    writeFileSync(join(dir, 'kinto-26.3'), '{"deviations": []}');
    expect(resolveExpectations('kinto-26.3', dir)).toBe(join(dir, 'kinto-26.3'));
  });

  it('the backend files extend the common one: its deviations come first, each with a reason', () => {
    const common = loadExpectations(resolveExpectations('kinto-26.3-common')).deviations;
    for (const name of ['kinto-26.3', 'kinto-26.3-postgresql']) {
      const all = loadExpectations(resolveExpectations(name)).deviations;
      expect(all.slice(0, common.length), name).toEqual(common);
      expect(all.length, name).toBeGreaterThan(common.length);
      expect(new Set(all.map((d) => d.test)).size, `${name}: a check listed twice`).toBe(all.length);
    }
  });

  it('extends a file relative to the extending one, and refuses a loop', () => {
    writeFileSync(join(dir, 'base.json'), '{"deviations": [{"test": "a.test.ts > *", "reason": "base reason"}]}');
    writeFileSync(
      join(dir, 'mine.json'),
      '{ // comment\n "extends": "base.json", "deviations": [{"test": "/b\\\\.test/", "reason": "mine"}]}',
    );
    const e = loadExpectations(join(dir, 'mine.json'));
    expect(e.deviations.map((d) => d.reason)).toEqual(['base reason', 'mine']);
    expect(e.match('a.test.ts > x > y')?.reason).toBe('base reason');
    expect(e.match('b.test.ts > x')?.reason).toBe('mine');
    expect(e.match('c.test.ts > x')).toBeUndefined();
    writeFileSync(join(dir, 'loop-a.json'), '{"extends": "loop-b.json", "deviations": []}');
    writeFileSync(join(dir, 'loop-b.json'), '{"extends": "loop-a.json", "deviations": []}');
    expect(() => loadExpectations(join(dir, 'loop-a.json'))).toThrow(/loops back/);
  });

  it('refuses an entry without a reason', () => {
    expect(() => parseExpectations('{"deviations": [{"test": "x"}]}')).toThrow(/must say why/);
  });

  it('reads known-flaky entries', () => {
    const e = parseExpectations(
      '{"deviations": [{"test": "root.test.ts > *", "reason": "a race of the target", "flaky": true}, {"test": "x", ' +
        '"reason": "y"}]}',
    );
    expect(e.match('root.test.ts > a > b')).toEqual({
      test: 'root.test.ts > *',
      reason: 'a race of the target',
      flaky: true,
    });
    expect(e.match('x')).toEqual({ test: 'x', reason: 'y' });
    expect(() => parseExpectations('{"deviations": [{"test": "x", "reason": "y", "flaky": "yes"}]}')).toThrow(
      /flaky must be true or false/,
    );
  });
});

describe('where reports go', () => {
  it('the current directory, when it is not this package', () => {
    expect(reportDir(undefined, '/home/me/project', '')).toBe('/home/me/project');
    expect(reportDir('out', '/home/me/project', '/elsewhere')).toBe('/home/me/project/out');
  });

  it('run by a package script (cwd = the package): the directory pnpm was started from', () => {
    expect(invocationDir(PACKAGE, '/work/repo')).toBe('/work/repo');
    expect(reportDir(undefined, PACKAGE, '/work/repo')).toBe('/work/repo');
    expect(reportDir('reports', join(PACKAGE, 'src'), '/work/repo')).toBe('/work/repo/reports');
  });

  it('never this package by default, even without INIT_CWD', () => {
    expect(reportDir(undefined, PACKAGE, '')).toBe(join(tmpdir(), 'quire-conformance-reports'));
    expect(reportDir(undefined, PACKAGE, join(PACKAGE, 'src'))).toBe(join(tmpdir(), 'quire-conformance-reports'));
  });
});
