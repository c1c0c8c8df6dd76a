import { createHmac, createSecretKey } from 'node:crypto';
import type { AuthPolicy } from './policy.js';

/**
 * Basic Auth identities (protocol-reference §9.1): any user:password pair is a user whose id is
 * `basicauth:` + hex HMAC-SHA256(secret, "user:password"). Not for production: a publicly known
 * pair is a shared identity. An empty username means anonymous.
 */
export function createBasicAuthPolicy(secret: string): AuthPolicy {
  // The key prepared once: from a string, each HMAC would convert it again (a quarter of its cost).
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  return {
    name: 'basicauth',
    challenge: 'Basic realm="Realm"',
    capability: {
      description: 'Very basic authentication sessions. Not for production use.',
      url: 'http://kinto.readthedocs.io/en/stable/api/1.x/authentication.html',
    },
    async authenticate({ headers }) {
      const credentials = parseBasicAuthorization(headers.authorization);
      if (!credentials || credentials.username === '') return null;
      const digest = createHmac('sha256', key)
        .update(`${credentials.username}:${credentials.password}`, 'utf8')
        .digest('hex');
      return `basicauth:${digest}`;
    },
  };
}

/** Parses `Authorization: Basic base64(user:password)`; null when absent or malformed. */
export function parseBasicAuthorization(
  header: string | string[] | undefined,
): { username: string; password: string } | null {
  if (typeof header !== 'string') return null;
  const match = /^basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return null;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
