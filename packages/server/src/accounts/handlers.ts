/**
 * The account endpoints (protocol-reference §13.2): `/accounts` (GET, HEAD, POST) and
 * `/accounts/<id>` (GET, PUT, PATCH, DELETE), Kinto-compatible:
 * - sign-up by PUT or POST with `data.password`, allowed to `account_create_principals`;
 * - the account `account:<id>` always holds `write` on itself, whoever created it;
 * - a non-administrator may only create or change the account named like their own user;
 * - administrators (`account_write_principals`) may manage every account; they and
 *   `account_read_principals` list them all, other users list only their own.
 *
 * Deliberate difference: responses never show `password`. Kinto shows the stored hash, which no
 * client reads and which only helps offline guessing.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import mergePatch from 'json-merge-patch';
import type { Identity } from '../auth/policy.js';
import { ApiError, ERRNO, invalidParameter, objectNotFound } from '../errors.js';
import { setCacheHeaders } from '../http/cache-headers.js';
import { splitUrl } from '../http/url.js';
import type { Services } from '../request-context.js';
import { isPlainObject, rejectUnknownKeys, suppliedTimestamp, userFields } from '../resource/body.js';
import { denied, FOR_UPDATE, readPage, sendCount } from '../resource/handlers.js';
import {
  assertBodyMatchesId,
  mergePermissions,
  patchResponseData,
  patchType,
  responseBehavior,
  setTimestampHeaders,
  writeOptions,
} from '../resource/object-responses.js';
import { checkListPreconditions, checkObjectPreconditions, parsePreconditions } from '../resource/preconditions.js';
import { parseListQuery, projectFields } from '../resource/querystring.js';
import type { Filter, Permissions, StoredObject, StorageSession, Tombstone } from '../storage/types.js';
import { ACCOUNT_ID_PATTERN, ACCOUNT_SCOPE, accountIdOf, accountUri, accountUserId } from './ids.js';
import { MailError } from '../mail/mailer.js';
import type { AccountMails } from './mails.js';
import { hashPassword } from './password.js';
import type { AccountPolicy } from './policy.js';
import { createActivationKey, useTemporaryPassword } from './tokens.js';

const PERMISSION_NAMES = ['read', 'write'];
const BODY_KEYS: ReadonlySet<string> = new Set(['data', 'permissions']);
/** Fields the server manages: never taken from a non-administrator's body. */
const EMAIL_CONTEXT = 'email-context';

interface AccountBody {
  data: Record<string, unknown> | undefined;
  permissions: Record<string, string[] | null> | undefined;
}

/** `{data?, permissions?}` with `read`/`write` permissions only (§4.6); null values only for PATCH. */
function parseBody(body: unknown, options: { patch: boolean }): AccountBody {
  if (body === undefined || body === null) return { data: undefined, permissions: undefined };
  if (!isPlainObject(body)) throw invalidParameter('body', '', 'Should be a JSON object');
  rejectUnknownKeys(body, BODY_KEYS, '');
  const { data, permissions } = body;
  if (data !== undefined && !isPlainObject(data)) {
    throw invalidParameter('body', 'data', `${JSON.stringify(data)} is not a mapping type: Does not implement dict-like functionality.`);
  }
  if (permissions === undefined || (options.patch && permissions === null)) return { data, permissions: undefined };
  if (!isPlainObject(permissions)) throw invalidParameter('body', 'permissions', `${JSON.stringify(permissions)} is not a mapping type`);
  const parsed: Record<string, string[] | null> = {};
  for (const [name, principals] of Object.entries(permissions)) {
    if (!PERMISSION_NAMES.includes(name)) throw invalidParameter('body', `permissions.${name}`, `"${name}" is not one of ${PERMISSION_NAMES.join(', ')}`);
    if (principals === null && options.patch) {
      parsed[name] = null;
      continue;
    }
    if (!Array.isArray(principals) || !principals.every((principal) => typeof principal === 'string')) {
      throw invalidParameter('body', `permissions.${name}`, `${JSON.stringify(principals)} is not a list of principals`);
    }
    parsed[name] = [...new Set(principals as string[])];
  }
  return { data, permissions: parsed };
}

/** The account as shown on the wire: everything but the password hash. */
export function publicAccount(account: Record<string, unknown>): Record<string, unknown> {
  const { password: _password, ...shown } = account;
  return shown;
}

