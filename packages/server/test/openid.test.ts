/**
 * OpenID Connect (protocol-reference §13.4) against a real provider: `oidc-provider` listening on
 * loopback issues the tokens. The test drives Kinto's login dance over HTTP (our /login → the
 * provider's login and consent pages → our /token → the client's callback), then calls our
 * server with the tokens it got. It counts the provider's userinfo calls to see the cache work.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { ConfigError, loadSettings, type Settings } from '../src/config.js';
import { createSqliteStorage, type SqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import { clientFrom } from './helpers/from-address.js';

const CLIENT_SECRET = 'quire-client-secret-do-not-log';
const CALLBACK = 'http://app.test/#/auth/tokens=';
const API_AUDIENCE = 'https://quire.test';

// oidc-provider ships no type declarations; a variable specifier keeps tsc from looking for them.
interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  Grant: new (init: {
    accountId: string;
    clientId: string;
  }) => { addOIDCScope(scope: string): void; save(): Promise<string> };
}
type OidcProviderClass = new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;

/** A real OpenID provider on a loopback port, counting the calls it gets per path. */
class TestProvider {
  readonly calls = new Map<string, number>();
  /** Calls in progress per path, and the most seen at once. */
  readonly inFlight = new Map<string, number>();
  readonly mostInFlight = new Map<string, number>();
  /** Milliseconds each userinfo call waits before it is answered (a slow provider). */
  userinfoDelayMs = 0;
  private server!: Server;
  issuer = '';

