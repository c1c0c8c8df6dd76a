/**
 * Settings: names operators of this protocol already know (`storage_url`, `batch_max_requests`,
 * ...), read from `QUIRE_<NAME>` environment variables, then an optional JSON config file, then
 * the defaults. Each feature declares its settings in its own `settings.ts` (TypeBox schemas:
 * type, default, bounds, meaning); here they are put together and loaded. Bad settings fail at
 * boot with a clear message (ConfigError).
 */
import { readFileSync } from 'node:fs';
import { ACCOUNT_SETTINGS } from './accounts/settings.js';
import { ATTACHMENT_SETTINGS, checkAttachmentSettings } from './attachments/settings.js';
import { OPENID_SETTINGS } from './auth/openid/settings.js';
import { AUTH_SETTINGS, checkAuthSettings } from './auth/settings.js';
import { CHANGES_SETTINGS } from './changes/settings.js';
import { HISTORY_SETTINGS } from './history/settings.js';
import { HTTP_SETTINGS } from './http/settings.js';
import { LISTENER_SETTINGS } from './listeners/settings.js';
import { MAIL_SETTINGS } from './mail/settings.js';
import { checkObservabilitySettings, OBSERVABILITY_SETTINGS } from './observability/settings.js';
import { PERMISSION_SETTINGS } from './permission/settings.js';
import { QUOTA_SETTINGS } from './quotas/settings.js';
import { checkResourceSettings, INPUT_SETTINGS, RESOURCE_SETTINGS } from './engine/settings.js';
import { SCHEMA_SETTINGS } from './schema/settings.js';
import { SERVER_SETTINGS } from './server-settings.js';
import { ConfigError } from './settings/config-error.js';
import { convertSetting } from './settings/convert.js';
import { composeSettings, envName, type SettingValues } from './settings/schema.js';
import { createSettingsValidator, type SettingOrigin } from './settings/validate.js';
import { checkStorageSettings, STORAGE_SETTINGS } from './storage/settings.js';
import { enablePermissionsEndpointForAdmin, VIEW_SETTINGS } from './views/settings.js';

export { ConfigError };

/** Every setting, feature by feature, in the order of the README's table. */
export const SETTINGS = composeSettings(
  SERVER_SETTINGS,
  STORAGE_SETTINGS,
  RESOURCE_SETTINGS,
  INPUT_SETTINGS,
  VIEW_SETTINGS,
  HTTP_SETTINGS,
  AUTH_SETTINGS,
  OPENID_SETTINGS,
  PERMISSION_SETTINGS,
  OBSERVABILITY_SETTINGS,
  LISTENER_SETTINGS,
  HISTORY_SETTINGS,
  QUOTA_SETTINGS,
  SCHEMA_SETTINGS,
  CHANGES_SETTINGS,
  ACCOUNT_SETTINGS,
  MAIL_SETTINGS,
  ATTACHMENT_SETTINGS,
);

export type SettingName = keyof typeof SETTINGS;

/** The loaded settings: one value of its schema's type per setting. */
export type Settings = SettingValues<typeof SETTINGS>;

const validateSettings = createSettingsValidator(SETTINGS);

/** Checks across settings, each with its feature; run once every value passed its schema. */
const CHECKS: Array<(settings: Settings) => void> = [
  checkStorageSettings,
  checkAuthSettings,
  checkObservabilitySettings,
  checkAttachmentSettings,
  checkResourceSettings,
];

export interface LoadSettingsOptions {
  env?: NodeJS.ProcessEnv;
  /** Path of a JSON config file (else `QUIRE_CONFIG` from the environment, if set). */
  configFile?: string | null;
  /** Explicit values, taking precedence over everything (tests, embedding). */
  overrides?: Partial<Settings>;
}