/** 503 (errno 201) when a mail the request depends on could not be sent; other errors as they are. */
export function mailUnavailable(error: unknown, retryAfterSeconds: number): unknown {
  if (!(error instanceof MailError)) return error;
  return new ApiError(503, ERRNO.BACKEND, {
    message: 'The mail could not be sent, please retry later.',
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

function holdsAny(principals: readonly string[], granted: readonly string[] | undefined): boolean {
  return (granted ?? []).some((principal) => principals.includes(principal));
}

function validateAccountId(id: unknown): string {
  if (typeof id !== 'string' || !ACCOUNT_ID_PATTERN.test(id)) throw invalidParameter('path', null, 'Invalid object id');
  return id;
}

function requirePassword(data: Record<string, unknown>): string {
  const password = data.password;
  if (password === undefined || password === null || password === '') throw invalidParameter('body', 'data.password', 'Required');
  if (typeof password !== 'string') throw invalidParameter('body', 'data.password', `${JSON.stringify(password)} is not a string`);
  return password;
}

export function createAccountHandlers(services: Services, policy: AccountPolicy, mails: AccountMails | null) {
  const { storage, settings, authorizer, events } = services;
  /** Sessions that deliver the account events (§10) to the configured listeners. */
  const withSession = <T>(request: FastifyRequest, mode: 'read' | 'write', fn: (session: StorageSession) => Promise<T>) =>
    events.withSession(request, storage, mode, fn);

  /** Events carry the account without its password hash, as the responses do. */
  const shown = (object: StoredObject | Tombstone) => publicAccount({ ...object }) as StoredObject;
  function emitChange(session: StorageSession, request: FastifyRequest, action: 'create' | 'update' | 'delete', stored: StoredObject | Tombstone, old: StoredObject | null): void {
    events.emit(session, request, {
      resourceName: 'account',
      parentId: ACCOUNT_SCOPE.parentId,
      action,
      timestamp: stored.last_modified,
      impactedObjects: [old ? { new: shown(stored), old: shown(old) } : { new: shown(stored) }],
    });
  }
  /** `read` events (§10.1), for the listeners that ask for them. */
  function emitRead(session: StorageSession, request: FastifyRequest, timestamp: number, objects: StoredObject[]): void {
    if (!events.wants('read', 'account')) return;
    events.emit(session, request, { resourceName: 'account', parentId: ACCOUNT_SCOPE.parentId, action: 'read', timestamp, impactedObjects: objects.map((object) => ({ new: shown(object) })) });
  }
  const emailPattern = new RegExp(settings.account_validation_email_regexp);

  const isAdmin = (identity: Identity) => holdsAny(identity.principals, settings.account_write_principals);
  const readsAll = (identity: Identity) => isAdmin(identity) || holdsAny(identity.principals, settings.account_read_principals);
  const mayCreate = (identity: Identity) => holdsAny(identity.principals, settings.account_create_principals);

  async function aclOf(session: StorageSession, id: string): Promise<Permissions> {
    return (await session.permissions.get([accountUri(id)])).get(accountUri(id)) ?? {};
  }

  /** §9.2 for accounts: object ACEs (`write` implies `read`) or the settings. */
  async function may(session: StorageSession, identity: Identity, id: string, permission: 'read' | 'write'): Promise<boolean> {
    if (isAdmin(identity) || (permission === 'read' && readsAll(identity))) return true;
    const acl = await aclOf(session, id);
    return holdsAny(identity.principals, acl.write) || (permission === 'read' && holdsAny(identity.principals, acl.read));
  }

  /**
   * Who acts on an existing account: its owner or an administrator, or (validation flow) the
   * holder of a temporary password sending only a new password. Else 401/403.
   */
  async function requireWrite(session: StorageSession, request: FastifyRequest, id: string, sentData: unknown): Promise<'allowed' | 'reset'> {
    if (await may(session, request.identity, id, 'write')) return 'allowed';
    if (settings.account_validation && (await useTemporaryPassword(session, settings, request.headers.authorization, id, sentData))) return 'reset';
    throw denied(services, request.identity);
  }

  /**
   * The data stored for a creation or a replacement: the sent fields, the password hashed,
   * `validated` managed by the server (only administrators may set it).
   */
  async function accountData(
    sent: Record<string, unknown>,
    existing: StoredObject | null,
    identity: Identity,
    password: string | null,
  ): Promise<Record<string, unknown>> {
    const { [EMAIL_CONTEXT]: _context, validated, ...fields } = userFields(sent);
    const data: Record<string, unknown> = { ...fields };
    data.password = password === null ? existing?.password : await hashPassword(password);
    if (!existing && settings.account_validation) data.validated = false;
    else if (isAdmin(identity) && typeof validated === 'boolean') data.validated = validated;
    else if (existing && Object.hasOwn(existing, 'validated')) data.validated = existing.validated;
    return data;
  }

  /** Creation checks Kinto makes in `process_object`: e-mail ids in validation mode, own id only. */
  function checkCreation(identity: Identity, id: string): void {
    if (settings.account_validation && !emailPattern.test(id)) {
      throw invalidParameter('body', 'data.id', `Account validation is enabled, and user id should match ${settings.account_validation_email_regexp}`);
    }
    checkOwnId(identity, id);
  }

  function checkOwnId(identity: Identity, id: string): void {
    if (identity.userId === null || isAdmin(identity)) return;
    if (accountIdOf(identity.userId) !== id) throw invalidParameter('body', 'data.id', 'Username and account ID do not match.');
  }

  /** Stores a new or replaced account with its ACL (`account:<id>` always a writer) and answers. */
  async function storeAccount(
    session: StorageSession,
    identity: Identity,
    id: string,
    existing: StoredObject | null,
    body: AccountBody,
    reply: FastifyReply,
  ) {
    const sent = body.data ?? {};
    const data = await accountData(sent, existing, identity, requirePassword(sent));
    const options = writeOptions(suppliedTimestamp(body.data), existing);
    const stored = existing ? await session.objects.update(ACCOUNT_SCOPE, id, data, options) : await session.objects.create(ACCOUNT_SCOPE, id, data, options);

    const given = body.permissions && Object.keys(body.permissions).length > 0 ? body.permissions : null;
    const acl: Permissions = {};
    for (const [name, principals] of Object.entries(given ?? (existing ? await aclOf(session, id) : {}))) {
      if (principals && principals.length > 0) acl[name] = principals;
    }
    const owner = accountUserId(id);
    acl.write = [...new Set([...(acl.write ?? []), owner])];
    await session.permissions.set(accountUri(id), acl);
    emitChange(session, reply.request, existing ? 'update' : 'create', stored, existing);

    if (!existing && settings.account_validation && mails) {
      const key = await createActivationKey(session, settings, id);
      // Inside the transaction: when the mail cannot be sent, the account is not created and the
      // client may simply retry.
      await mails.sendActivation(publicAccount(stored), key, sent[EMAIL_CONTEXT]).catch((error: unknown) => {
        throw mailUnavailable(error, settings.retry_after_seconds);
      });
    }
    setTimestampHeaders(reply, stored.last_modified);
    reply.code(existing ? 200 : 201);
    // The author acts as `account:<id>` (Kinto's current principal for accounts): the ACL is shown.
    return { data: publicAccount(stored), permissions: acl };
  }

  async function listAccounts(request: FastifyRequest, reply: FastifyReply, method: 'GET' | 'HEAD') {
    const identity = request.identity;
    const all = readsAll(identity);
    if (!all && identity.userId === null) {
      // Kinto answers anonymous listings with this error built without errno (999).
      const challenges = services.policies.map((policy) => policy.challenge);
      throw new ApiError(401, ERRNO.UNDEFINED, {
        error: 'Cannot read accounts.',
        headers: challenges.length ? { 'WWW-Authenticate': challenges.join(', ') } : {},
      });
    }
    const query = parseListQuery(splitUrl(request.raw.url).query);
    const mentionsPassword = (field: string) => field === 'password' || field.startsWith('password.');
    for (const filter of query.filters) {
      if (mentionsPassword(filter.field)) throw invalidParameter('querystring', filter.field, `Unknown filter field '${filter.field}'`);
    }
    for (const sort of query.sorting) {
      if (mentionsPassword(sort.field)) throw invalidParameter('querystring', null, `Unknown sort field '${sort.field}'`);
    }
    if (query.fields?.some(mentionsPassword)) throw invalidParameter('querystring', '_fields', 'Fields password do not exist');
    const preconditions = parsePreconditions(request.headers);
    const ownId = accountIdOf(identity.userId);

    return withSession(request, 'read', async (session) => {
      const timestamp = await session.objects.timestamp(ACCOUNT_SCOPE);
      const outcome = checkListPreconditions(preconditions, timestamp, method);
      setTimestampHeaders(reply, timestamp);
      setCacheHeaders(reply, 0); // accounts are never cacheable (§12.5)
      if (outcome === 'not-modified') return reply.code(304).send();

      const filters: Filter[] = [...query.filters];
      // Users see their own account only (none for users of other policies).
      const visible = all || (ownId !== null && (await may(session, identity, ownId, 'read')));
      if (!all) filters.push({ field: 'id', operator: 'in', value: visible && ownId !== null ? [ownId] : [] });
      // Invisible: the `in` filter above selects nothing.
      if (method === 'HEAD') return sendCount(reply, session, ACCOUNT_SCOPE, filters);
      if (!visible) return { data: [] };
      const items = (await readPage(services, request, reply, session, ACCOUNT_SCOPE, query, filters, 'GET')) as StoredObject[];
      emitRead(session, request, timestamp, items);
      const accounts = items.map((item) => publicAccount(item));
      return { data: query.fields ? accounts.map((item) => projectFields(item, query.fields as string[])) : accounts };
    });
  }

  /**
   * After a password change or a deletion: this process forgets the remembered password; a
   * password reset also clears the failures that locked the account from the caller's address.
   */
  async function afterPasswordChange(request: FastifyRequest, id: string, reset: boolean): Promise<void> {
    policy.credentials.forget(id);
    if (reset) await policy.limiter.forgetFailures(id, policy.loginAddress({ headers: request.headers, ip: request.batch?.ip ?? request.ip }));
  }

  return {
    async getList(request: FastifyRequest, reply: FastifyReply) {
      return listAccounts(request, reply, request.method === 'HEAD' ? 'HEAD' : 'GET');
    },

    async create(request: FastifyRequest, reply: FastifyReply) {
      const identity = request.identity;
      const body = parseBody(request.body, { patch: false });
      const preconditions = parsePreconditions(request.headers);
      const givenId = body.data?.id;
      if (givenId === undefined) {
        // Kinto's two wordings: before (anonymous, administrators) and after resolving the caller.
        throw identity.userId === null || isAdmin(identity)
          ? invalidParameter('body', 'data.id', 'data.id in body: Required')
          : invalidParameter('body', 'data.id', 'Accounts must have an ID.');
      }
      const id = validateAccountId(givenId);
      const result = await withSession(request, 'write', async (session) => {
        const existing = await session.objects.get(ACCOUNT_SCOPE, id, FOR_UPDATE);
        if (existing) {
          // POST of an existing id answers it unchanged (§2), to those who may read it.
          if (!(await may(session, identity, id, 'read'))) throw denied(services, identity);
          checkObjectPreconditions(preconditions, existing, publicAccount(existing), { method: 'POST' });
          emitRead(session, request, existing.last_modified, [existing]);
          setTimestampHeaders(reply, existing.last_modified);
          return { data: publicAccount(existing), permissions: authorizer.visiblePermissions(identity.principals, await aclOf(session, id)) };
        }
        if (!mayCreate(identity)) throw denied(services, identity);
        checkObjectPreconditions(preconditions, null, null, { method: 'POST' });
        checkCreation(identity, id);
        return storeAccount(session, identity, id, null, body, reply);
      });
      return result;
    },

    async get(request: FastifyRequest, reply: FastifyReply) {
      const identity = request.identity;
      const id = (request.params as { account_id: string }).account_id;
      const preconditions = parsePreconditions(request.headers);
      const query = parseListQuery(splitUrl(request.raw.url).query);
      return withSession(request, 'read', async (session) => {
        if (!(await may(session, identity, id, 'read'))) throw denied(services, identity);
        validateAccountId(id);
        const account = await session.objects.get(ACCOUNT_SCOPE, id);
        if (!account) throw objectNotFound('account', id);
        const outcome = checkObjectPreconditions(preconditions, account, publicAccount(account), { method: 'GET' });
        setTimestampHeaders(reply, account.last_modified);
        setCacheHeaders(reply, 0); // accounts are never cacheable (§12.5)
        if (outcome === 'not-modified') return reply.code(304).send();
        emitRead(session, request, account.last_modified, [account]);
        const data = publicAccount(account);
        const acl = await aclOf(session, id);
        return { data: query.fields ? projectFields(data, query.fields) : data, permissions: authorizer.visiblePermissions(identity.principals, acl) };
      });
    },

    async put(request: FastifyRequest, reply: FastifyReply) {
      const identity = request.identity;
      const id = (request.params as { account_id: string }).account_id;
      const preconditions = parsePreconditions(request.headers);
      const body = parseBody(request.body, { patch: false });
      let usedTemporaryPassword = false;
      const result = await withSession(request, 'write', async (session) => {
        const existing = await session.objects.get(ACCOUNT_SCOPE, id, FOR_UPDATE);
        if (existing && preconditions.ifNoneMatch?.kind !== 'any') {
          const access = await requireWrite(session, request, id, body.data);
          if (access === 'allowed') checkOwnId(identity, id);
          else usedTemporaryPassword = true;
        } else {
          if (!mayCreate(identity)) throw denied(services, identity);
          validateAccountId(id);
        }
        checkObjectPreconditions(preconditions, existing, existing && publicAccount(existing), { method: 'PUT' });
        assertBodyMatchesId(body.data, id);
        if (!existing) checkCreation(identity, id);
        return storeAccount(session, identity, id, existing, body, reply);
      });
      await afterPasswordChange(request, id, usedTemporaryPassword);
      return result;
    },

    async patch(request: FastifyRequest, reply: FastifyReply) {
      const identity = request.identity;
      const id = (request.params as { account_id: string }).account_id;
      const preconditions = parsePreconditions(request.headers);
      const behavior = responseBehavior(request);
      const type = patchType(request);
      if (type === 'json-patch') {
        // Account data has one meaningful field: JSON-Patch is not offered here.
        throw new ApiError(415, ERRNO.INVALID_PARAMETERS, {
          error: 'Invalid parameters',
          message: "Content-Type header should be one of ['application/json', 'application/merge-patch+json']",
          details: [{ location: 'header', name: 'Content-Type', description: "Content-Type header should be one of ['application/json', 'application/merge-patch+json']" }],
        });
      }
      const body = parseBody(request.body, { patch: true });
      if (body.data === undefined && body.permissions === undefined) throw invalidParameter('body', 'data', 'Provide at least one of data or permissions');
      let usedTemporaryPassword = false;
      const result = await withSession(request, 'write', async (session) => {
        const existing = await session.objects.get(ACCOUNT_SCOPE, id, FOR_UPDATE);
        const access = await requireWrite(session, request, id, body.data);
        validateAccountId(id);
        if (!existing) throw objectNotFound('account', id);
        if (access === 'allowed') checkOwnId(identity, id);
        else usedTemporaryPassword = true;
        checkObjectPreconditions(preconditions, existing, publicAccount(existing), { method: 'PATCH' });
        assertBodyMatchesId(body.data, id);

        const sent = body.data ?? {};
        const current = publicAccount(userFields(existing));
        const changes = publicAccount(userFields(sent));
        const merged = type === 'merge-patch'
          ? (mergePatch.apply(structuredClone(current), changes) as Record<string, unknown>)
          : { ...current, ...changes };
        const password = Object.hasOwn(sent, 'password') ? requirePassword(sent) : null;
        const data = await accountData(merged, existing, identity, password);
        const stored = await session.objects.update(ACCOUNT_SCOPE, id, data, writeOptions(suppliedTimestamp(body.data), existing));

        const acl = mergePermissions(await aclOf(session, id), body.permissions ?? {}, type);
        acl.write = [...new Set([...(acl.write ?? []), accountUserId(id)])];
        await session.permissions.set(accountUri(id), acl);
        emitChange(session, request, 'update', stored, existing);
        setTimestampHeaders(reply, stored.last_modified);

        return { data: patchResponseData(behavior, changes, publicAccount(stored), existing), permissions: acl };
      });
      await afterPasswordChange(request, id, usedTemporaryPassword);
      return result;
    },

    async delete(request: FastifyRequest, reply: FastifyReply) {
      const identity = request.identity;
      const id = (request.params as { account_id: string }).account_id;
      const preconditions = parsePreconditions(request.headers);
      const supplied = new URLSearchParams(splitUrl(request.raw.url).query).get('last_modified');
      const result = await withSession(request, 'write', async (session) => {
        if (!(await may(session, identity, id, 'write'))) throw denied(services, identity);
        validateAccountId(id);
        const existing = await session.objects.get(ACCOUNT_SCOPE, id, FOR_UPDATE);
        if (!existing) throw objectNotFound('account', id);
        checkObjectPreconditions(preconditions, existing, publicAccount(existing), { method: 'DELETE' });
        const suppliedValue = supplied !== null && /^\d+$/.test(supplied) ? Number(supplied) : undefined;
        const tombstone = await session.objects.delete(ACCOUNT_SCOPE, id, writeOptions(suppliedValue, existing));
        // As Kinto: the account's own ACEs go; its principal stays wherever others listed it.
        await session.permissions.deleteTree(accountUri(id));
        emitChange(session, request, 'delete', tombstone, existing);
        setTimestampHeaders(reply, tombstone.last_modified);
        return { data: tombstone };
      });
      await afterPasswordChange(request, id, false);
      return result;
    },
  };
}
