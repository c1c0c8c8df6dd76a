/**
 * Who is signed in where: the server URL and the `Authorization` header to send.
 *
 * A password — Basic auth, for an account or `basicauth` — is kept in this module's memory only,
 * for the tab's life: never in Web Storage, where any script of the page reads it in clear (a
 * Basic header is the password in base64). After a reload the sign-in screen asks for it again.
 * An OpenID access token is short-lived and the provider's login leaves the page, so it is
 * kept: in sessionStorage (this tab only) or, with "Keep me signed in", in localStorage.
 */
import type { OpenIdProvider } from '@quire/client/admin';

export type AuthKind = 'account' | 'basicauth' | 'openid' | 'anonymous';

export interface Session {
  server: string;
  kind: AuthKind;
  /** The `Authorization` header (null: anonymous). */
  authorization: string | null;
  /** What the person typed or chose: a username, or the OpenID provider's name. */
  label: string;
}

const KEY = 'quire-console.session';
const LAST_SERVER = 'quire-console.server';
const PENDING_OPENID = 'quire-console.openid';

export function basicAuthorization(username: string, password: string): string {
  const bytes = new TextEncoder().encode(`${username}:${password}`);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `Basic ${btoa(binary)}`;
}

/** This tab's session when it holds a password (never stored). */
let inMemory: Session | null = null;

/** Whether a session may be stored: no password in it (OpenID tokens, anonymous). */
const storable = (session: Session) => session.kind === 'openid' || session.kind === 'anonymous';

export function loadSession(): Session | null {
  if (inMemory) return inMemory;
  const text = sessionStorage.getItem(KEY) ?? localStorage.getItem(KEY);
  if (!text) return null;
  try {
    const session = JSON.parse(text) as Session;
    if (typeof session.server !== 'string') return null;
    // Earlier versions stored Basic credentials too: forgotten, the password is asked again.
    if (!storable(session)) {
      clearSession();
      return null;
    }
    return session;
  } catch {
    return null;
  }
}

export function saveSession(session: Session, remember: boolean): void {
  clearSession();
  if (storable(session)) (remember ? localStorage : sessionStorage).setItem(KEY, JSON.stringify(session));
  else inMemory = session;
  localStorage.setItem(LAST_SERVER, session.server);
}

export function clearSession(): void {
  inMemory = null;
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}

/**
 * The server to propose on the sign-in screen: the last one used, else the one serving the
 * console (`…/v1/admin/` → `…/v1`), else a local default.
 */
export function defaultServer(location: Location = window.location): string {
  const last = localStorage.getItem(LAST_SERVER);
  if (last) return last;
  const match = /^(.*\/v1)\/admin\/?/.exec(location.pathname);
  if (match && location.protocol.startsWith('http')) return `${location.origin}${match[1]}`;
  return 'http://127.0.0.1:8888/v1';
}

/** The URL the OpenID login of the server comes back to (`#/auth/<provider>/<token>`). */
function openIdCallback(provider: string, location: Location = window.location): string {
  return `${location.origin}${location.pathname}${location.search}#/auth/${encodeURIComponent(provider)}/`;
}

/** Starts an OpenID login through the server (§13.4): the browser leaves for the provider. */
export function startOpenIdLogin(server: string, provider: OpenIdProvider, remember: boolean): void {
  sessionStorage.setItem(PENDING_OPENID, JSON.stringify({ server, provider, remember }));
  const query = new URLSearchParams({ callback: openIdCallback(provider.name), scope: 'openid email' });
  window.location.assign(`${server}${provider.auth_path}?${query}`);
}

/**
 * The end of an OpenID login: the server appended the provider's token response, base64 of its
 * JSON, to the callback. Returns the session, or throws a message for the sign-in screen.
 */
export function finishOpenIdLogin(providerName: string, encoded: string): { session: Session; remember: boolean } {
  const pending = sessionStorage.getItem(PENDING_OPENID);
  sessionStorage.removeItem(PENDING_OPENID);
  if (!pending) throw new Error('This sign-in link was not started from this tab. Start again.');
  const { server, provider, remember } = JSON.parse(pending) as {
    server: string;
    provider: OpenIdProvider;
    remember: boolean;
  };
  if (provider.name !== providerName) throw new Error(`Expected a sign-in with ${provider.name}, got ${providerName}.`);
  const token = parseTokenResponse(encoded);
  return {
    session: {
      server,
      kind: 'openid',
      authorization: `${provider.header_type ?? 'Bearer'} ${token}`,
      label: provider.name,
    },
    remember,
  };
}

/** The access token of a provider's token response, as the server forwards it (base64 of JSON). */
export function parseTokenResponse(encoded: string): string {
  let text: string;
  try {
    text = atob(decodeURIComponent(encoded).replace(/-/g, '+').replace(/_/g, '/'));
  } catch {
    throw new Error('The sign-in answer could not be read (not base64).');
  }
  let parsed: { access_token?: unknown; error?: unknown; error_description?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    throw new Error('The sign-in answer could not be read (not JSON).');
  }
  if (typeof parsed.access_token !== 'string' || !parsed.access_token) {
    const reason =
      typeof parsed.error_description === 'string'
        ? parsed.error_description
        : typeof parsed.error === 'string'
          ? parsed.error
          : 'no access token';
    throw new Error(`The provider refused the sign-in: ${reason}.`);
  }
  return parsed.access_token;
}
