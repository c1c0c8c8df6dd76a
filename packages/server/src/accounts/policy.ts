/**
 * The `account` authentication policy (protocol-reference §9.1, §13.2): Basic Auth whose user
 * name is an account id and whose password matches the account's argon2 hash; the user id is
 * `account:<id>`. An account awaiting validation cannot log in (a missing `validated` counts as
 * validated).
 *
 * Credentials that do not log in, as the original treats them — the caller is anonymous — where
 * that reveals nothing: with no `basicauth` after `account`, a name that is no account and a
 * wrong password get the same answer after the same work (a check against a dummy hash for the
 * former), so that neither the answer nor its time tells which accounts exist; a client may
 * then sign up while already sending the new account's credentials, as published clients do.
 * With `basicauth` after `account`, a name that is no account is that policy's user (as in the
 * original), but a wrong password for an account answers 401: deliberate difference (README),
 * the original lets `basicauth` make a mistyped password another, empty user — whose writes
 * land elsewhere — while a guesser never sees a failure.
 * Either way failures count against the login limits (429 over them).
 */
import { parseBasicAuthorization } from '../auth/basicauth.js';
import type { AuthPolicy } from '../auth/policy.js';
import { ConfigError } from '../settings/config-error.js';
import type { AuthSettings } from '../auth/settings.js';
import type { AccountSettings } from './settings.js';
import { ApiError, ERRNO } from '../errors.js';
import { VerifiedCredentialsCache } from './credentials-cache.js';
import { ACCOUNT_ID_PATTERN, ACCOUNT_POLICY, ACCOUNT_SCOPE, accountUserId } from './ids.js';
import { LoginLimiter } from './login-limiter.js';
import { dummyHash } from './password.js';
import { HashTurns } from './hash-turns.js';
import { PasswordChecks } from './password-checks.js';
import { RateStore } from './rate-store.js';
import { SignUpLimiter } from './sign-up-limiter.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = AuthSettings & AccountSettings;

const TEMPORARY_PASSWORD = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export interface AccountPolicy extends AuthPolicy {
  readonly name: typeof ACCOUNT_POLICY;
  /** Shared with the account endpoints, which forget an account's entries when it changes. */
  readonly credentials: VerifiedCredentialsCache;
  readonly limiter: LoginLimiter;
  readonly signUps: SignUpLimiter;
  /** Turns at argon2, fair per address (logins here, password writes in the account endpoints). */
  readonly hashTurns: HashTurns;
  /** Where the limiters count (closed with the server). */
  readonly rates: RateStore;
}

const CHALLENGE = 'Basic realm="Realm"';

/** Boot-time checks Kinto makes too: a misconfiguration fails loudly rather than half-working. */
function checkSettings(settings: ModuleSettings): void {
  const policies = settings.multiauth_policies;
  if (policies.includes('basicauth') && policies.indexOf('basicauth') < policies.indexOf(ACCOUNT_POLICY)) {
    // basicauth accepts any credentials: listed first, it would shadow every account.
    throw new ConfigError("Invalid setting multiauth_policies: 'basicauth' must not come before 'account'");
  }
  const admins = new Set(settings.account_write_principals);
  const creatorsNotAdmins = settings.account_create_principals.filter(
    (principal) => principal !== 'system.Everyone' && !admins.has(principal),
  );
  if (creatorsNotAdmins.length > 0) {
    throw new ConfigError(
      `Invalid setting account_create_principals: ${creatorsNotAdmins.join(', ')} may only create their own ` +
        'account unless also in account_write_principals',
    );
  }
  try {
    new RegExp(settings.account_validation_email_regexp);
  } catch {
    throw new ConfigError('Invalid setting account_validation_email_regexp: not a regular expression');
  }
}

export function createAccountPolicy(settings: ModuleSettings): AccountPolicy {
  checkSettings(settings);
  const credentials = new VerifiedCredentialsCache(
    settings.account_cache_ttl_seconds,
    settings.account_cache_max_entries,
  );
  const rates = new RateStore(settings.account_login_limiter_redis_url);
  const limiter = new LoginLimiter(settings, rates);
  const policies = settings.multiauth_policies;
  const basicAuthAfter =
    policies.includes('basicauth') && policies.indexOf('basicauth') > policies.indexOf(ACCOUNT_POLICY);
  let dummy: Promise<string> | null = null;
  const dummyHashOnce = () => (dummy ??= dummyHash());
  const hashTurns = new HashTurns({
    capacity: settings.account_password_checks_max_in_progress,
    maxQueued: settings.account_password_checks_max_queued_per_address,
    waitMs: settings.account_password_checks_queue_timeout_seconds * 1000,
  });
  const checks = new PasswordChecks(limiter, dummyHashOnce, hashTurns);

  return {
    name: ACCOUNT_POLICY,
    challenge: CHALLENGE,
    credentials,
    limiter,
    signUps: new SignUpLimiter(settings, rates),
    hashTurns,
    rates,
    async init() {
      // Made before the first unknown name is declined, so that it costs one verification too.
      if (!basicAuthAfter) await dummyHashOnce();
    },
    async authenticate({ headers, ip, read }) {
      const given = parseBasicAuthorization(headers.authorization);
      if (!given || !ACCOUNT_ID_PATTERN.test(given.username)) return null;
      const { username: id, password } = given;
      const address = ip;
      // A temporary password (validation flow) is a UUID4 checked by the account endpoints, not
      // here: it must get through even when forgotten passwords used up the account's limit.
      // Guessing in that 122-bit space needs no limit.
      const temporary = settings.account_validation && TEMPORARY_PASSWORD.test(password);
      if (!temporary) await limiter.assertAllowed(id, address);
      if (credentials.has(id, password)) return accountUserId(id);

      // Inside a batch, through its transaction (PGlite would wait for it to end otherwise).
      const account = await read((session) => session.objects.get(ACCOUNT_SCOPE, id));
      if (!account && basicAuthAfter) return null;
      // Or none (an account imported from Kinto holds a bcrypt hash): checked against the dummy.
      const stored =
        typeof account?.password === 'string' && account.password.startsWith('$argon2') ? account.password : null;
      const matches = await checks.matches({ id, password, address, stored, counted: !temporary });
      if (matches && !(settings.account_validation && account?.validated === false)) {
        credentials.remember(id, password);
        return accountUserId(id);
      }
      if (temporary || !basicAuthAfter) return null;
      // Not a fall-through to `basicauth` (see above): the caller learns that the login failed.
      throw new ApiError(401, ERRNO.MISSING_AUTH_TOKEN, {
        message: 'Please authenticate yourself to use this endpoint.',
        headers: { 'WWW-Authenticate': CHALLENGE },
      });
    },
  };
}

export function findAccountPolicy(policies: readonly AuthPolicy[]): AccountPolicy | null {
  return (policies.find((policy) => policy.name === ACCOUNT_POLICY) as AccountPolicy | undefined) ?? null;
}
