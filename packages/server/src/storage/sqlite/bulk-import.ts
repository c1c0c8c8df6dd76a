/**
 * `quire import` into the embedded store (../bulk-import.ts): its row in `import_runs`, then one
 * BEGIN IMMEDIATE … COMMIT on the writer for the whole import (bulk-loader.ts fills it). Killed,
 * the process leaves a WAL without the commit, which SQLite drops when the file is next opened.
 *
 * For speed, the secondary indexes of the access-control entries are dropped while an empty
 * table fills, and built again at the end (in the same transaction): one sorted build instead of
 * a million random inserts. The end analyses what was loaded, but the objects and history tables,
 * whose statistics the schema fixes (migrations.ts: plans that suit large scopes whatever the data).
 */
import { hostname } from 'node:os';
import {
  abortReason,
  type BulkImportOptions,
  type BulkImportResult,
  type BulkLoader,
  ImportConflict,
  ImportInterrupted,
  type ImportRun,
  throwIfAborted,
} from '../bulk-import.js';
import { BackendError } from '../errors.js';
import { SqliteBulkLoader } from './bulk-loader.js';
import type { Connection } from './connection.js';

/** Runs `fn` between BEGIN IMMEDIATE and COMMIT on the writer (sqlite-storage.ts `#write`). */
export type WriteTransaction = <T>(fn: (connection: Connection) => Promise<T>) => Promise<T>;

/** Tables an import leaves alone when it empties the store (`replace`). */
const KEPT_TABLES = new Set(['schema_migrations', 'import_runs']);

export async function sqliteBulkImport(
  write: WriteTransaction,
  options: BulkImportOptions,
  fill: (loader: BulkLoader) => Promise<void>,
): Promise<BulkImportResult> {
  const { run, signal } = options;
  let runId: number;
  try {
    runId = await write(async (c) =>
      Number(
        c.db
          .prepare('INSERT INTO import_runs (started_at, pid, host, input) VALUES (?, ?, ?, ?)')
          .run(run.startedAt, run.pid, run.host || hostname(), run.input).lastInsertRowid,
      ),
    );
  } catch (error) {
    // Another process holds the write lock (an import, or a server writing).
    if (error instanceof BackendError && /locked|busy/i.test(error.message))
      throw new ImportConflict({ kind: 'running', run: null });
    throw error;
  }
  try {
    const replaced = await write(async (c) => {
      const unfinished = c.all<{
        started_at: number;
        pid: number;
        host: string;
        input: string;
        outcome: string | null;
      }>('SELECT started_at, pid, host, input, outcome FROM import_runs WHERE id <> ? ORDER BY id', [runId]);
      if (unfinished.length) options.onUnfinished?.(unfinished.map(toRun));
      prepareStore(c, options.replace);
      const offsets = {
        objects: c.get<{ top: number | null }>('SELECT max(rowid) AS top FROM objects')?.top ?? 0,
        history: c.get<{ top: number | null }>('SELECT max(rowid) AS top FROM history')?.top ?? 0,
      };
      const dropped = dropIndexesOfEmpty(c, 'access_control_entries');
      const loader = new SqliteBulkLoader(c, offsets, options.replace, signal);
      await fill(loader);
      options.onPhase?.('checking');
      await loader.check();
      throwIfAborted(signal);
      options.onPhase?.('indexing');
      giveCollectionsTimestamps(c);
      for (const sql of dropped) c.exec(sql);
      throwIfAborted(signal);
      options.onPhase?.('analysing');
      analyse(c);
      c.run('DELETE FROM import_runs');
      return loader.replaced;
    });
    return { replaced };
  } catch (error) {
    // Rolled back. Interrupted: its row stays, saying so; refused or failed: this run reports it itself.
    const outcome = error instanceof ImportInterrupted ? abortReason(signal) : null;
    await write(async (c) => {
      if (outcome) c.run('UPDATE import_runs SET outcome = ? WHERE id = ?', [outcome, runId]);
      else c.run('DELETE FROM import_runs WHERE id = ?', [runId]);
    }).catch(() => undefined);
    throw error;
  }
}

function toRun(row: {
  started_at: number;
  pid: number;
  host: string;
  input: string;
  outcome: string | null;
}): ImportRun {
  return { startedAt: row.started_at, pid: row.pid, host: row.host, input: row.input, outcome: row.outcome };
}

/** Refuses a store that holds buckets or accounts (live or deleted), or empties it (`replace`). */
function prepareStore(c: Connection, replace: boolean): void {
  const holds = c.get(
    "SELECT 1 AS found FROM objects WHERE parent_id = '' AND resource_name IN ('bucket', 'account') LIMIT 1",
  );
  if (!holds) return;
  if (!replace) throw new ImportConflict({ kind: 'not-empty' });
  const tables = c.all<{ name: string }>(
    `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'`,
  );
  // Names from the catalog, quoted: never user input.
  for (const { name } of tables) if (!KEPT_TABLES.has(name)) c.run(`DELETE FROM "${name.replace(/"/g, '""')}"`);
}

/** Drops the secondary indexes of `table` when it is empty; returns the statements that build them again. */
function dropIndexesOfEmpty(c: Connection, table: string): string[] {
  if (c.get(`SELECT 1 AS found FROM ${table} LIMIT 1`)) return [];
  const indexes = c.all<{ name: string; sql: string }>(
    "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
    [table],
  );
  for (const { name } of indexes) c.exec(`DROP INDEX "${name.replace(/"/g, '""')}"`);
  return indexes.map(({ sql }) => sql);
}

/**
 * A collection created through the API has a records timestamp from the start (the change
 * monitor walks them); an export has no line for an empty scope: those get one now.
 */
function giveCollectionsTimestamps(c: Connection): void {
  c.run(
    `INSERT OR IGNORE INTO timestamps (parent_id, resource_name, last_modified)
     SELECT c.parent_id || '/collections/' || c.id, 'record', CAST(unixepoch('subsec') * 1000 AS INTEGER)
     FROM objects b JOIN objects c ON c.parent_id = '/buckets/' || b.id AND c.resource_name = 'collection'
     WHERE b.parent_id = '' AND b.resource_name = 'bucket' AND NOT b.deleted AND NOT c.deleted`,
  );
}

/**
 * Statistics of the tables loaded whose statistics the schema leaves to ANALYZE (the ACLs, group
 * members and timestamps), from a bounded sample (`analysis_limit`), so that its time does not
 * grow with the import.
 */
function analyse(c: Connection): void {
  c.exec('PRAGMA analysis_limit = 2000; ANALYZE access_control_entries; ANALYZE group_members; ANALYZE timestamps');
}
