/**
 * What the facets of one SQL session share (objects.ts, permissions.ts, outbox.ts, nonces.ts):
 * its connection, the writes it has not sent yet and sends with COMMIT, the rows it holds
 * locked, its memo of ACLs, and what it changed of the shared read cache. One per session; the
 * facets are views of it, so that, e.g., a listing of permissions first sends the objects and
 * ACLs written before it.
 */
import { AclMemo } from '../acl-memo.js';
import { StorageError, UnicityError } from '../errors.js';
import type { Scope } from '../types.js';
import {
  sqlState,
  type DeferredStatement,
  type QueryOptions,
  type Row,
  type SqlConnection,
  type SqlTransaction,
} from './drivers/types.js';
import { PendingAcls } from './pending-acls.js';
import { NOW_MS, PendingWrites } from './pending-writes.js';
import type { ScopeCache } from './scope-cache.js';
import { encodeInvalidations, objectKey, type Invalidation, type SharedCache } from './shared-cache.js';

export type SessionMode = 'write' | 'read' | 'snapshot';

/** What every session of one storage shares. */
export interface SessionContext {
  cache: SharedCache;
  /** Scope timestamps for polls (scope-cache.ts; none: a process alone with its store). */
  scopes?: ScopeCache;
  /** The database is a hot standby: reads must not write (sql-storage.ts). */
  replica?: boolean;
  /** The statement announcing invalidations to the other processes (none: one process only). */
  notify?: (payload: string) => DeferredStatement;
  /** The fields with a declared index now (declared-indexes.ts), for the query builders. */
  indexed: () => ReadonlySet<string>;
}

export interface ObjectRow extends Row {
  id: string;
  last_modified: number;
  data: Record<string, unknown>;
  deleted: boolean;
}

export class SqlSessionState {
  readonly #db: SqlConnection | SqlTransaction;
  readonly mode: SessionMode;
  readonly context: SessionContext;
  readonly acls = new AclMemo();
  #pendingAcls: PendingAcls | null = null;
  #pending: PendingWrites | null = null;
  /**
   * Objects this transaction read locked (`forUpdate`) or wrote, as it left them (null: none):
   * nobody else can change them before it ends. In a read session: those it preloaded.
   */
  readonly locked = new Map<string, ObjectRow | null>();
  /** What this transaction changed of what the shared cache holds. */
  readonly #invalidations: Invalidation[] = [];
  /** Set by a change too wide to track (a tree, every group): the shared cache is no longer asked. */
  #bypassCache = false;
  /** Objects this session wrote (for the embedded store's maintenance). */
  writes = 0;

  constructor(db: SqlConnection | SqlTransaction, mode: SessionMode, context: SessionContext) {
    this.#db = db;
    this.mode = mode;
    this.context = context;
    if ('atCommit' in db) db.atCommit(() => this.#atCommit());
  }

  /** ACLs written and not sent yet (pending-acls.ts); made when first asked (most sessions only read). */
  get pendingAcls(): PendingAcls {
    this.#pendingAcls ??= new PendingAcls();
    return this.#pendingAcls;
  }

  /** Object writes not sent yet, and the scopes this transaction holds (pending-writes.ts); made when first asked. */
  get pending(): PendingWrites {
    this.#pending ??= new PendingWrites();
    return this.#pending;
  }

  /** The transaction's connection, for statements sent as it commits (`beforeCommit`); none outside one. */
  get transaction(): SqlTransaction | null {
    return 'beforeCommit' in this.#db ? this.#db : null;
  }

  /** What the shared cache must forget once this transaction committed. */
  get invalidations(): readonly Invalidation[] {
    return this.#invalidations;
  }

  /** Whether a change too wide to track keeps this session from the shared cache. */
  get bypassCache(): boolean {
    return this.#bypassCache;
  }

  /** The statements that end the transaction: pending objects, pending ACLs, then the announcement. */
  #atCommit(): DeferredStatement[] {
    const statements: DeferredStatement[] = [];
    statements.push(...this.pending.take());
    const acls = this.pendingAcls.take();
    if (acls) statements.push(acls);
    if (this.#invalidations.length > 0 && this.context.notify)
      statements.push(this.context.notify(encodeInvalidations(this.#invalidations)));
    return statements;
  }

  invalidate(invalidation: Invalidation): void {
    this.#invalidations.push(invalidation);
    if (invalidation.kind !== 'object' && invalidation.kind !== 'acl') this.#bypassCache = true;
  }

  /** Whether the shared cache may answer for `key`: not once this transaction changed it. */
  cacheable(kind: 'object' | 'acl', key: string): boolean {
    if (this.#bypassCache) return false;
    return !this.#invalidations.some(
      (invalidation) =>
        invalidation.kind === kind &&
        (kind === 'object' ? (invalidation as { key: string }).key : (invalidation as { uri: string }).uri) === key,
    );
  }

  /** Sends the pending object writes now: a statement is about to read or stamp the objects. */
  async sendPendingWrites(): Promise<void> {
    for (const statement of this.pending.take()) {
      const rows = await this.query(statement.text, statement.params); // not inside `onRows?.(…)`, which would skip it
      statement.onRows?.(rows);
    }
  }

  /** Sends the pending ACLs now: a statement is about to read or change the table. */
  async sendPendingAcls(): Promise<void> {
    const statement = this.pendingAcls.take();
    if (statement) await this.query(statement.text, statement.params);
  }

  /** What this transaction knows of an object without asking: what it wrote, or read locked. */
  known(scope: Scope, id: string): { row: ObjectRow | null } | undefined {
    const key = objectKey(scope.parentId, scope.resourceName, id);
    return this.locked.has(key) ? { row: this.locked.get(key)! } : undefined;
  }

  /** Rows read locked are still locked, but a statement may have changed them: read them again. */
  forgetLocked(): void {
    this.locked.clear();
  }

  /** Locks the scope's timestamp row until commit (storing `now` if it has none yet). */
  async lockScope(scope: Scope): Promise<{ current: number; now: number }> {
    const [row] = await this.query<{ current: number; now: number }>(
      `INSERT INTO timestamps AS t (parent_id, resource_name, last_modified) VALUES ($1, $2, ${NOW_MS})
       ON CONFLICT (parent_id, resource_name) DO UPDATE SET last_modified = t.last_modified
       RETURNING t.last_modified AS current, ${NOW_MS} AS now`,
      [scope.parentId, scope.resourceName],
    );
    return row!;
  }

  async query<R extends Row>(text: string, params: readonly unknown[], options?: QueryOptions): Promise<R[]> {
    try {
      return await this.#db.query<R>(text, params, options);
    } catch (error) {
      if (sqlState(error) === '23505')
        throw new UnicityError('integrity constraint violated', undefined, { cause: error });
      throw error;
    }
  }

  assertWritable(): void {
    if (this.mode !== 'write') throw new StorageError('this session is read only');
  }
}
