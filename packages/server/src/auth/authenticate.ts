import { AUTHENTICATED, ANONYMOUS, EVERYONE, type AuthPolicy, type AuthRequest, type Identity } from './policy.js';

/**
 * Tries the policies in their configured order; the first that names a user wins. Bad
 * credentials are not an error by themselves: the caller is anonymous (protocol §9.1).
 * An authenticated user's principals include the URI of every group that lists the user or
 * system.Authenticated — asked of the storage at each request (which may answer from its read
 * cache: a membership change empties it when it commits).
 * (The interface spec writes group principals `group:<name>`; deployed clients use the URI,
 * as protocol-reference §9.1 documents, so that is what we issue.)
 */
export async function authenticate(policies: AuthPolicy[], request: AuthRequest): Promise<Identity> {
  for (const policy of policies) {
    const userId = await policy.authenticate(request);
    if (!userId) continue;
    const groups = await request.read((session) => session.permissions.groupsOf([userId, AUTHENTICATED]));
    return { userId, principals: [userId, EVERYONE, AUTHENTICATED, ...groups] };
  }
  return ANONYMOUS;
}
