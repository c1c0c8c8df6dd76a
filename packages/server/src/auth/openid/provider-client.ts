/**
 * HTTP calls to an OpenID provider: discovery, userinfo and the code exchange. Each call has a
 * time limit; a provider that cannot be reached (network error, timeout, 5xx) is reported as
 * `ProviderUnavailableError`, which requests turn into 503 — never into a 500 or a hang.
 * Tokens and secrets are never part of an error message.
 */
import { ApiError, ERRNO } from '../../errors.js';

/** The provider could not answer; the caller should retry later. */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
}

/** Largest provider response read (discovery, userinfo, token); an IdP never needs more. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

export interface DiscoveryDocument {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  userinfo_endpoint: string;
  jwks_uri: string | null;
}

export interface ProviderResponse {
  status: number;
  text: string;
}

/** One request to the provider; network failures, timeouts and 5xx throw ProviderUnavailableError. */
export async function callProvider(url: string, init: RequestInit, timeoutSeconds: number): Promise<ProviderResponse> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutSeconds * 1000) });
    text = await readLimited(response);
  } catch (error) {
    const reason = (error as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable';
    throw new ProviderUnavailableError(`OpenID provider ${new URL(url).origin} ${reason}`, { cause: error });
  }
  if (response.status >= 500)
    throw new ProviderUnavailableError(`OpenID provider ${new URL(url).origin} answered ${response.status}`);
  return { status: response.status, text };
}

async function readLimited(response: Response): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > MAX_RESPONSE_BYTES) throw new Error('response too large');
  const text = await response.text();
  if (Buffer.byteLength(text) > MAX_RESPONSE_BYTES) throw new Error('response too large');
  return text;
}

/** `<issuer>/.well-known/openid-configuration`, checked for the endpoints we use. */
export async function discover(issuer: string, timeoutSeconds: number): Promise<DiscoveryDocument> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const { status, text } = await callProvider(url, { headers: { Accept: 'application/json' } }, timeoutSeconds);
  if (status !== 200) throw new ProviderUnavailableError(`${url} answered ${status}`);
  let document: Record<string, unknown>;
  try {
    document = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new ProviderUnavailableError(`${url} is not JSON`);
  }
  const endpoint = (field: string): string => {
    const value = document[field];
    if (typeof value !== 'string' || !/^https?:\/\//.test(value))
      throw new ProviderUnavailableError(`${url} has no valid "${field}"`);
    return value;
  };
  return {
    issuer: typeof document.issuer === 'string' ? document.issuer : issuer,
    authorization_endpoint: endpoint('authorization_endpoint'),
    token_endpoint: endpoint('token_endpoint'),
    userinfo_endpoint: endpoint('userinfo_endpoint'),
    jwks_uri: typeof document.jwks_uri === 'string' ? endpoint('jwks_uri') : null,
  };
}

/** 503 errno 201, as when the storage is down: the credentials cannot be checked right now. */
export function unavailableError(retryAfterSeconds: number): ApiError {
  return new ApiError(503, ERRNO.BACKEND, {
    message: 'Service temporary unavailable due to overloading or maintenance, please retry later.',
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}
