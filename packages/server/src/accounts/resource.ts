/**
 * Accounts (protocol-reference §13.2) as a resource of the generic engine, as in Kinto:
 * `/accounts` (GET, HEAD, POST) and `/accounts/<id>` (GET, PUT, PATCH, DELETE), with
 * - sign-up by PUT or POST with `data.password`, allowed to `account_create_principals`;
 * - the account `account:<id>` always holding `write` on itself, whoever created it;
 * - a non-administrator creating or changing only the account named like their own user;
 * - administrators (`account_write_principals`) managing every account; they and
 *   `account_read_principals` list them all, other users list only their own;
 * - the holder of a temporary password (validation flow) allowed once to set a new password.
 *
 * Deliberate difference: responses and events never show `password`. Kinto shows the stored
 * hash, which no client reads and which only helps offline guessing.
 */
import type { EngineRequest } from '../engine/request.js';
import type { Identity } from '../auth/policy.js';
import { ApiError, ERRNO, invalidParameter } from '../errors.js';
import { MailError } from '../mail/mailer.js';
import type { Services } from '../request-context.js';
import type { AccessPolicy, ResourceDefinition, WriteContext } from '../engine/definition.js';
import type { ListQuery } from '../engine/querystring.js';
import type { Permissions, StorageSession } from '../storage/types.js';
import { ACCOUNT_ID_PATTERN, ACCOUNT_SCOPE, accountIdOf, accountUri, accountUserId } from './ids.js';
import type { AccountMails } from './mails.js';
import { hashPassword } from './password.js';
import type { AccountPolicy } from './policy.js';
import { createActivationKey, useTemporaryPassword } from './tokens.js';

/** What the client may send for the mails of the validation flow; never stored. */
const EMAIL_CONTEXT = 'email-context';

/** The account as shown on the wire and to listeners: everything but the password hash. */
export function publicAccount(account: Record<string, unknown>): Record<string, unknown> {
  const { password: _password, ...shown } = account;
  return shown;
}

