/** Authentication settings: the policies tried on each request (authenticate.ts), Basic Auth's key. */
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../settings/config-error.js';
import { List, Nullable, type SettingSchemas, type SettingValues } from '../settings/schema.js';
import type { OPENID_SETTINGS } from './openid/settings.js';

/** Policies built in; each OpenID provider adds one of its own name (as `multiauth.policy.<name>` in Kinto). */
const POLICIES = new Set(['basicauth', 'account']);

export const AUTH_SETTINGS = {
  multiauth_policies: List({
    default: ['basicauth'],
    description: 'Authentication policies, in the order they are tried.',
  }),
  userid_hmac_secret: Nullable(Type.String(), {
    default: null,
    secret: true,
    description:
      'HMAC key of Basic Auth user ids. Required on PostgreSQL; on the embedded store a random one is kept in ' +
      '`data_dir`.',
  }),
} satisfies SettingSchemas;

export function checkAuthSettings(
  settings: SettingValues<typeof AUTH_SETTINGS> & Pick<SettingValues<typeof OPENID_SETTINGS>, 'openid_providers'>,
): void {
  const openidNames = settings.openid_providers.map((provider) => (provider as { name?: unknown } | null)?.name);
  for (const policy of settings.multiauth_policies) {
    if (!POLICIES.has(policy) && !openidNames.includes(policy)) {
      throw new ConfigError(
        `Invalid setting multiauth_policies: unknown policy "${policy}" (known: ${[...POLICIES].join(', ')})`,
      );
    }
  }
}

/** The values of this feature's settings: what its modules read (not the composed `Settings`). */
export type AuthSettings = SettingValues<typeof AUTH_SETTINGS>;
