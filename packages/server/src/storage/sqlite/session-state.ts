/**
 * What the facets of one SQLite session share (objects.ts, permissions.ts, outbox.ts,
 * nonces.ts): its connection while the session lasts, its memo of ACLs, the outbox items it
 * inserts just before COMMIT, the failure that dooms its transaction, and the scope timestamps
 * every write reads or moves.
 */
import { AclMemo } from '../acl-memo.js';
import { StorageError } from '../errors.js';
import type { Scope } from '../types.js';
import type { Connection } from './connection.js';
import type { SqliteReadCache } from './read-cache.js';

export type SessionMode = 'write' | 'read' | 'snapshot';

export class SqliteSessionState {
  readonly #connection: Connection;
  readonly mode: SessionMode;
  readonly acls = new AclMemo();
  /** Outbox items `[topic, key, payload]`, inserted just before COMMIT. */
  readonly outbox: Array<[string, string, string]> = [];
  /** Outside a transaction: stores `now` as the timestamp of a scope that has none (read-only connections cannot). */
  readonly storeTimestamp: ((scope: Scope) => Promise<number>) | undefined;
  #ended = false;
  /** A failure that dooms the transaction, whatever `fn` does with it. */
  failure: Error | undefined;
  /** The fields with a declared index now (../declared-indexes.ts), for the query builders. */
  readonly indexed: ReadonlySet<string>;
  /** Whether this transaction wrote a collection (whose declared indexes may have changed). */
  collectionsChanged = false;
  /** What plain reads keep between sessions (read-cache.ts); null in transactions and snapshots. */
  readonly cache: SqliteReadCache | null;

  constructor(
    connection: Connection,
    mode: SessionMode,
    {
      storeTimestamp,
      indexed = new Set(),
      cache,
    }: {
      storeTimestamp?: (scope: Scope) => Promise<number>;
      indexed?: ReadonlySet<string>;
      cache?: SqliteReadCache;
    } = {},
  ) {
    this.#connection = connection;
    this.mode = mode;
    this.storeTimestamp = storeTimestamp;
    this.indexed = indexed;
    this.cache = cache ?? null;
  }

  /** Notes a write to the scope (a collection's, or below which collections may be). */
  wrote(scope: Scope | null): void {
    if (scope === null || scope.resourceName === 'collection') this.collectionsChanged = true;
  }

  /** The connection, while the session lasts: a caller keeping it past its transaction is told. */
  get db(): Connection {
    if (this.#ended) throw new StorageError('this session has ended with its transaction');
    return this.#connection;
  }

  /** Inserts the enqueued outbox items (the transaction is about to commit). */
  flushOutbox(): void {
    for (const item of this.outbox.splice(0))
      this.db.run('INSERT INTO outbox (topic, key, payload) VALUES (?, ?, ?)', item);
  }

  end(): void {
    this.#ended = true;
  }

  /** The scope timestamp (storing `now` if it has none yet) and the clock. */
  current(scope: Scope): { current: number; now: number } {
    const now = Date.now();
    const params = [scope.parentId, scope.resourceName];
    const row = this.db.get<{ last_modified: number }>(
      'SELECT last_modified FROM timestamps WHERE parent_id = ? AND resource_name = ?',
      params,
    );
    if (row) return { current: row.last_modified, now };
    this.db.run('INSERT INTO timestamps (parent_id, resource_name, last_modified) VALUES (?, ?, ?)', [...params, now]);
    return { current: now, now };
  }

  setScopeTimestamp(scope: Scope, timestamp: number): void {
    this.db.run('UPDATE timestamps SET last_modified = ? WHERE parent_id = ? AND resource_name = ?', [
      timestamp,
      scope.parentId,
      scope.resourceName,
    ]);
  }

  assertWritable(): void {
    if (this.mode !== 'write') throw new StorageError('this session is read only');
  }
}