/** Environment (`QUIRE_<NAME>`) > config file > defaults; overrides win over all. */
export function loadSettings(options: LoadSettingsOptions = {}): Settings {
  const env = options.env ?? process.env;
  const file = options.configFile === undefined ? (env.QUIRE_CONFIG ?? null) : options.configFile;
  const fromFile = file ? readConfigFile(file) : {};
  refuseUnknownVariables(env);

  const values: Record<string, unknown> = {};
  const origins = new Map<string, SettingOrigin>();
  const give = (name: SettingName, raw: unknown, source: string) => {
    origins.set(name, { raw, source });
    values[name] = convertSetting(SETTINGS[name], raw, (why) => {
      throw new ConfigError(`Invalid setting ${name} (from ${source}): ${why}`);
    });
  };
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const given = givenValue(name, env, fromFile, file);
    if (given) give(name, given.raw, given.source);
    else values[name] = copy(SETTINGS[name].default);
  }
  for (const [name, value] of Object.entries(options.overrides ?? {})) {
    if (!Object.hasOwn(SETTINGS, name)) throw new ConfigError(`Unknown setting ${name}`);
    give(name as SettingName, value, 'overrides');
  }
  validateSettings(values, origins);
  const settings = values as Settings;
  for (const check of CHECKS) check(settings);
  enablePermissionsEndpointForAdmin(settings);
  return settings;
}

function givenValue(
  name: SettingName,
  env: NodeJS.ProcessEnv,
  fromFile: Record<string, unknown>,
  file: string | null,
): SettingOrigin | undefined {
  const variable = envName(name);
  if (env[variable] !== undefined) return { raw: env[variable], source: variable };
  const plain = name === 'host' ? env.HOST : name === 'port' ? env.PORT : undefined;
  if (plain) return { raw: plain, source: name.toUpperCase() };
  if (Object.hasOwn(fromFile, name)) return { raw: fromFile[name], source: String(file) };
  return undefined;
}

/** A default's own copy: a caller that changes its settings' lists changes no one else's. */
function copy(value: unknown): unknown {
  return typeof value === 'object' && value !== null ? structuredClone(value) : value;
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`Cannot read config file ${file}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`Config file ${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`Config file ${file} must hold a JSON object of settings`);
  }
  const unknown = Object.keys(parsed).filter((key) => !Object.hasOwn(SETTINGS, key));
  if (unknown.length) {
    throw new ConfigError(
      `Unknown setting(s) in ${file}: ${unknown.map((key) => `${key}${suggestion(key, (name) => name)}`).join(', ')}`,
    );
  }
  return parsed as Record<string, unknown>;
}

/**
 * `QUIRE_*` variables that are not settings: read by the CLI, the version, the tests, the
 * conformance suite, the benches and the demo. Any other `QUIRE_*` name is a mistake, refused:
 * a typo such as QUIRE_STORAGE_URI would otherwise put production on the embedded store.
 */
const OTHER_VARIABLES = new Set([
  'QUIRE_CONFIG',
  'QUIRE_COMMIT',
  'QUIRE_URL',
  'QUIRE_DEMO_PORT',
  'QUIRE_CHROMIUM_PATH',
]);
const OTHER_PREFIXES = ['QUIRE_TEST_', 'QUIRE_CONFORMANCE_', 'QUIRE_BENCH_'];

function refuseUnknownVariables(env: NodeJS.ProcessEnv): void {
  const unknown = Object.keys(env).filter(
    (name) =>
      name.startsWith('QUIRE_') &&
      !OTHER_VARIABLES.has(name) &&
      !OTHER_PREFIXES.some((prefix) => name.startsWith(prefix)) &&
      !Object.hasOwn(SETTINGS, name.slice('QUIRE_'.length).toLowerCase()),
  );
  if (unknown.length === 0) return;
  const named = unknown
    .sort()
    .map((name) => `${name}${suggestion(name.slice('QUIRE_'.length).toLowerCase(), envName)}`);
  throw new ConfigError(
    `Unknown environment variable${unknown.length > 1 ? 's' : ''} ${named.join(', ')}: not a setting (see the ` +
      "README's settings table)",
  );
}

/** ` (did you mean X?)` for the closest setting name, if one is close enough to be a typo. */
function suggestion(name: string, show: (setting: string) => string): string {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const setting of Object.keys(SETTINGS)) {
    const distance = editDistance(name.toLowerCase(), setting);
    if (distance < bestDistance) [best, bestDistance] = [setting, distance];
  }
  return best !== null && bestDistance <= Math.max(2, Math.floor(name.length / 4))
    ? ` (did you mean ${show(best)}?)`
    : '';
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** Settings as shown in logs: secrets masked. */
export function redactSettings(settings: Settings): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(settings)) {
    shown[name] = SETTINGS[name as SettingName].secret && value ? '***' : value;
  }
  return shown;
}
