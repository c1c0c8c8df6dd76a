/**
 * The README's settings table, written from the settings' schemas (`pnpm --filter @quire/server
 * settings:docs`) between two markers; config.test.ts fails when the README is behind.
 */
import { envName, type SettingSchemas, settingKind } from './schema.js';

const TABLE_START =
  '<!-- settings-table: generated from the settings’ schemas by `pnpm --filter @quire/server settings:docs` -->';
const TABLE_END = '<!-- settings-table:end -->';

export function renderSettingsTable(schemas: SettingSchemas): string {
  const rows = Object.entries(schemas).map(([name, schema]) => {
    if (typeof schema.description !== 'string') throw new Error(`Setting ${name} has no description`);
    return `| \`${name}\` | \`${envName(name)}\` | ${shownDefault(schema)} | ${cell(schema.description)} |`;
  });
  return ['| Setting | Environment variable | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

function shownDefault(schema: SettingSchemas[string]): string {
  const value: unknown = schema.default;
  if (value === null || value === undefined) return '—';
  if (settingKind(schema).kind === 'list')
    return (value as string[]).length === 0 ? '(empty)' : (value as string[]).map(code).join(' ');
  return code(typeof value === 'string' ? value : JSON.stringify(value));
}

function code(text: string): string {
  return `\`${cell(text)}\``;
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

/** Where the table lies between the markers (null: markers missing). */
function tableBounds(readme: string): { start: number; end: number } | null {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  return start === -1 || end < start ? null : { start: start + TABLE_START.length, end };
}

/** The table found between the markers, or null when they are missing. */
export function tableIn(readme: string): string | null {
  const bounds = tableBounds(readme);
  return bounds && readme.slice(bounds.start, bounds.end).trim();
}

export function withTable(readme: string, table: string): string {
  const bounds = tableBounds(readme);
  if (!bounds) throw new Error(`The README has no settings table markers (${TABLE_START} … ${TABLE_END})`);
  return `${readme.slice(0, bounds.start)}\n${table}\n${readme.slice(bounds.end)}`;
}