/** 503 (errno 201) when a mail the request depends on could not be sent; other errors as they are. */
function mailUnavailable(error: unknown, retryAfterSeconds: number): unknown {
  if (!(error instanceof MailError)) return error;
  return new ApiError(503, ERRNO.BACKEND, {
    message: 'The mail could not be sent, please retry later.',
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

function holdsAny(principals: readonly string[], granted: readonly string[] | undefined): boolean {
  return (granted ?? []).some((principal) => principals.includes(principal));
}

function requirePassword(data: Record<string, unknown>): string {
  const password = data.password;
  if (password === undefined || password === null || password === '')
    throw invalidParameter('body', 'data.password', 'Required');
  if (typeof password !== 'string')
    throw invalidParameter('body', 'data.password', `${JSON.stringify(password)} is not a string`);
  return password;
}

const mentionsPassword = (field: string) => field === 'password' || field.startsWith('password.');

export function createAccountResource(
  services: Services,
  policy: AccountPolicy,
  mails: AccountMails | null,
): ResourceDefinition {
  const { settings } = services;
  const rules = new AccountRules(services, policy);
  return {
    name: ACCOUNT_SCOPE.resourceName,
    plural: 'accounts',
    parent: null,
    permissions: ['read', 'write'],
    endpoints: { plural: ['GET', 'HEAD', 'POST'], object: ['GET', 'PUT', 'PATCH', 'DELETE'] },
    // `@`, `.` and `+` allowed, so that e-mail addresses fit.
    idPattern: ACCOUNT_ID_PATTERN,
    cascades: false,
    cacheable: false, // accounts are never cacheable (§12.5)
    // Account data has one meaningful field: JSON-Patch is not offered here.
    patchTypes: ['json', 'merge-patch'],
    access: rules.access,
    generateId({ identity }) {
      // Kinto's two wordings: before (anonymous, administrators) and after resolving the caller.
      throw identity.userId === null || rules.isAdmin(identity)
        ? invalidParameter('body', 'data.id', 'data.id in body: Required')
        : invalidParameter('body', 'data.id', 'Accounts must have an ID.');
    },
    prepareList(_context, query) {
      checkListQuery(query);
      return query.filters;
    },
    processData: (data, context) => rules.processData(data, context),
    async afterWrite({ request, work, session, existing, sent }, stored) {
      work.afterCommit(() => rules.afterPasswordChange(request, stored.id));
      // Credentials of the new account sent before it existed were no guesses (login-limiter.ts).
      if (!existing) work.afterCommit(() => policy.limiter.signedUp(stored.id, request.ip));
      if (existing || !settings.account_validation || !mails) return;
      const key = await createActivationKey(session.nonces, settings, stored.id);
      // Inside the transaction: when the mail cannot be sent, the account is not created and the
      // client may simply retry.
      await mails.sendActivation(publicAccount(stored), key, sent[EMAIL_CONTEXT]).catch((error: unknown) => {
        throw mailUnavailable(error, settings.retry_after_seconds);
      });
    },
    afterDelete({ request, work }, tombstone) {
      // As Kinto: the account's own ACEs go (the engine deletes them); its principal stays wherever others listed it.
      work.afterCommit(() => rules.afterPasswordChange(request, tombstone.id));
    },
    // The account's own principal is its owner: the author acts as `account:<id>` (Kinto's
    // current principal for accounts), so the answer to a write shows the ACL.
    owner: (_context, ref) => accountUserId(ref.id),
    present: publicAccount,
  };
}

/** A listing may neither filter, sort nor project on the password. */
function checkListQuery(query: ListQuery): void {
  for (const filter of query.filters) {
    if (mentionsPassword(filter.field))
      throw invalidParameter('querystring', filter.field, `Unknown filter field '${filter.field}'`);
  }
  for (const sort of query.sorting) {
    if (mentionsPassword(sort.field)) throw invalidParameter('querystring', null, `Unknown sort field '${sort.field}'`);
  }
  if (query.fields?.some(mentionsPassword))
    throw invalidParameter('querystring', '_fields', 'Fields password do not exist');
}

/** Who may do what to accounts, and what a write stores. */
class AccountRules {
  readonly #services: Services;
  readonly #settings: Services['settings'];
  readonly #policy: AccountPolicy;
  readonly #emailPattern: RegExp;
  /** Requests whose caller acts with a temporary password: allowed to set a new password, nothing else. */
  readonly #passwordResets = new WeakSet<EngineRequest>();
  readonly access: AccessPolicy;

  constructor(services: Services, policy: AccountPolicy) {
    this.#services = services;
    this.#settings = services.settings;
    this.#policy = policy;
    this.#emailPattern = new RegExp(services.settings.account_validation_email_regexp);
    this.access = this.#accessPolicy();
  }

  isAdmin(identity: Identity): boolean {
    return holdsAny(identity.principals, this.#settings.account_write_principals);
  }

  #readsAll(identity: Identity): boolean {
    return this.isAdmin(identity) || holdsAny(identity.principals, this.#settings.account_read_principals);
  }

  /** §9.2 for accounts: the settings, or the account's own ACEs (`write` implies `read`). */
  async #may(session: StorageSession, identity: Identity, id: string, permission: 'read' | 'write'): Promise<boolean> {
    if (this.isAdmin(identity) || (permission === 'read' && this.#readsAll(identity))) return true;
    const acl: Permissions = (await session.permissions.get([accountUri(id)])).get(accountUri(id)) ?? {};
    return (
      holdsAny(identity.principals, acl.write) || (permission === 'read' && holdsAny(identity.principals, acl.read))
    );
  }

  #accessPolicy(): AccessPolicy {
    const settings = this.#settings;
    return {
      can: async ({ session, identity, request, sentData }, ref, permission) => {
        if (await this.#may(session, identity, ref.id, permission)) return true;
        if (
          permission !== 'write' ||
          !(await useTemporaryPassword(session, settings, request.headers.authorization, ref.id, sentData))
        )
          return false;
        this.#passwordResets.add(request);
        return true;
      },
      canCreate: async ({ identity }) => holdsAny(identity.principals, settings.account_create_principals),
      list: async ({ session, identity }) => {
        if (this.#readsAll(identity)) return { kind: 'all' };
        if (identity.userId === null) {
          // Kinto answers anonymous listings with this error built without errno (999).
          const challenges = this.#services.policies.map((known) => known.challenge);
          throw new ApiError(401, ERRNO.UNDEFINED, {
            error: 'Cannot read accounts.',
            headers: challenges.length ? { 'WWW-Authenticate': challenges.join(', ') } : {},
          });
        }
        // Users see their own account only (none for users of other policies).
        const ownId = accountIdOf(identity.userId);
        const visible = ownId !== null && (await this.#may(session, identity, ownId, 'read'));
        return { kind: 'some', ids: visible && ownId !== null ? [ownId] : [] };
      },
    };
  }

  #checkOwnId(identity: Identity, id: string): void {
    if (identity.userId === null || this.isAdmin(identity)) return;
    if (accountIdOf(identity.userId) !== id)
      throw invalidParameter('body', 'data.id', 'Username and account ID do not match.');
  }

  /** The definition's `processData`: Kinto's creation checks, then what is stored. */
  async processData(data: Record<string, unknown>, context: WriteContext): Promise<Record<string, unknown>> {
    const { identity, ref, existing, request } = context;
    const settings = this.#settings;
    if (!existing) {
      // Kinto's creation checks (`process_object`): e-mail ids in validation mode, own id only.
      if (settings.account_validation && !this.#emailPattern.test(ref.id)) {
        throw invalidParameter(
          'body',
          'data.id',
          `Account validation is enabled, and user id should match ${settings.account_validation_email_regexp}`,
        );
      }
      this.#checkOwnId(identity, ref.id);
      // Rate-limited per address before the password is hashed; administrators are not.
      if (!this.isAdmin(identity)) await this.#policy.signUps.count(request.ip);
    } else if (!this.#passwordResets.has(request)) this.#checkOwnId(identity, ref.id);
    return this.#accountData(data, context);
  }

  /**
   * What is stored: the fields sent, the password hashed (kept when a PATCH leaves it out),
   * `validated` managed by the server (only administrators may set it).
   */
  async #accountData(
    data: Record<string, unknown>,
    { identity, existing, sent, method, request }: WriteContext,
  ): Promise<Record<string, unknown>> {
    const password = method === 'PATCH' && !Object.hasOwn(sent, 'password') ? null : requirePassword(sent);
    const { [EMAIL_CONTEXT]: _context, validated, ...fields } = data;
    const stored: Record<string, unknown> = { ...fields };
    stored.password =
      password === null
        ? existing?.password
        : await this.#policy.hashTurns.run(request.ip, () => hashPassword(password));
    if (!existing && this.#settings.account_validation) stored.validated = false;
    else if (this.isAdmin(identity) && typeof validated === 'boolean') stored.validated = validated;
    else if (existing && Object.hasOwn(existing, 'validated')) stored.validated = existing.validated;
    return stored;
  }

  /**
   * After a password change or a deletion: this process forgets the remembered password; a
   * password reset also clears the failures that locked the account from the caller's address.
   */
  async afterPasswordChange(request: EngineRequest, id: string): Promise<void> {
    this.#policy.credentials.forget(id);
    if (this.#passwordResets.has(request)) await this.#policy.limiter.forgetFailures(id, request.ip);
  }
}
