import { AUTHENTICATED, ANONYMOUS, EVERYONE, type AuthPolicy, type Identity } from './policy.js';

/**
 * Tries the policies in their configured order; the first that names a user wins. Bad
 * credentials are not an error by themselves: the caller is anonymous (protocol §9.1).
 *
 * Seam for the permissions issue: group principals (the group's URI) are added here once
 * group membership is indexed.
 */
export async function authenticate(policies: AuthPolicy[], headers: Record<string, string | string[] | undefined>): Promise<Identity> {
  for (const policy of policies) {
    const userId = await policy.authenticate(headers);
    if (userId) return { userId, principals: [userId, EVERYONE, AUTHENTICATED] };
  }
  return ANONYMOUS;
}
