/**
 * The stores' bulk path for `quire import` (transfer/import.ts): a whole import in ONE
 * transaction, at the speed of the database's own bulk loading (PostgreSQL: COPY into staging
 * tables, then set-based moves, sql/bulk-import.ts; SQLite: large prepared multi-row inserts,
 * sqlite/bulk-import.ts). All or nothing under every signal: a killed process leaves its
 * transaction uncommitted, and the store as it was.
 *
 * Each import first writes a row in `import_runs` in a transaction of its own; its loading
 * transaction deletes every row there as it commits. A row left behind names an import that never
 * finished (the process killed, its connection lost, or interrupted: `outcome` says which when it
 * could): the next import reports it before it starts.
 *
 * What needs the lines before it — a parent given and live, an object given twice, a timestamp
 * two objects of a scope share, a file two index entries name — the store checks, against what it
 * holds (SQLite, as rows go in) or set-based on the staged rows (PostgreSQL, at the end), and
 * reports as an `ImportConflict` naming the lines; transfer/refusals.ts words it.
 */
import { StorageError } from './errors.js';

/** Access control entries of one object (as types.ts `Permissions`, which imports this module). */
type Permissions = Record<string, string[]>;

/** One object of the import, as the store keeps it. */
export interface BulkObject {
  /** Its line in the input (the conflicts name it). */
  line: number;
  resource: string;
  parent: string;
  id: string;
  lastModified: number;
  deleted: boolean;
  /** The attributes without `id` and `last_modified`, as JSON text (a tombstone's: ignored). */
  data: string;
  /** Its URI, for the objects that have one (ACLs, group memberships, containers). */
  uri: string | null;
  /** Its access-control entries, normalised (principals sorted and unique, no empty list); null: none. */
  acl: Permissions | null;
  /** A live group's members (principals); null otherwise. */
  members: string[] | null;
  /** An attachment index entry's file location; null otherwise. */
  location: string | null;
}

/**
 * A scope timestamp to raise (never lower): a scope line, or the largest `last_modified` of a run
 * of objects of one scope (`line`: the run's last line).
 */
export interface BulkScope {
  line: number;
  resource: string;
  parent: string;
  timestamp: number;
  /** A scope line of the input (its parent is checked), rather than a run's maximum. */
  given: boolean;
}

export interface BulkLoader {
  /**
   * Objects and scope timestamps, in the order of their lines. A conflict with what came before
   * may be thrown here (SQLite) or only by `check`/at the end (PostgreSQL).
   */
  add(items: ReadonlyArray<BulkObject | BulkScope>): Promise<void>;
  /** Checks what was added; throws the conflict of the lowest line, if any. */
  check(): Promise<void>;
}

/** An import that started and never finished: its row in `import_runs`. */
export interface ImportRun {
  /** Milliseconds since the epoch. */
  startedAt: number;
  pid: number;
  host: string;
  /** The input's name (a file, or standard input). */
  input: string;
  /** How it ended, when it could say (`interrupted by SIGINT`); null: it was killed or lost its store. */
  outcome: string | null;
}

export interface BulkImportOptions {
  /** Empty the store first (else refuse one that holds buckets or accounts); a later line for an object wins. */
  replace: boolean;
  /** Lines per write of the store where it batches them (a COPY statement on PostgreSQL; default 5000). */
  batchSize?: number;
  /** PostgreSQL: memory for the index builds' sorts, in MB (`storage_import_sort_memory_mb`; default 1024). */
  sortMemoryMb?: number;
  /** This import's row in `import_runs`. */
  run: Omit<ImportRun, 'outcome'>;
  /** Told of the imports that started before this one and never finished, once this one holds the store. */
  onUnfinished?: (runs: ImportRun[]) => void;
  /** Told when the loading ends and each step of the end begins (`moving into place`, `indexing`, `analysing`). */
  onPhase?: (phase: string) => void;
  /** Interrupts the import: it rolls back, and its row says why (`abort(reason)`: the reason, a string). */
  signal?: AbortSignal;
}

export interface BulkImportResult {
  /** Lines that replaced an earlier line for the same object (only with `replace`). */
  replaced: number;
}

/** What a store with a bulk path offers (`Storage.bulkImport`). */
export type BulkImport = (
  options: BulkImportOptions,
  fill: (loader: BulkLoader) => Promise<void>,
) => Promise<BulkImportResult>;

/** Why the store refuses the import, with the lines it names. */
export type Conflict =
  | { kind: 'not-empty' }
  | { kind: 'running'; run: ImportRun | null }
  | { kind: 'parent-missing'; line: number; parent: string }
  | { kind: 'parent-deleted'; line: number; parent: string }
  | { kind: 'repeated'; line: number; earlier: number; resource: string; parent: string; id: string; stamp: number }
  | { kind: 'timestamp-taken'; line: number; earlier: number; resource: string; lastModified: number; id: string }
  | { kind: 'deleted-with-children'; line: number; child: number; resource: string; id: string }
  | { kind: 'file-taken'; line: number; earlier: number; location: string };

export class ImportConflict extends StorageError {
  override name = 'ImportConflict';
  constructor(readonly conflict: Conflict) {
    super(`import refused: ${conflict.kind}${'line' in conflict ? ` (line ${conflict.line})` : ''}`);
  }
}

/** The conflict of the lowest line among several (checks that each found their first). */
export function firstConflict(conflicts: Array<Conflict | null>): Conflict | null {
  let first: Conflict | null = null;
  for (const conflict of conflicts) {
    if (!conflict) continue;
    if (!first || ('line' in conflict && 'line' in first && conflict.line < first.line)) first = conflict;
  }
  return first;
}

/** The interruption's reason, as the run's outcome says it. */
export function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  return typeof reason === 'string' ? reason : 'interrupted';
}

/** Thrown where an aborted import stops (between chunks, between the steps of its end). */
export class ImportInterrupted extends StorageError {
  override name = 'ImportInterrupted';
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ImportInterrupted(abortReason(signal));
}

/**
 * The container a parent URI names: `/buckets/b` → bucket b under ''; `/buckets/b/collections/c` →
 * collection c under `/buckets/b`.
 */
export function containerOf(uri: string): { resource: string; parent: string; id: string } | null {
  const parts = uri.split('/');
  if (parts.length === 3 && parts[1] === 'buckets') return { resource: 'bucket', parent: '', id: parts[2]! };
  if (parts.length === 5 && parts[1] === 'buckets' && parts[3] === 'collections')
    return { resource: 'collection', parent: `/buckets/${parts[2]}`, id: parts[4]! };
  return null;
}
