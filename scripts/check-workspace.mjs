#!/usr/bin/env node
/**
 * Checks what the linter (Biome, biome.jsonc) cannot: a dependency that two packages of the
 * workspace share is declared once, in the `catalog:` of pnpm-workspace.yaml, so that their
 * versions cannot drift. Run by `pnpm lint` after Biome (part of `pnpm test`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const manifests = ['package.json'];
for (const group of ['packages', 'apps']) {
  for (const name of readdirSync(join(root, group))) manifests.push(join(group, name, 'package.json'));
}

/** dependency name → the packages declaring it, with the version range each gives. */
const declared = new Map();
for (const path of manifests) {
  const manifest = JSON.parse(readFileSync(join(root, path), 'utf8'));
  // Not peerDependencies: those are ranges a user's install must satisfy, not versions we install.
  for (const section of ['dependencies', 'devDependencies', 'optionalDependencies']) {
    for (const [name, range] of Object.entries(manifest[section] ?? {})) {
      if (range.startsWith('workspace:')) continue;
      if (!declared.has(name)) declared.set(name, []);
      declared.get(name).push({ path, range });
    }
  }
}

const problems = [];
for (const [name, uses] of declared) {
  if (uses.length < 2) continue;
  const outside = uses.filter((use) => use.range !== 'catalog:');
  if (outside.length)
    problems.push(
      `${name} is used by ${uses.length} packages: declare it in the catalog of pnpm-workspace.yaml ` +
        `and write "catalog:" in ${outside.map((use) => use.path).join(', ')}`,
    );
}
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`workspace: ${declared.size} dependencies, every shared one from the catalog`);
