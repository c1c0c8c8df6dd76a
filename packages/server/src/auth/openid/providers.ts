/**
 * OpenID Connect provider settings (protocol-reference §13.4): one entry of the
 * `openid_providers` setting per provider, each a policy named in `multiauth_policies`.
 * Validated once when the server is built; a bad entry stops the boot with a ConfigError.
 */
import { ConfigError } from '../../settings/config-error.js';
import type { OpenIdSettings } from './settings.js';
import type { AuthSettings } from '../settings.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = OpenIdSettings & AuthSettings;

export interface OpenIdProvider {
  /** Policy name: user ids are `<name>:<userid>`, routes `/openid/<name>/...`. */
  name: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Profile field naming the user (Kinto: `sub`). */
  useridField: string;
  /** Scheme of the `Authorization` header (Kinto: `Bearer`), compared case-insensitively. */
  headerType: string;
  /** When set, JWT access tokens for this audience are accepted on their signature alone. */
  audience: string | null;
  verificationTtlSeconds: number;
  stateTtlSeconds: number;
  stateLength: number;
}

const FIELDS = new Set([
  'name',
  'issuer',
  'client_id',
  'client_secret',
  'userid_field',
  'header_type',
  'audience',
  'verification_ttl_seconds',
  'state_ttl_seconds',
  'state_length',
]);
// Names other policies use: a provider may not take them (its user ids would collide).
const RESERVED_NAMES = new Set(['basicauth', 'account', 'accounts']);

const parsed = new WeakMap<ModuleSettings, OpenIdProvider[]>();

/** The providers of `settings.openid_providers`, validated (memoised per settings object). */
export function openIdProviders(settings: ModuleSettings): OpenIdProvider[] {
  let providers = parsed.get(settings);
  if (!providers) {
    providers = settings.openid_providers.map((raw, index) => parseProvider(raw, index));
    const names = providers.map((provider) => provider.name);
    const duplicate = names.find((name, index) => names.indexOf(name) !== index);
    if (duplicate !== undefined) fail(`provider "${duplicate}" is configured twice`);
    for (const name of names) {
      if (!settings.multiauth_policies.includes(name)) fail(`provider "${name}" is not listed in multiauth_policies`);
    }
    parsed.set(settings, providers);
  }
  return providers;
}

function fail(why: string): never {
  throw new ConfigError(`Invalid setting openid_providers: ${why}`);
}

function parseProvider(raw: unknown, index: number): OpenIdProvider {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail(`entry ${index} must be an object`);
  const entry = raw as Record<string, unknown>;
  const unknown = Object.keys(entry).filter((key) => !FIELDS.has(key));
  if (unknown.length) fail(`entry ${index}: unknown field(s) ${unknown.join(', ')}`);

  const text = (field: string, fallback?: string): string => {
    const value = Object.hasOwn(entry, field) ? entry[field] : fallback;
    if (typeof value !== 'string' || (value === '' && field !== 'client_secret'))
      fail(`entry ${index}: "${field}" must be a non-empty string`);
    return value;
  };
  const integer = (field: string, fallback: number, min: number): number => {
    const value = Object.hasOwn(entry, field) ? entry[field] : fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
      fail(`entry ${index}: "${field}" must be an integer ≥ ${min}`);
    return value;
  };

  const name = text('name');
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) fail(`entry ${index}: "name" may hold only letters, digits, "-" and "_"`);
  if (RESERVED_NAMES.has(name)) fail(`entry ${index}: "${name}" is the name of another policy`);
  const issuer = text('issuer');
  let issuerUrl: URL;
  try {
    issuerUrl = new URL(issuer);
  } catch {
    return fail(`provider "${name}": "issuer" must be an http(s) URL`);
  }
  if (issuerUrl.protocol !== 'https:' && issuerUrl.protocol !== 'http:')
    fail(`provider "${name}": "issuer" must be an http(s) URL`);
  const headerType = text('header_type', 'Bearer');
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(headerType))
    fail(`provider "${name}": "header_type" must be an HTTP auth scheme token`);
  const audience = entry.audience ?? null;
  if (audience !== null && (typeof audience !== 'string' || audience === ''))
    fail(`provider "${name}": "audience" must be a non-empty string`);

  return {
    name,
    issuer,
    clientId: text('client_id'),
    clientSecret: text('client_secret', ''),
    useridField: text('userid_field', 'sub'),
    headerType,
    audience,
    verificationTtlSeconds: integer('verification_ttl_seconds', 86400, 1),
    stateTtlSeconds: integer('state_ttl_seconds', 3600, 1),
    stateLength: integer('state_length', 32, 16),
  };
}