  async start(): Promise<void> {
    const moduleName = 'oidc-provider';
    const { default: Provider } = (await import(moduleName)) as { default: OidcProviderClass };
    let handler: (req: IncomingMessage, res: ServerResponse) => void = () => undefined;
    this.server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      this.calls.set(path, (this.calls.get(path) ?? 0) + 1);
      const now = (this.inFlight.get(path) ?? 0) + 1;
      this.inFlight.set(path, now);
      this.mostInFlight.set(path, Math.max(now, this.mostInFlight.get(path) ?? 0));
      res.once('close', () => this.inFlight.set(path, (this.inFlight.get(path) ?? 1) - 1));
      if (path === '/me' && this.userinfoDelayMs > 0) setTimeout(() => handler(req, res), this.userinfoDelayMs);
      else handler(req, res);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.issuer = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    const provider = new Provider(this.issuer, {
      clients: [
        {
          client_id: 'quire',
          client_secret: CLIENT_SECRET,
          // A native client may use any loopback port: our server's port is chosen at random.
          application_type: 'native',
          redirect_uris: ['http://127.0.0.1/v1/openid/idp/token'],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_post',
        },
        {
          client_id: 'robot',
          client_secret: 'robot-secret',
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
        },
        {
          client_id: 'brief-robot',
          client_secret: 'robot-secret',
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
        },
      ],
      claims: { openid: ['sub'], email: ['email'] },
      clockTolerance: 0, // (default 15 s) so that 1-second tokens expire at once
      findAccount: async (_ctx: unknown, id: string) => ({
        accountId: id,
        claims: async () => ({ sub: id, email: `${id}@example.test` }),
      }),
      features: {
        devInteractions: { enabled: true },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string) => oneOf,
          useGrantedResource: async () => false,
          getResourceServerInfo: async () => ({
            scope: 'api',
            audience: API_AUDIENCE,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          }),
        },
      },
      // Accounts named "brief-*" get 1-second tokens, to see expired tokens refused.
      ttl: {
        AccessToken: (_ctx: unknown, token: { accountId?: string }) =>
          token.accountId?.startsWith('brief') ? 1 : 3600,
        ClientCredentials: (_ctx: unknown, _token: unknown, client: { clientId: string }) =>
          client.clientId === 'brief-robot' ? 1 : 600,
      },
    });
    handler = provider.callback();
  }

  count(path: string): number {
    return this.calls.get(path) ?? 0;
  }

  /** A JWT access token for our API (client credentials; `sub` is the client id). */
  async clientCredentialsToken(clientId: string): Promise<string> {
    const response = await fetch(`${this.issuer}/token`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: `Basic ${Buffer.from(`${clientId}:robot-secret`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource: API_AUDIENCE, scope: 'api' }).toString(),
    });
    const body = (await response.json()) as { access_token: string };
    expect(response.status).toBe(200);
    return body.access_token;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Server under test on a loopback port, its logs captured. */
async function startQuire(settings: Settings, storage: SqliteStorage) {
  let logs = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs += chunk.toString();
      done();
    },
  });
  const app = await buildServer({ settings, storage, logger: { level: 'trace', stream } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { app, url, logs: () => logs };
}

function quireSettings(issuer: string, extra: Partial<Settings> = {}): Settings {
  return loadSettings({
    env: {},
    overrides: {
      userid_hmac_secret: 'openid-test-secret',
      multiauth_policies: ['basicauth', 'idp', 'mail'],
      openid_providers: [
        { name: 'idp', issuer, client_id: 'quire', client_secret: CLIENT_SECRET, audience: API_AUDIENCE },
        // Same provider, users named by e-mail: its login requires the `email` scope.
        {
          name: 'mail',
          issuer,
          client_id: 'quire',
          client_secret: CLIENT_SECRET,
          userid_field: 'email',
          verification_ttl_seconds: 60,
        },
      ],
      ...extra,
    },
  });
}

/**
 * Kinto's login dance as a browser runs it: our /login, the provider's login and consent pages
 * (its development interactions), our /token, and finally the client's callback, whose URL
 * carries base64 of the provider's token response.
 */
async function loginDance(quireUrl: string, issuer: string, account: string, scope = 'openid email') {
  const cookies = new Map<string, string>();
  const visit = async (url: string, init: RequestInit = {}) => {
    const toProvider = url.startsWith(issuer);
    const headers = new Headers(init.headers);
    if (toProvider && cookies.size)
      headers.set('Cookie', [...cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    if (toProvider) {
      for (const cookie of response.headers.getSetCookie()) {
        const [pair = ''] = cookie.split(';');
        const eq = pair.indexOf('=');
        cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
      }
    }
    return response;
  };

  const login = await visit(`${quireUrl}/v1/openid/idp/login?${new URLSearchParams({ callback: CALLBACK, scope })}`);
  expect(login.status).toBe(307);
  const authorize = new URL(login.headers.get('location') ?? '');
  const tokenRedirects: URL[] = [];
  let response = await visit(authorize.href);
  for (let step = 0; step < 20; step++) {
    if (response.status >= 300 && response.status < 400) {
      const location = new URL(response.headers.get('location') ?? '', response.url || issuer);
      if (location.href.startsWith('http://app.test/')) {
        const encoded = decodeURIComponent(location.href.slice(CALLBACK.length));
        return {
          authorize,
          tokenRedirects,
          tokens: JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as Record<string, string>,
        };
      }
      if (location.href.startsWith(quireUrl)) tokenRedirects.push(location);
      response = await visit(location.href);
      continue;
    }
    // A page of the provider: submit the prompt it shows (login, then consent).
    const page = await response.text();
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
    const action = /action="([^"]+)"/.exec(page)?.[1];
    if (!prompt || !action) throw new Error(`unexpected provider page (${response.status}): ${page.slice(0, 300)}`);
    response = await visit(new URL(action, issuer).href, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ prompt, login: account, password: 'any' }).toString(),
    });
  }
  throw new Error('login dance did not end at the callback');
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('OpenID Connect policy against a real provider', () => {
  const provider = new TestProvider();
  let storage: SqliteStorage;
  let quire: Awaited<ReturnType<typeof startQuire>>;
  let app: FastifyInstance;
  let aliceTokens: Record<string, string>;

  beforeAll(async () => {
    await provider.start();
    storage = await createSqliteStorage();
    quire = await startQuire(quireSettings(provider.issuer), storage);
    app = quire.app;
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await storage?.close();
    await provider.stop().catch(() => undefined);
  });

  const hello = async (headers: Record<string, string> = {}) => {
    const response = await fetch(`${quire.url}/v1/`, { headers });
    return {
      status: response.status,
      body: (await response.json()) as {
        user?: { id: string; principals: string[] };
        capabilities: Record<string, unknown>;
      },
    };
  };

  it('lists the providers in capabilities.openid (§13.4)', async () => {
    const { body } = await hello();
    expect(body.capabilities.openid).toEqual({
      description: 'OpenID connect support.',
      url: 'http://kinto.readthedocs.io/en/stable/api/1.x/authentication.html',
      providers: [
        {
          name: 'idp',
          issuer: provider.issuer,
          auth_path: '/openid/idp/login',
          client_id: 'quire',
          header_type: 'Bearer',
          userinfo_endpoint: `${provider.issuer}/me`,
        },
        {
          name: 'mail',
          issuer: provider.issuer,
          auth_path: '/openid/mail/login',
          client_id: 'quire',
          header_type: 'Bearer',
          userinfo_endpoint: `${provider.issuer}/me`,
        },
      ],
    });
    expect(body.capabilities.basicauth).toBeDefined();
    expect(body.capabilities.idp).toBeUndefined();
  });

  it('runs the login dance: 307 to the provider, code exchanged, 307 to the callback with the tokens', async () => {
    const { authorize, tokenRedirects, tokens } = await loginDance(quire.url, provider.issuer, 'alice');
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${provider.issuer}/auth`);
    expect(authorize.searchParams.get('client_id')).toBe('quire');
    expect(authorize.searchParams.get('response_type')).toBe('code');
    expect(authorize.searchParams.get('scope')).toBe('openid email');
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${quire.url}/v1/openid/idp/token`);
    expect(authorize.searchParams.get('state')).toMatch(/^[0-9a-f]{64}\./);
    // The provider came back to our token endpoint with a code and our state.
    expect(tokenRedirects).toHaveLength(1);
    expect(tokenRedirects[0]?.searchParams.get('state')).toBe(authorize.searchParams.get('state'));
    expect(tokens).toMatchObject({ token_type: 'Bearer', scope: 'openid email' });
    expect(typeof tokens.access_token).toBe('string');
    expect(decodeJwt(tokens.id_token ?? '').sub).toBe('alice');
    aliceTokens = tokens;
  });

  it('authenticates a valid access token: user id <provider name>:<sub>', async () => {
    const before = provider.count('/me');
    const { status, body } = await hello(bearer(aliceTokens.access_token ?? ''));
    expect(status).toBe(200);
    expect(body.user?.id).toBe('idp:alice');
    expect(body.user?.principals).toEqual(
      expect.arrayContaining(['idp:alice', 'system.Everyone', 'system.Authenticated']),
    );
    expect(provider.count('/me')).toBe(before + 1);
  });

  it('answers from its cache the second time (no second userinfo call)', async () => {
    const before = provider.count('/me');
    for (let i = 0; i < 3; i++)
      expect((await hello(bearer(aliceTokens.access_token ?? ''))).body.user?.id).toBe('idp:alice');
    // Concurrent first uses of a token share one call too.
    const { tokens } = await loginDance(quire.url, provider.issuer, 'carol');
    const results = await Promise.all([1, 2, 3].map(() => hello(bearer(tokens.access_token ?? ''))));
    expect(results.map((result) => result.body.user?.id)).toEqual(['idp:carol', 'idp:carol', 'idp:carol']);
    expect(provider.count('/me')).toBe(before + 1);
  });

  it('accepts the scheme case-insensitively and lets the authenticated user write', async () => {
    const response = await fetch(`${quire.url}/v1/buckets/openid-alice`, {
      method: 'PUT',
      headers: { Authorization: `bearer ${aliceTokens.access_token}` },
    });
    expect(response.status).toBe(201);
    const body = (await response.json()) as { permissions: { write: string[] } };
    expect(body.permissions.write).toEqual(['idp:alice']);
  });

  it('treats an unknown token as anonymous: 401 on protected endpoints with every challenge', async () => {
    const before = provider.count('/me');
    const { status, body } = await hello(bearer('not-a-token-the-provider-knows'));
    expect(status).toBe(200);
    expect(body.user).toBeUndefined();
    const response = await fetch(`${quire.url}/v1/buckets/openid-anon`, {
      method: 'PUT',
      headers: bearer('not-a-token-the-provider-knows'),
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { errno: number }).errno).toBe(104);
    const challenges = response.headers.get('www-authenticate') ?? '';
    expect(challenges).toContain('Basic realm="Realm"');
    expect(challenges).toContain('Bearer realm="Realm"');
    // Both OpenID policies asked the provider (refusals are not cached).
    expect(provider.count('/me')).toBe(before + 4);
  });

  it('tries the policies in the order of multiauth_policies', async () => {
    // Basic Auth first: a Basic header never reaches the provider.
    const before = provider.count('/me');
    const { body } = await hello({ Authorization: `Basic ${Buffer.from('bob:pw').toString('base64')}` });
    expect(body.user?.id).toMatch(/^basicauth:[0-9a-f]{64}$/);
    expect(provider.count('/me')).toBe(before);
  });

  it('names users by another profile field (userid_field) when the first policy declines', async () => {
    // `mail` is listed after `idp`; a server with only `mail` names alice by her e-mail.
    const only = await startQuire(quireSettings(provider.issuer, { multiauth_policies: ['mail', 'idp'] }), storage);
    try {
      const response = await fetch(`${only.url}/v1/`, { headers: bearer(aliceTokens.access_token ?? '') });
      expect(((await response.json()) as { user: { id: string } }).user.id).toBe('mail:alice@example.test');
    } finally {
      await only.app.close();
    }
  });

  it('refuses an expired token (anonymous)', async () => {
    const { tokens } = await loginDance(quire.url, provider.issuer, 'brief-dave');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const { body } = await hello(bearer(tokens.access_token ?? ''));
    expect(body.user).toBeUndefined();
  });

  it('validates JWT access tokens for its audience locally, with the provider keys (JWKS)', async () => {
    const token = await provider.clientCredentialsToken('robot');
    expect(decodeJwt(token).aud).toBe(API_AUDIENCE);
    const userinfo = provider.count('/me');
    const keys = provider.count('/jwks');
    expect((await hello(bearer(token))).body.user?.id).toBe('idp:robot');
    // Checked without userinfo; the keys fetched once and then reused.
    const other = await provider.clientCredentialsToken('robot');
    expect((await hello(bearer(other))).body.user?.id).toBe('idp:robot');
    expect(provider.count('/me')).toBe(userinfo);
    expect(provider.count('/jwks')).toBeLessThanOrEqual(keys + 1);
  });

  it('refuses a JWT with a bad signature or past its expiry, without asking the provider', async () => {
    const token = await provider.clientCredentialsToken('robot');
    const [header, payload, signature = ''] = token.split('.');
    const flipped = `${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    const brief = await provider.clientCredentialsToken('brief-robot');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const before = provider.count('/me');
    expect((await hello(bearer(`${header}.${payload}.${flipped}`))).body.user).toBeUndefined();
    expect((await hello(bearer(brief))).body.user).toBeUndefined();
    expect(provider.count('/me')).toBe(before);
  });

  it("declines another issuer's JWT without sending it to this provider", async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const foreign = await new SignJWT({ sub: 'mallory' })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('https://elsewhere.example')
      .setAudience(API_AUDIENCE)
      .setExpirationTime('1h')
      .sign(privateKey);
    const before = provider.count('/me') + provider.count('/jwks');
    expect((await hello(bearer(foreign))).body.user).toBeUndefined();
    expect(provider.count('/me') + provider.count('/jwks')).toBe(before);
    // A forged JWT naming this issuer, signed with a key the provider never published.
    const forged = await new SignJWT({ sub: 'mallory' })
      .setProtectedHeader({ alg: 'ES256', kid: 'keystore-CHANGE-ME' })
      .setIssuer(provider.issuer)
      .setAudience(API_AUDIENCE)
      .setExpirationTime('1h')
      .sign(privateKey);
    expect((await hello(bearer(forged))).body.user).toBeUndefined();
  });

  describe('login helper endpoints', () => {
    const get = async (path: string) => {
      const response = await fetch(`${quire.url}${path}`, { redirect: 'manual' });
      return {
        status: response.status,
        headers: response.headers,
        body: response.status === 307 ? null : ((await response.json()) as Record<string, unknown>),
      };
    };

    it('answers 400 for an unknown provider or missing parameters', async () => {
      const unknown = await get('/v1/openid/nobody/login?callback=http%3A%2F%2Fapp.test%2F&scope=openid');
      expect(unknown.status).toBe(400);
      expect(unknown.body).toMatchObject({ errno: 107, details: [{ location: 'path', name: 'provider' }] });
      const missing = await get('/v1/openid/idp/login?scope=openid');
      expect(missing.body).toMatchObject({ code: 400, errno: 107, message: 'callback in querystring: Required' });
      const notUrl = await get('/v1/openid/idp/login?callback=javascript:alert(1)&scope=openid');
      expect(notUrl.body).toMatchObject({
        errno: 107,
        details: [{ location: 'querystring', name: 'callback', description: 'Must be a URL' }],
      });
      const badPrompt = await get('/v1/openid/idp/login?callback=http%3A%2F%2Fapp.test%2F&scope=openid&prompt=login');
      expect(badPrompt.status).toBe(400);
      const noCode = await get('/v1/openid/idp/token?state=x');
      expect(noCode.body).toMatchObject({ errno: 107, message: 'code in querystring: Required' });
    });

    it('requires the email scope when users are named by e-mail', async () => {
      const response = await get('/v1/openid/mail/login?callback=http%3A%2F%2Fapp.test%2F&scope=openid');
      expect(response.body).toMatchObject({
        code: 400,
        errno: 107,
        message: "Provider mail requires 'email' scope",
        details: [{ location: 'body', name: 'scope' }],
      });
      expect((await get('/v1/openid/mail/login?callback=http%3A%2F%2Fapp.test%2F&scope=openid%20email')).status).toBe(
        307,
      );
    });

    it('passes prompt=none on to the provider', async () => {
      const response = await get('/v1/openid/idp/login?callback=http%3A%2F%2Fapp.test%2F&scope=openid&prompt=none');
      expect(response.status).toBe(307);
      expect(new URL(response.headers.get('location') ?? '').searchParams.get('prompt')).toBe('none');
    });

    it('refuses a forged, tampered or reused state (400 "Invalid state")', async () => {
      const login = await get('/v1/openid/idp/login?callback=http%3A%2F%2Fapp.test%2F&scope=openid');
      const state = new URL(login.headers.get('location') ?? '').searchParams.get('state') ?? '';
      const tampered = state.replace(/\.[^.]+\./, `.${Buffer.from('http://evil.test/').toString('base64url')}.`);
      for (const bad of ['deadbeef', tampered]) {
        const response = await get(`/v1/openid/idp/token?code=abc&state=${encodeURIComponent(bad)}`);
        expect(response.status).toBe(400);
        expect(response.body).toMatchObject({
          errno: 107,
          message: 'Invalid state',
          details: [{ location: 'body', name: 'state', errno: 105 }],
        });
      }
      // A genuine state works once: the provider refuses the fake code, and its answer goes to the callback.
      const first = await get(`/v1/openid/idp/token?code=abc&state=${encodeURIComponent(state)}`);
      expect(first.status).toBe(307);
      const answer = JSON.parse(
        Buffer.from(
          decodeURIComponent((first.headers.get('location') ?? '').slice('http://app.test/'.length)),
          'base64',
        ).toString(),
      );
      expect(answer.error).toBe('invalid_grant');
      expect((await get(`/v1/openid/idp/token?code=abc&state=${encodeURIComponent(state)}`)).status).toBe(400);
    });

    it('limits callbacks to openid_callback_origins when set', async () => {
      const strict = await startQuire(
        quireSettings(provider.issuer, { openid_callback_origins: ['http://app.test'] }),
        storage,
      );
      try {
        const ok = await fetch(`${strict.url}/v1/openid/idp/login?callback=http%3A%2F%2Fapp.test%2F%23x&scope=openid`, {
          redirect: 'manual',
        });
        expect(ok.status).toBe(307);
        const evil = await fetch(`${strict.url}/v1/openid/idp/login?callback=http%3A%2F%2Fevil.test%2F&scope=openid`, {
          redirect: 'manual',
        });
        expect(evil.status).toBe(400);
      } finally {
        await strict.app.close();
      }
    });
  });

  it('never logs tokens, codes nor the client secret', () => {
    const logs = quire.logs();
    // Requests are logged, by route pattern: never a URL with its query (codes, states).
    expect(logs).toMatch(/"msg":"GET \/v1\/ 200"/);
    expect(logs).not.toContain('/openid/idp/token');
    expect(logs).not.toContain(CLIENT_SECRET);
    expect(logs).not.toContain(aliceTokens.access_token);
    expect(logs).not.toContain(aliceTokens.id_token);
    expect(logs).not.toMatch(/code=/);
  });

  it('lets an address have only openid_verifications_max_per_address token checks at once (36.7)', async () => {
    const limited = await startQuire(
      quireSettings(provider.issuer, { openid_verifications_max_per_address: 2 }),
      storage,
    );
    const port = Number(new URL(limited.url).port);
    const flooder = clientFrom('127.0.0.2', port, 30);
    const bystander = clientFrom('127.0.0.3', port);
    const fresh = (await loginDance(quire.url, provider.issuer, 'frank')).tokens.access_token ?? '';
    provider.userinfoDelayMs = 150;
    provider.mostInFlight.delete('/me');
    try {
      const [flood, mine] = await Promise.all([
        Promise.all(
          Array.from({ length: 30 }, (_, index) =>
            flooder.send('GET', '/v1/', { headers: bearer(`made-up-${index}`) }),
          ),
        ),
        bystander.send<{ user?: { id: string } }>('GET', '/v1/', { headers: bearer(fresh) }),
      ]);
      const refused = flood.filter((answer) => answer.status === 429);
      expect(flood.every((answer) => answer.status === 200 || answer.status === 429)).toBe(true);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0]?.json).toMatchObject({ code: 429, errno: 117 });
      expect(refused[0]?.headers['retry-after']).toBe('1');
      // The provider saw at most the flooder's two checks per policy (`idp`, `mail`) and the bystander's at once.
      expect(provider.mostInFlight.get('/me')).toBeLessThanOrEqual(5);
      expect(mine.json.user?.id).toBe('idp:frank');
    } finally {
      provider.userinfoDelayMs = 0;
      flooder.close();
      bystander.close();
      await limited.app.close();
    }
  });

  it('answers 503 (never 500) while the provider is down; cached tokens keep working', async () => {
    const fresh = (await loginDance(quire.url, provider.issuer, 'erin')).tokens.access_token ?? '';
    await provider.stop();
    const down = await fetch(`${quire.url}/v1/`, { headers: bearer(fresh) });
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('3');
    expect(await down.json()).toMatchObject({ code: 503, errno: 201 });
    expect((await hello(bearer(aliceTokens.access_token ?? ''))).body.user?.id).toBe('idp:alice');
    const badState = await fetch(`${quire.url}/v1/openid/idp/token?code=x&state=y`);
    expect(badState.status).toBe(400); // the state is checked before the provider is called
    const login = await fetch(`${quire.url}/v1/openid/idp/login?callback=http%3A%2F%2Fapp.test%2F&scope=openid`, {
      redirect: 'manual',
    });
    const state = new URL(login.headers.get('location') ?? '').searchParams.get('state') ?? '';
    const exchange = await fetch(`${quire.url}/v1/openid/idp/token?code=x&state=${encodeURIComponent(state)}`, {
      redirect: 'manual',
    });
    expect(exchange.status).toBe(503);
    expect(await exchange.json()).toMatchObject({ errno: 201 });
    expect(quire.logs()).not.toContain(fresh);
  });
});

