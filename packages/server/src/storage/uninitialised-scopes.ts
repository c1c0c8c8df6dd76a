/**
 * A snapshot is read only: asked for the timestamp of a scope never written nor read, it cannot
 * store one. Both backends then store it outside the snapshot and run the snapshot's function
 * again, on a new snapshot that sees it.
 */
import { BackendError } from './errors.js';
import type { Scope } from './types.js';

const MAX_SNAPSHOT_ATTEMPTS = 10;

/** Thrown inside a snapshot by `objects.timestamp` of a scope that has none yet. */
export class UninitialisedScope extends Error {
  constructor(readonly scope: Scope) {
    super(`scope ${scope.parentId}/${scope.resourceName} has no timestamp yet`);
  }
}

/** Runs `snapshot`, and again after `store` gave each scope it met without a timestamp one. */
export async function withInitialisedScopes<T>(
  snapshot: () => Promise<T>,
  store: (scope: Scope) => Promise<unknown>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await snapshot();
    } catch (error) {
      if (!(error instanceof UninitialisedScope)) throw error;
      if (attempt >= MAX_SNAPSHOT_ATTEMPTS)
        throw new BackendError('snapshot: too many uninitialised scopes', { cause: error });
      await store(error.scope);
    }
  }
}
