/**
 * OpenID Connect (protocol-reference §13.4): each entry of `openid_providers` is a policy of
 * its own name in `multiauth_policies` (Kinto: `multiauth.policy.<name>.use =
 * kinto.plugins.openid.OpenIDConnectPolicy`). `registerOpenId` adds the `openid` capability and
 * the login helper routes once the policies have read their providers' configuration.
 */
import type { FastifyInstance } from 'fastify';
import type { OpenIdSettings } from './settings.js';
import type { HttpSettings } from '../../http/settings.js';
import type { AuthSettings } from '../settings.js';
import { OpenIdPolicy } from './policy.js';
import { openIdProviders } from './providers.js';
import { registerOpenIdViews } from './views.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = OpenIdSettings & HttpSettings & AuthSettings;

export { OpenIdPolicy } from './policy.js';

/** The policy of the provider called `name`, or null when no provider has that name. */
export function createOpenIdPolicy(settings: ModuleSettings, name: string): OpenIdPolicy | null {
  const provider = openIdProviders(settings).find((candidate) => candidate.name === name);
  return provider ? new OpenIdPolicy(provider, settings) : null;
}

/** Capability and routes; call after every policy's `init()`. Nothing when no provider is enabled. */
export function registerOpenId(app: FastifyInstance): void {
  openIdProviders(app.services.settings); // validates them even when none is enabled
  const policies = app.services.policies.filter((policy): policy is OpenIdPolicy => policy instanceof OpenIdPolicy);
  if (!policies.length) return;
  app.services.capabilities.openid = {
    description: 'OpenID connect support.',
    url: 'http://kinto.readthedocs.io/en/stable/api/1.x/authentication.html',
    providers: policies.map((policy) => ({
      name: policy.name,
      issuer: policy.endpoints.issuer,
      auth_path: `/openid/${policy.name}/login`,
      client_id: policy.provider.clientId,
      // Kinto always shows "Bearer" here (it reads the wrong setting); we show the real scheme.
      header_type: policy.provider.headerType,
      userinfo_endpoint: policy.endpoints.userinfo_endpoint,
    })),
  };
  registerOpenIdViews(app, policies);
}
