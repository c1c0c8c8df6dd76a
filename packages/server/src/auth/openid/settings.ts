/**
 * OpenID Connect settings: the providers (each checked field by field when the server is built,
 * providers.ts) and the limits of verifying their tokens (policy.ts, views.ts).
 */
import { Type } from '@sinclair/typebox';
import { List, type SettingSchemas, type SettingValues } from '../../settings/schema.js';

export const OPENID_SETTINGS = {
  openid_providers: Type.Array(Type.Unknown(), {
    default: [],
    secret: true,
    invalid: () => 'expected a JSON array',
    description:
      'OpenID Connect providers, a JSON array (see [OpenID Connect](#openid-connect)); each `name` must be ' +
      'listed in `multiauth_policies`. Never logged.',
  }),
  openid_cache_max_entries: Type.Integer({
    default: 10000,
    minimum: 1,
    description: 'Verified OpenID tokens remembered per provider (least recently used dropped first).',
  }),
  openid_http_timeout_seconds: Type.Number({
    default: 10,
    minimum: 0.1,
    description: 'Time limit of each call to an OpenID provider (discovery, userinfo, keys, code exchange).',
  }),
  openid_jwks_cache_seconds: Type.Integer({
    default: 600,
    minimum: 0,
    description: 'How long a provider’s signing keys (JWKS) are reused before being fetched again.',
  }),
  openid_verifications_max_per_address: Type.Integer({
    default: 10,
    minimum: 1,
    description:
      'Token checks a client address (IPv6: per /64) may have in progress with a provider at once ' +
      '(identical tokens share one); one more is answered 429 with `Retry-After`.',
  }),
  openid_max_token_length: Type.Integer({
    default: 8192,
    minimum: 16,
    description: 'Longest bearer token checked; longer ones are ignored (anonymous).',
  }),
  openid_callback_origins: List({
    default: ['*'],
    description: 'Origins the OpenID login may redirect tokens to (`callback`); `*` allows any, as Kinto does.',
  }),
} satisfies SettingSchemas;

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type OpenIdSettings = SettingValues<typeof OPENID_SETTINGS>;
