/**
 * Who uses this tab: an account of the server's accounts plugin, or nobody (local-only lists).
 *
 * - Accounts signed in on this device are remembered in localStorage — their name and bucket,
 *   nothing secret — so that a reload, or a new tab while offline, opens their lists at once.
 * - Which of them this tab uses is kept in sessionStorage: two windows can be two users.
 * - The password is kept in this module's memory only, for this tab's life: never in Web
 *   Storage, where any script of the page reads it in clear (and where it outlived the tab).
 *   The accounts plugin authenticates every request with Basic auth and issues no token, so
 *   after a reload the lists work offline at once and syncing waits for the password to be
 *   typed again (the workspace asks for it). A production app would use OpenID Connect tokens.
 */
import { createClient, QuireError, ServerError } from '@quire/client';
import { UserError } from './errors.js';

export interface AccountSession {
  kind: 'account';
  username: string;
  /** The user's personal bucket id (what `default` stands for), from `GET /v1/`. */
  bucket: string;
}

/** This tab's passwords, by username: in memory, never stored. */
const passwords = new Map<string, string>();

/** The `Authorization` header of an account signed in (or unlocked) in this tab; null otherwise. */
export function authorizationOf(username: string): string | null {
  const password = passwords.get(username);
  if (password === undefined) return null;
  const bytes = new TextEncoder().encode(`${username}:${password}`);
  return `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

export type Session = AccountSession | { kind: 'local' };

const REMEMBERED_KEY = 'quire-demo:accounts';
const ACTIVE_KEY = 'quire-demo:active';
const LOCAL = '(local)';

/** The accounts plugin's id rule (also what `account:<name>` principals contain). */
const USERNAME_PATTERN = /^[a-zA-Z0-9][+.@a-zA-Z0-9_-]*$/;
const MIN_PASSWORD_LENGTH = 6;

export function checkUsername(username: string): string {
  const name = username.trim();
  if (name === '') throw new UserError('Enter a username.');
  if (name.length > 64 || !USERNAME_PATTERN.test(name)) {
    throw new UserError('A username starts with a letter or digit and contains only letters, digits and . _ - + @');
  }
  return name;
}

function readRemembered(): AccountSession[] {
  let value: unknown;
  try {
    value = JSON.parse(localStorage.getItem(REMEMBERED_KEY) ?? '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(value)) return [];
  const accounts = (value as Array<Partial<AccountSession> | null>)
    .filter((entry) => entry?.kind === 'account' && typeof entry.username === 'string')
    .map((entry) => ({ kind: 'account' as const, username: entry!.username!, bucket: String(entry!.bucket) }));
  // Earlier versions kept the password here: rewritten without it.
  if (value.some((entry) => entry && typeof entry === 'object' && 'password' in entry)) writeRemembered(accounts);
  return accounts;
}

function writeRemembered(accounts: AccountSession[]): void {
  localStorage.setItem(REMEMBERED_KEY, JSON.stringify(accounts));
}

/** Accounts signed in on this device (newest first). */
export function rememberedAccounts(): AccountSession[] {
  return readRemembered();
}

/** This tab's session, if one was chosen (survives reloads of the tab). */
export function currentSession(): Session | null {
  const active = sessionStorage.getItem(ACTIVE_KEY);
  if (active === null) return null;
  if (active === LOCAL) return { kind: 'local' };
  return readRemembered().find((account) => account.username === active) ?? null;
}

/** Makes `session` this tab's session (and remembers an account on this device). */
export function startSession(session: Session): void {
  if (session.kind === 'account') {
    writeRemembered([session, ...readRemembered().filter((account) => account.username !== session.username)]);
  }
  sessionStorage.setItem(ACTIVE_KEY, session.kind === 'account' ? session.username : LOCAL);
}

/** Leaves the session in this tab; an account is also forgotten on this device. */
export function endSession(session: Session): void {
  sessionStorage.removeItem(ACTIVE_KEY);
  if (session.kind === 'account') {
    passwords.delete(session.username);
    writeRemembered(readRemembered().filter((account) => account.username !== session.username));
  }
}

function loginFailure(error: unknown): never {
  // Quire refuses a wrong password for an existing account with 401 (Kinto: as anonymous, below).
  if (error instanceof ServerError && error.status === 401) throw new UserError('Wrong username or password.');
  if (error instanceof ServerError && error.status === 429)
    throw new UserError('Too many failed attempts. Wait a few minutes and try again.');
  if (error instanceof QuireError && error.code.startsWith('QUIRE_ERR_TRANSPORT')) {
    throw new UserError(
      'Cannot reach the Quire server. Logging in needs a connection (lists you already opened here work offline).',
    );
  }
  throw error;
}

/** Checks the password with `GET /v1/` (the server names the authenticated user) and returns the session. */
export async function logIn(remote: string, username: string, password: string): Promise<AccountSession> {
  const name = checkUsername(username);
  if (password === '') throw new UserError('Enter your password.');
  const client = createClient({ remote, auth: { type: 'basic', username: name, password }, retries: 0 });
  try {
    const info = await client.remote.serverInfo().catch(loginFailure);
    if (info.user?.id !== `account:${name}`) throw new UserError('Wrong username or password.');
    if (!info.user.bucket)
      throw new UserError('This server has no personal buckets (default_bucket is disabled); the demo needs them.');
    passwords.set(name, password);
    return { kind: 'account', username: name, bucket: info.user.bucket };
  } finally {
    await client.close();
  }
}

/** Creates the account (`PUT /v1/accounts/<name>`, refused if the name is taken), then logs in. */
export async function signUp(remote: string, username: string, password: string): Promise<AccountSession> {
  const name = checkUsername(username);
  if (password.length < MIN_PASSWORD_LENGTH)
    throw new UserError(`Choose a password of at least ${MIN_PASSWORD_LENGTH} characters.`);
  const client = createClient({ remote, retries: 0 });
  try {
    await client.remote
      .request({
        method: 'PUT',
        path: `/accounts/${encodeURIComponent(name)}`,
        headers: { 'If-None-Match': '*' },
        body: { data: { password } },
      })
      .catch((error: unknown) => {
        if (error instanceof ServerError && error.status === 412)
          throw new UserError(`The username “${name}” is taken. Choose another one, or log in.`);
        if (error instanceof ServerError && (error.status === 401 || error.status === 403))
          throw new UserError('This server does not allow signing up.');
        if (error instanceof ServerError && error.status === 404)
          throw new UserError('This server has no accounts (the accounts plugin is not enabled).');
        loginFailure(error);
      });
  } finally {
    await client.close();
  }
  return logIn(remote, name, password);
}
