/**
 * The OpenID Connect policy (protocol-reference §13.4): `Authorization: <header_type> <token>`
 * names the user `<provider name>:<profile[userid_field]>`.
 *
 * - An opaque token is checked as Kinto does: GET the provider's userinfo endpoint with it.
 * - A JWT is first checked locally against the provider's keys (JWKS, cached): another issuer's
 *   token is declined without a call (it never leaks to this provider), a bad signature or an
 *   expired token is refused. With `audience` configured, a valid JWT for that audience is
 *   accepted on its claims alone; otherwise userinfo still decides.
 * - Successes are cached (HMAC of the token → user id) for `verification_ttl_seconds`, never
 *   beyond a JWT's `exp`. Refused tokens make the caller anonymous; an unreachable provider
 *   makes the request fail with 503 (Kinto lets that surface as a 500).
 * - A client address has at most `openid_verifications_max_per_address` checks in progress
 *   (429 beyond): made-up tokens cost nothing to send, and each one is a call to the provider.
 */
import { createRemoteJWKSet, decodeJwt, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { ConfigError } from '../../settings/config-error.js';
import type { OpenIdSettings } from './settings.js';
import type { HttpSettings } from '../../http/settings.js';
import { ApiError, ERRNO } from '../../errors.js';
import { AddressSlots } from '../address-slots.js';
import type { AuthPolicy, AuthRequest } from '../policy.js';
import {
  callProvider,
  discover,
  ProviderUnavailableError,
  unavailableError,
  type DiscoveryDocument,
} from './provider-client.js';
import type { OpenIdProvider } from './providers.js';
import { VerificationCache } from './verification-cache.js';

/** The settings this module reads, feature by feature. */
type ModuleSettings = OpenIdSettings & HttpSettings;

type Verified = { userId: string; ttlSeconds: number } | null;

/** JOSE failures that prove the token bad; other ones leave the decision to userinfo. */
const REFUSED = new Set(['ERR_JWS_SIGNATURE_VERIFICATION_FAILED', 'ERR_JWT_EXPIRED']);
/** JOSE failures that mean the keys could not be fetched. */
const KEYS_UNAVAILABLE = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JOSE_GENERIC']);

export class OpenIdPolicy implements AuthPolicy {
  readonly name: string;
  readonly challenge: string;
  private discovery: DiscoveryDocument | null = null;
  private keys: JWTVerifyGetKey | null = null;
  private readonly cache: VerificationCache;
  private readonly checks: AddressSlots;

  constructor(
    readonly provider: OpenIdProvider,
    private readonly settings: ModuleSettings,
  ) {
    this.name = provider.name;
    this.challenge = `${provider.headerType} realm="Realm"`;
    this.cache = new VerificationCache(settings.openid_cache_max_entries);
    this.checks = new AddressSlots(settings.openid_verifications_max_per_address);
  }

  /** The provider's discovery document, fetched once at boot (as Kinto does). */
  get endpoints(): DiscoveryDocument {
    if (!this.discovery) throw new Error(`OpenID policy ${this.name} used before init()`);
    return this.discovery;
  }

  async init(): Promise<void> {
    try {
      this.discovery = await discover(this.provider.issuer, this.settings.openid_http_timeout_seconds);
    } catch (error) {
      throw new ConfigError(
        `OpenID provider ${this.name}: cannot read its configuration (${(error as Error).message})`,
      );
    }
    if (this.discovery.jwks_uri) {
      this.keys = createRemoteJWKSet(new URL(this.discovery.jwks_uri), {
        timeoutDuration: Math.round(this.settings.openid_http_timeout_seconds * 1000),
        cacheMaxAge: this.settings.openid_jwks_cache_seconds * 1000,
      });
    }
  }

  async authenticate({ headers, ip }: AuthRequest): Promise<string | null> {
    const token = this.tokenOf(headers.authorization);
    if (token === null) return null;
    const issuer = jwtIssuer(token);
    if (issuer !== undefined && issuer !== this.endpoints.issuer) return null;
    try {
      const userId = await this.cache.resolve(token, () =>
        this.checks.run(
          ip,
          () => this.verify(token, issuer !== undefined),
          () => this.tooManyChecks(),
        ),
      );
      return userId === null ? null : `${this.name}:${userId}`;
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      // The cause names the provider's address only, never the token.
      throw Object.assign(unavailableError(this.settings.retry_after_seconds), { cause: error });
    }
  }

  private tooManyChecks(): ApiError {
    return new ApiError(429, ERRNO.CLIENT_REACHED_CAPACITY, {
      message: 'Too many token checks in progress from this address, retry later.',
      headers: { 'Retry-After': '1' },
    });
  }

  /** Number of verified tokens held (for tests and metrics). */
  get cachedTokens(): number {
    return this.cache.size;
  }

  /** Kinto splits on the first space and compares the scheme case-insensitively. */
  private tokenOf(header: string | string[] | undefined): string | null {
    if (typeof header !== 'string') return null;
    const space = header.indexOf(' ');
    if (space === -1 || header.slice(0, space).toLowerCase() !== this.provider.headerType.toLowerCase()) return null;
    const token = header.slice(space + 1).trim();
    if (token === '' || token.length > this.settings.openid_max_token_length) return null;
    return token;
  }

  private async verify(token: string, isJwt: boolean): Promise<Verified> {
    let ttlSeconds = this.provider.verificationTtlSeconds;
    if (isJwt && this.keys) {
      const local = await this.verifyJwt(token);
      if (local === 'refused') return null;
      if (local.verified) return local.verified;
      if (local.expiresInSeconds !== null) ttlSeconds = Math.min(ttlSeconds, local.expiresInSeconds);
    }
    return this.verifyWithUserinfo(token, ttlSeconds);
  }

  private async verifyJwt(token: string): Promise<'refused' | { verified: Verified; expiresInSeconds: number | null }> {
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(token, this.keys as JWTVerifyGetKey, { issuer: this.endpoints.issuer }));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || KEYS_UNAVAILABLE.has(code))
        throw new ProviderUnavailableError('OpenID signing keys unavailable', { cause: error });
      if (REFUSED.has(code)) return 'refused';
      return { verified: null, expiresInSeconds: null };
    }
    const expiresInSeconds = typeof claims.exp === 'number' ? Math.floor(claims.exp - Date.now() / 1000) : null;
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    const userId = userIdOf(claims, this.provider.useridField);
    if (this.provider.audience !== null && audiences.includes(this.provider.audience) && userId !== null) {
      const ttlSeconds = Math.min(this.provider.verificationTtlSeconds, expiresInSeconds ?? Infinity);
      return { verified: { userId, ttlSeconds }, expiresInSeconds };
    }
    return { verified: null, expiresInSeconds };
  }

  private async verifyWithUserinfo(token: string, ttlSeconds: number): Promise<Verified> {
    const { status, text } = await callProvider(
      this.endpoints.userinfo_endpoint,
      { headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } },
      this.settings.openid_http_timeout_seconds,
    );
    // 4xx: the provider refuses the token; the caller is anonymous (Kinto: raise_for_status).
    if (status !== 200) return null;
    let profile: unknown;
    try {
      profile = JSON.parse(text);
    } catch {
      return null;
    }
    if (typeof profile !== 'object' || profile === null) return null;
    const userId = userIdOf(profile as Record<string, unknown>, this.provider.useridField);
    return userId === null ? null : { userId, ttlSeconds };
  }
}

/** `iss` of a signed JWT; undefined when the token is opaque (or a JWT without `iss`). */
function jwtIssuer(token: string): string | undefined {
  try {
    const { iss } = decodeJwt(token);
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}

function userIdOf(profile: Record<string, unknown>, field: string): string | null {
  const value = Object.hasOwn(profile, field) ? profile[field] : undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return typeof value === 'string' && value !== '' ? value : null;
}

function isUnavailable(error: unknown): boolean {
  return error instanceof ProviderUnavailableError;
}
