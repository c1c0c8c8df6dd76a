/**
 * Scope timestamps on PostgreSQL (objects.ts says how writers to a scope serialise on its
 * row): reading one, and stamping a write, from what this transaction holds (pending-writes.ts)
 * or by bumping the row, which locks it until commit.
 */
import { BackendError } from '../errors.js';
import { tableOf } from '../tables.js';
import type { Scope } from '../types.js';
import { UninitialisedScope } from '../uninitialised-scopes.js';
import { NOW_MS } from './pending-writes.js';
import type { SqlSessionState } from './session-state.js';

/** The scope timestamp (`ObjectStore.timestamp`). */
export async function readScopeTimestamp(s: SqlSessionState, scope: Scope): Promise<number> {
  if (s.pending.hasLate(scope.parentId, scope.resourceName)) await s.sendPendingWrites();
  const held = s.pending.timestamp(scope.parentId, scope.resourceName);
  if (held !== undefined) return held;
  // A poll's question: from memory when this process knows it recently enough (scope-cache.ts).
  const cache = s.mode === 'read' ? s.context.scopes : undefined;
  const cached = cache?.get(scope.parentId, scope.resourceName);
  if (cached !== undefined) return cached;
  const token = cache?.token ?? -1;
  const timestamp = await storedTimestamp(s, scope);
  cache?.store(token, scope.parentId, scope.resourceName, timestamp);
  return timestamp;
}

async function storedTimestamp(s: SqlSessionState, scope: Scope): Promise<number> {
  const params = [scope.parentId, scope.resourceName];
  if (s.mode === 'snapshot' || s.context.replica) {
    const [row] = await s.query<{ last_modified: number }>(
      'SELECT last_modified FROM timestamps WHERE parent_id = $1 AND resource_name = $2',
      params,
    );
    // On a standby, a scope the primary never stamped holds nothing: 0 is behind any write.
    if (!row && s.context.replica) return 0;
    if (!row) throw new UninitialisedScope(scope);
    return row.last_modified;
  }
  // One statement: the stored timestamp, or `now` stored for a scope never seen. The insert
  // of a concurrent first reader makes ours do nothing while our SELECT does not see it yet
  // (same snapshot): then a second look finds it.
  for (let attempt = 1; ; attempt++) {
    const [row] = await s.query<{ last_modified: number }>(
      `WITH stored AS (
         INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES ($1, $2, ${NOW_MS})
         ON CONFLICT (parent_id, resource_name) DO NOTHING RETURNING last_modified
       )
       SELECT last_modified FROM stored
       UNION ALL SELECT last_modified FROM timestamps WHERE parent_id = $1 AND resource_name = $2`,
      params,
    );
    if (row) return row.last_modified;
    if (attempt === 3) throw new BackendError(`the timestamp of ${scope.parentId}/${scope.resourceName} vanished`);
  }
}

/**
 * The timestamp of the next write to the scope: from the scope when this transaction holds
 * it; else, if the caller takes it at commit (`late`) and the scope has no early write of
 * this transaction, NaN until then; else bumped in the database now.
 */
export async function stampFor(s: SqlSessionState, scope: Scope, late: boolean | undefined): Promise<number> {
  const { pending } = s;
  const held = pending.next(scope.parentId, scope.resourceName);
  if (held !== undefined) return held;
  if (late && s.mode === 'write') return Number.NaN;
  // An early stamp after late ones of the same scope: send those first (they hold it then).
  if (pending.hasLate(scope.parentId, scope.resourceName)) {
    await s.sendPendingWrites();
    return pending.next(scope.parentId, scope.resourceName)!;
  }
  // The first of the transaction bumps it in the database, which locks it.
  const stamped = await bumpScope(s, scope);
  pending.hold(scope.parentId, scope.resourceName, stamped);
  return stamped;
}

/**
 * The timestamp of a write to object `id` (protocol-reference §5.2), holding the scope lock.
 * A requested value above the scope timestamp is used and becomes the scope timestamp; one
 * below it is kept in the past without touching the scope timestamp, unless another object
 * of the scope already has it (Kinto answers 409 there; we keep timestamps unique by
 * assigning a fresh one). Otherwise the scope timestamp is bumped.
 */
export async function stampWrite(
  s: SqlSessionState,
  scope: Scope,
  id: string,
  requested: number | undefined,
): Promise<number> {
  if (requested === undefined || !Number.isSafeInteger(requested) || requested < 0) return bumpScope(s, scope);
  const { current } = await s.lockScope(scope);
  if (requested > current) {
    await setScopeTimestamp(s, scope, requested);
    return requested;
  }
  if (requested < current) {
    const taken = await s.query(
      `SELECT 1 FROM ${tableOf(scope)} WHERE parent_id = $1 AND resource_name = $2 AND last_modified = $3 AND id <> $4`,
      [scope.parentId, scope.resourceName, requested, id],
    );
    if (taken.length === 0) return requested;
  }
  return bumpScope(s, scope);
}

/** Moves the scope timestamp to max(now, current + 1), locking it, and returns it. */
export async function bumpScope(s: SqlSessionState, scope: Scope): Promise<number> {
  const [row] = await s.query<{ last_modified: number }>(
    `INSERT INTO timestamps AS t (parent_id, resource_name, last_modified) VALUES ($1, $2, ${NOW_MS})
     ON CONFLICT (parent_id, resource_name)
     DO UPDATE SET last_modified = GREATEST(EXCLUDED.last_modified, t.last_modified + 1)
     RETURNING t.last_modified`,
    [scope.parentId, scope.resourceName],
  );
  return row!.last_modified;
}

export async function setScopeTimestamp(s: SqlSessionState, scope: Scope, timestamp: number): Promise<void> {
  await s.query('UPDATE timestamps SET last_modified = $3 WHERE parent_id = $1 AND resource_name = $2', [
    scope.parentId,
    scope.resourceName,
    timestamp,
  ]);
}
