/**
 * Group commit on the embedded store's writer. Every COMMIT with `synchronous=FULL` syncs the
 * WAL (~0.7 ms here), on the event loop, since better-sqlite3 is synchronous: one writer
 * committing each transaction alone spends most of its time waiting for the disk, and so does
 * every request behind it. PostgreSQL commits concurrent transactions with one flush; this does
 * the same for SQLite's one writer.
 *
 * A transaction whose turn ends while others wait for the writer leaves its work open, inside
 * one outer transaction, and hands the writer on; each turn runs in a SAVEPOINT, so a failing
 * one undoes only its own work. The group commits when nobody waits or when it has
 * `maxTurns` transactions; every member's promise settles then — no caller hears "done" before
 * its work is durable, and if the COMMIT fails every member fails with it (nothing was
 * acknowledged). An error after which SQLite itself rolled the whole transaction back (disk
 * full, I/O error) fails the group's waiting members the same way.
 * A lone writer commits at once, as before: grouping only ever happens under contention.
 */
import { BackendError } from '../errors.js';
import type { Connection, Pool } from './connection.js';

interface Group {
  /** Transactions whose work the group holds. */
  members: number;
  committed: Promise<void>;
  settle(error?: unknown): void;
}

function openGroup(): Group {
  let settle!: (error?: unknown) => void;
  const committed = new Promise<void>((resolve, reject) => {
    settle = (error) => (error === undefined ? resolve() : reject(error));
  });
  committed.catch(() => {}); // members that failed on their own never wait for it
  return { members: 0, committed, settle };
}

export interface CommitGroupsOptions {
  lockTimeoutMs: number;
  /** Transactions committed together at most (1: each alone). */
  maxTurns: number;
  /** Runs in the same synchronous step as every COMMIT (the read cache empties there). */
  onCommit(): void;
}

export class CommitGroups {
  readonly #writer: Pool;
  readonly #options: CommitGroupsOptions;
  /** The group under way on the writer, its outer transaction open. */
  #open: Group | null = null;

  constructor(writer: Pool, options: CommitGroupsOptions) {
    this.#writer = writer;
    this.#options = options;
  }

  /** Runs `fn` in a transaction on the writer; resolves once its work is committed. */
  async run<T>(fn: (connection: Connection) => Promise<T>): Promise<T> {
    const connection = await this.#writer.acquire(this.#options.lockTimeoutMs);
    let group: Group;
    try {
      group = this.#open ?? this.#begin(connection);
      connection.exec('SAVEPOINT quire_turn');
    } catch (error) {
      this.#writer.release(connection);
      throw error;
    }
    let failure: { error: unknown } | undefined;
    let result: T | undefined;
    try {
      result = await fn(connection);
      connection.exec('RELEASE quire_turn');
      group.members++;
    } catch (error) {
      failure = { error };
      this.#undoTurn(connection, group, error);
    }
    this.#passOn(connection, group);
    if (failure) throw failure.error;
    await group.committed;
    return result as T;
  }

  #begin(connection: Connection): Group {
    connection.exec('BEGIN IMMEDIATE');
    this.#open = openGroup();
    return this.#open;
  }

  /** Undoes a failed turn's work only; if SQLite dropped the whole transaction, the group fails. */
  #undoTurn(connection: Connection, group: Group, error: unknown): void {
    if (connection.inTransaction) {
      try {
        connection.exec('ROLLBACK TO quire_turn; RELEASE quire_turn');
        return;
      } catch {
        // fall through: the transaction cannot be trusted any more
      }
    }
    this.#rollback(connection);
    group.settle(new BackendError('sqlite: the transaction was rolled back with another one', { cause: error }));
  }

  /** Hands the writer to the next waiter with the group open, or ends the group and frees it. */
  #passOn(connection: Connection, group: Group): void {
    const keepOpen =
      this.#open === group && group.members > 0 && group.members < this.#options.maxTurns && this.#writer.waiting > 0;
    if (!keepOpen && this.#open === group) this.#end(connection, group);
    this.#writer.release(connection);
  }

  #end(connection: Connection, group: Group): void {
    this.#open = null;
    if (group.members === 0) {
      this.#rollback(connection);
      group.settle();
      return;
    }
    try {
      connection.exec('COMMIT');
    } catch (error) {
      this.#rollback(connection);
      group.settle(error);
      return;
    }
    // In the same synchronous step: no read comes between the commit and this.
    this.#options.onCommit();
    group.settle();
  }

  #rollback(connection: Connection): void {
    this.#open = null;
    try {
      if (connection.inTransaction) connection.exec('ROLLBACK');
    } catch {
      // nothing more to undo
    }
  }
}
