/** The refusal of a request its caller may not make. */
import type { Identity } from '../auth/policy.js';
import { ApiError, ERRNO } from '../errors.js';
import type { Services } from '../request-context.js';

/** 401 for anonymous callers (with the policies' challenges), 403 otherwise (§9.2). */
export function denied(services: Services, identity: Identity): ApiError {
  if (identity.userId === null) {
    const challenges = services.policies.map((policy) => policy.challenge);
    return new ApiError(401, ERRNO.MISSING_AUTH_TOKEN, {
      message: 'Please authenticate yourself to use this endpoint.',
      headers: challenges.length ? { 'WWW-Authenticate': challenges.join(', ') } : {},
    });
  }
  return new ApiError(403, ERRNO.FORBIDDEN, { message: 'This user cannot access this resource.' });
}
