/**
 * The `account` authentication policy (protocol-reference §9.1, §13.2): Basic Auth whose user
 * name is an account id and whose password matches the account's argon2 hash; the user id is
 * `account:<id>`. Anything else declines (the next policy may accept the credentials). An
 * account awaiting validation cannot log in (a missing `validated` counts as validated).
 */
import { parseBasicAuthorization } from '../auth/basicauth.js';
import type { AuthPolicy } from '../auth/policy.js';
import { ConfigError, type Settings } from '../config.js';
import type { Storage } from '../storage/types.js';
import { VerifiedCredentialsCache } from './credentials-cache.js';
import { ACCOUNT_ID_PATTERN, ACCOUNT_POLICY, ACCOUNT_SCOPE, accountUserId } from './ids.js';
import { LoginLimiter } from './login-limiter.js';
import { verifyPassword } from './password.js';

const TEMPORARY_PASSWORD = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export interface AccountPolicy extends AuthPolicy {
  readonly name: typeof ACCOUNT_POLICY;
  /** Shared with the account endpoints, which forget an account's entries when it changes. */
  readonly credentials: VerifiedCredentialsCache;
  readonly limiter: LoginLimiter;
}

/** Boot-time checks Kinto makes too: a misconfiguration fails loudly rather than half-working. */
function checkSettings(settings: Settings): void {
  const policies = settings.multiauth_policies;
  if (policies.includes('basicauth') && policies.indexOf('basicauth') < policies.indexOf(ACCOUNT_POLICY)) {
    // basicauth accepts any credentials: listed first, it would shadow every account.
    throw new ConfigError("Invalid setting multiauth_policies: 'basicauth' must not come before 'account'");
  }
  const admins = new Set(settings.account_write_principals);
  const creatorsNotAdmins = settings.account_create_principals.filter((principal) => principal !== 'system.Everyone' && !admins.has(principal));
  if (creatorsNotAdmins.length > 0) {
    throw new ConfigError(
      `Invalid setting account_create_principals: ${creatorsNotAdmins.join(', ')} may only create their own account unless also in account_write_principals`,
    );
  }
  try {
    new RegExp(settings.account_validation_email_regexp);
  } catch {
    throw new ConfigError('Invalid setting account_validation_email_regexp: not a regular expression');
  }
}

export function createAccountPolicy(settings: Settings, storage: Storage): AccountPolicy {
  checkSettings(settings);
  const credentials = new VerifiedCredentialsCache(settings.account_cache_ttl_seconds);
  const limiter = new LoginLimiter(settings);
  return {
    name: ACCOUNT_POLICY,
    challenge: 'Basic realm="Realm"',
    credentials,
    limiter,
    async authenticate({ headers, ip: address, batch }) {
      const given = parseBasicAuthorization(headers.authorization);
      if (!given || !ACCOUNT_ID_PATTERN.test(given.username)) return null;
      const { username: id, password } = given;
      // A temporary password (validation flow) is a UUID4 checked by the account endpoints, not
      // here: it must get through even when forgotten passwords used up the account's limit.
      // Guessing in that 122-bit space needs no limit.
      const limited = !(settings.account_validation && TEMPORARY_PASSWORD.test(password));
      if (limited) await limiter.assertAllowed(id, address);
      if (credentials.has(id, password)) return accountUserId(id);

      // Inside a batch, through its transaction (PGlite would wait for it to end otherwise).
      const account = await (batch ?? storage).get(ACCOUNT_SCOPE, id);
      if (!account || typeof account.password !== 'string') return null;
      if (settings.account_validation && account.validated === false) return null;
      if (!(await verifyPassword(account.password, password))) {
        if (limited) await limiter.recordFailure(id, address);
        return null;
      }
      credentials.remember(id, password);
      await limiter.recordSuccess(id);
      return accountUserId(id);
    },
  };
}

export function findAccountPolicy(policies: readonly AuthPolicy[]): AccountPolicy | null {
  return (policies.find((policy) => policy.name === ACCOUNT_POLICY) as AccountPolicy | undefined) ?? null;
}
