import type { StorageSession } from '../storage/types.js';

/** An authentication policy reads request headers and names the user, or declines. */
export interface AuthPolicy {
  /** Prefix of the user ids it produces (`basicauth` → `basicauth:<hmac>`). */
  readonly name: string;
  /** Capability advertised in `GET /` while the policy is enabled. */
  readonly capability?: { description: string; url: string; [extra: string]: unknown };
  /** `WWW-Authenticate` challenge sent with 401 responses. */
  readonly challenge: string;
  /**
   * The prefixed user id, or null when the request carries no credentials this policy accepts
   * (the next policy may). Throws an ApiError to refuse them outright (e.g. the account policy:
   * 401 for a wrong password, 429 over the login limits).
   */
  authenticate(request: AuthRequest): Promise<string | null>;
  /** Work done once before the server accepts requests (e.g. OpenID discovery); failing stops the boot. */
  init?(): Promise<void>;
}

/** What a policy may read of a request. */
export interface AuthRequest {
  headers: Record<string, string | string[] | undefined>;
  /**
   * The client's address (for the limits per address: logins, token checks); for a batch
   * sub-request, that of the batch's client (injected, it comes from the loopback address, whose
   * allowance it must not exhaust).
   */
  ip: string;
  /** Reads the store: through the batch's transaction for a batch's sub-request (its unit of work). */
  read<T>(fn: (session: StorageSession) => Promise<T>): Promise<T>;
}

/** Who is calling: the user id (null when anonymous) and every principal it holds. */
export interface Identity {
  userId: string | null;
  principals: string[];
}

export const EVERYONE = 'system.Everyone';
export const AUTHENTICATED = 'system.Authenticated';

export const ANONYMOUS: Identity = Object.freeze({ userId: null, principals: [EVERYONE] }) as Identity;
