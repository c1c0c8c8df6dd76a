/**
 * The OpenID login helpers of protocol-reference §13.4, for clients (e.g. kinto-admin) that let
 * the server hold the client secret:
 * - `GET /v1/openid/<name>/login?callback=&scope=[&prompt=none]` → 307 to the provider's
 *   authorization endpoint, with a signed `state` that carries the callback;
 * - `GET /v1/openid/<name>/token?code=&state=` → exchanges the code at the token endpoint, then
 *   307 to `callback + quote(base64(<provider response text>))`.
 * These routes log nothing at info level: their URLs and redirects carry codes and tokens.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERRNO, invalidParameter, invalidParameters, methodNotAllowed, type ValidationDetail } from '../../errors.js';
import { baseUrl } from '../../http/base-url.js';
import { LoginStateCodec } from './login-state.js';
import type { OpenIdPolicy } from './policy.js';
import { callProvider, ProviderUnavailableError, unavailableError } from './provider-client.js';

type Query = Record<string, unknown>;

/** The OpenID policies by name, each with the codec of its login states. */
type Providers = Map<string, { policy: OpenIdPolicy; states: LoginStateCodec }>;

export function registerOpenIdViews(app: FastifyInstance, policies: OpenIdPolicy[]): void {
  const providers: Providers = new Map(
    policies.map((policy) => [policy.name, { policy, states: stateCodecFor(policy, app) }]),
  );
  const login = (request: FastifyRequest, reply: FastifyReply) => loginView(providers, request, reply);
  const token = (request: FastifyRequest, reply: FastifyReply) => tokenView(providers, request, reply);
  const refuse = async () => {
    throw methodNotAllowed(['GET']);
  };
  for (const [path, handler] of [
    ['/v1/openid/:provider/login', login],
    ['/v1/openid/:provider/token', token],
  ] as const) {
    app.route({ method: 'GET', url: path, handler, logLevel: 'warn' });
    app.route({ method: ['HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], url: path, handler: refuse, logLevel: 'warn' });
  }
}

/** The provider of the URL, or a 400 detail (Kinto's provider_validator). */
function lookup(providers: Providers, request: FastifyRequest, details: ValidationDetail[]) {
  const name = (request.params as { provider: string }).provider;
  const found = providers.get(name);
  if (!found) details.push({ location: 'path', name: 'provider', description: `Unknown provider '${name}'` });
  return found;
}

function tokenUrl(request: FastifyRequest, name: string): string {
  return `${baseUrl(request.server.services.settings, request)}/v1/openid/${encodeURIComponent(name)}/token`;
}

/** `login`: 307 to the provider's authorization endpoint. */
async function loginView(providers: Providers, request: FastifyRequest, reply: FastifyReply) {
  const { settings } = request.server.services;
  const query = request.query as Query;
  const details: ValidationDetail[] = [];
  const found = lookup(providers, request, details);
  const callback = requiredString(query, 'callback', details);
  const scope = requiredString(query, 'scope', details);
  const prompt = query.prompt;
  if (callback !== null && !isHttpUrl(callback))
    details.push({ location: 'querystring', name: 'callback', description: 'Must be a URL' });
  if (prompt !== undefined && prompt !== 'none') {
    details.push({ location: 'querystring', name: 'prompt', description: 'String does not match expected pattern' });
  }
  if (details.length || !found || callback === null || scope === null) throw invalidParameters(details);
  const { policy, states } = found;

  if (policy.provider.useridField === 'email' && !scope.includes('email')) {
    throw invalidParameter('body', 'scope', `Provider ${policy.name} requires 'email' scope`);
  }
  if (!callbackAllowed(callback, settings.openid_callback_origins)) {
    throw invalidParameter(
      'querystring',
      'callback',
      'callback origin is not allowed (setting openid_callback_origins)',
    );
  }

  const params = new URLSearchParams({
    client_id: policy.provider.clientId,
    response_type: 'code',
    scope,
    redirect_uri: tokenUrl(request, policy.name),
    state: states.issue(callback),
  });
  if (prompt === 'none') params.set('prompt', 'none');
  const authorization = policy.endpoints.authorization_endpoint;
  return reply.redirect(`${authorization}${authorization.includes('?') ? '&' : '?'}${params}`, 307);
}

/** `token`: the code exchanged at the provider, its answer sent to the login's callback. */
async function tokenView(providers: Providers, request: FastifyRequest, reply: FastifyReply) {
  const query = request.query as Query;
  const details: ValidationDetail[] = [];
  const found = lookup(providers, request, details);
  const code = requiredString(query, 'code', details);
  const state = requiredString(query, 'state', details);
  if (details.length || !found || code === null || state === null) throw invalidParameters(details);
  const { policy, states } = found;

  // State can be used only once. Kinto adds errno 105 to the detail but answers 400/107.
  const callback = states.consume(state);
  if (callback === null) {
    throw invalidParameters([
      {
        location: 'body',
        name: 'state',
        description: 'Invalid state',
        errno: ERRNO.INVALID_AUTH_TOKEN,
      } as ValidationDetail,
    ]);
  }
  const text = await exchangeCode(request, policy, code);
  // The provider's answer (tokens, or its error) goes to the client as is, as Kinto does.
  const encoded = Buffer.from(text, 'utf8').toString('base64');
  return reply.redirect(callback + encodeURIComponent(encoded).replaceAll('%2F', '/'), 307);
}

/** The token endpoint's answer to `code`, as text (503 when the provider cannot be reached). */
async function exchangeCode(request: FastifyRequest, policy: OpenIdPolicy, code: string): Promise<string> {
  const { settings } = request.server.services;
  try {
    const { text } = await callProvider(
      policy.endpoints.token_endpoint,
      {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
        body: new URLSearchParams({
          code,
          client_id: policy.provider.clientId,
          client_secret: policy.provider.clientSecret,
          redirect_uri: tokenUrl(request, policy.name),
          grant_type: 'authorization_code',
        }).toString(),
      },
      settings.openid_http_timeout_seconds,
    );
    return text;
  } catch (error) {
    if (error instanceof ProviderUnavailableError)
      throw Object.assign(unavailableError(settings.retry_after_seconds), { cause: error });
    throw error;
  }
}

/**
 * States must be readable by every server process: signed with a key derived from the shared
 * `userid_hmac_secret`, else from the client secret; a public client without either gets a
 * per-process key (the login then only works when both steps reach the same process).
 */
function stateCodecFor(policy: OpenIdPolicy, app: FastifyInstance): LoginStateCodec {
  const { settings } = app.services;
  const shared = settings.userid_hmac_secret ?? (policy.provider.clientSecret || null);
  const key =
    shared === null ? randomBytes(32) : createHmac('sha256', shared).update(`openid-state:${policy.name}`).digest();
  return new LoginStateCodec(
    key,
    policy.provider.stateTtlSeconds,
    policy.provider.stateLength,
    settings.openid_cache_max_entries,
  );
}

function requiredString(query: Query, name: string, details: ValidationDetail[]): string | null {
  const value = query[name];
  if (typeof value === 'string' && value !== '') return value;
  details.push({ location: 'querystring', name, description: 'Required' });
  return null;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** `*` allows any callback; otherwise its origin must be listed. */
function callbackAllowed(callback: string, origins: string[]): boolean {
  if (origins.includes('*')) return true;
  return origins.includes(new URL(callback).origin);
}
