/**
 * `pnpm --filter @quire/server settings:docs`: rewrites the settings table of the repository's
 * README from the settings' schemas (src/settings/readme-table.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { SETTINGS } from '../src/config.js';
import { renderSettingsTable, withTable } from '../src/settings/readme-table.js';

const readmeUrl = new URL('../../../README.md', import.meta.url);
const readme = readFileSync(readmeUrl, 'utf8');
const updated = withTable(readme, renderSettingsTable(SETTINGS));
if (updated === readme) {
  console.log('README settings table: up to date');
} else {
  writeFileSync(readmeUrl, updated);
  console.log(`README settings table: rewritten (${Object.keys(SETTINGS).length} settings)`);
}