describe('OpenID settings', () => {
  it('fails at boot when the provider cannot be reached or is misconfigured', async () => {
    const storage = await createSqliteStorage();
    try {
      const unreachable = quireSettings('http://127.0.0.1:9', {
        multiauth_policies: ['idp'],
        openid_providers: [{ name: 'idp', issuer: 'http://127.0.0.1:9', client_id: 'c' }],
      });
      await expect(buildServer({ settings: unreachable, storage, logger: false })).rejects.toThrow(
        /OpenID provider idp: cannot read its configuration/,
      );
      const unlisted = quireSettings('http://127.0.0.1:9', {
        multiauth_policies: ['basicauth'],
        openid_providers: [{ name: 'idp', issuer: 'http://127.0.0.1:9', client_id: 'c' }],
      });
      await expect(buildServer({ settings: unlisted, storage, logger: false })).rejects.toThrow(ConfigError);
      const badField = quireSettings('http://127.0.0.1:9', {
        multiauth_policies: ['idp'],
        openid_providers: [{ name: 'idp', issuer: 'http://127.0.0.1:9', client_id: 'c', secret: 'x' }],
      });
      await expect(buildServer({ settings: badField, storage, logger: false })).rejects.toThrow(
        /unknown field\(s\) secret/,
      );
    } finally {
      await storage.close();
    }
  }, 30_000);

  it('reads providers as JSON from the environment and never shows the client secret', async () => {
    const { redactSettings } = await import('../src/config.js');
    const settings = loadSettings({
      env: {
        QUIRE_MULTIAUTH_POLICIES: 'google',
        QUIRE_OPENID_PROVIDERS: JSON.stringify([
          { name: 'google', issuer: 'https://accounts.google.com', client_id: 'id', client_secret: 'shh' },
        ]),
      },
    });
    expect(settings.openid_providers).toEqual([
      { name: 'google', issuer: 'https://accounts.google.com', client_id: 'id', client_secret: 'shh' },
    ]);
    expect(JSON.stringify(redactSettings(settings))).not.toContain('shh');
    expect(() => loadSettings({ env: { QUIRE_OPENID_PROVIDERS: '[{"client_secret": "shh"' } })).toThrow(
      /openid_providers.*expected JSON/,
    );
    expect(() => loadSettings({ env: { QUIRE_OPENID_PROVIDERS: '[{"client_secret": "shh"' } })).not.toThrow(/shh/);
    expect(() => loadSettings({ env: { QUIRE_MULTIAUTH_POLICIES: 'nobody' } })).toThrow(ConfigError);
  });
});
