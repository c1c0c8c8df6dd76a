#!/usr/bin/env node
/**
 * The house's size rules, which Biome does not check: no line over the formatter's width (comments
 * and strings included, which the formatter leaves alone), no source file over 450 lines and no
 * function over 80 lines outside tests. Run by `pnpm lint`; `--report` lists without failing.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const MAX_WIDTH = 120;
const MAX_FILE_LINES = 450;
const MAX_FUNCTION_LINES = 80;

const root = new URL('..', import.meta.url).pathname;
const ts = createRequire(join(root, 'packages/server/package.json'))('typescript');
const report = process.argv.includes('--report');

const files = execFileSync('git', ['ls-files', '-z', '*.ts', '*.tsx', '*.js', '*.mjs', '*.cjs'], { cwd: root })
  .toString()
  .split('\0')
  .filter((path) => path !== '' && !/(^|\/)dist\//.test(path));

/** Tests and shared test suites (`storage/testing/`) may be long: a scenario reads better whole. */
const isTest = (path) => /\.test\.tsx?$|(^|\/)test\/|(^|\/)testing\/|-testing\.ts$/.test(path);

const problems = [];
for (const path of files) {
  const text = readFileSync(join(root, path), 'utf8');
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    if (line.length > MAX_WIDTH)
      problems.push(`${path}:${index + 1}: line of ${line.length} columns (max ${MAX_WIDTH})`);
  });
  if (isTest(path)) continue;
  if (lines.length > MAX_FILE_LINES) problems.push(`${path}: ${lines.length} lines (max ${MAX_FILE_LINES})`);
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.end).line;
      if (end - start + 1 > MAX_FUNCTION_LINES) {
        const name = node.name?.getText(source) ?? '(anonymous)';
        problems.push(`${path}:${start + 1}: function ${name} of ${end - start + 1} lines (max ${MAX_FUNCTION_LINES})`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

for (const problem of problems) console.log(problem);
if (problems.length > 0) {
  console.log(`${problems.length} house rule(s) broken (scripts/check-house.mjs).`);
  if (!report) process.exit(1);
}
