/**
 * `quire import` into PostgreSQL (and PGlite), all or nothing (../bulk-import.ts): its row in
 * `import_runs` (autocommit), then ONE transaction on a connection of its own (the driver's
 * `bulkTransaction`) that stages every line by COPY (bulk-loader.ts), checks them set-based
 * (bulk-checks.ts) and moves them into place in a few statements: objects, history, ACLs and
 * group members (with their indexes built after the rows where the tables were empty:
 * bulk-indexes.ts), the scope timestamps raised, then ANALYZE of what was loaded, so that the
 * planner does not serve the first requests from the statistics of an empty store. A killed
 * client's backend rolls back at once (`client_connection_check_interval`).
 */
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
import { firstStagedConflict } from './bulk-checks.js';
import { dropIndexesOfEmptyTables, LOADED_TABLES } from './bulk-indexes.js';
import { SqlBulkLoader, STAGING_TABLES } from './bulk-loader.js';
import { type DeferredStatement, sqlState, type SqlConnection, type SqlDriver } from './drivers/types.js';

/** Tables an import leaves alone when it empties the store (`replace`): the registry, and the processes' channel. */
const KEPT_TABLES = [
  'schema_migrations',
  'import_runs',
  'notifications',
  'notifications_pruned',
  'notification_pollers',
];

/** `storage_import_sort_memory_mb`'s default. */
const SORT_MEMORY_MB = 1024;

/**
 * Session settings of the import's connection: staging in memory rather than in temporary files,
 * room for the index builds' sorts ($1), and a client that died noticed within a second.
 */
const SESSION_SETTINGS = `SELECT set_config('temp_buffers', '256MB', false),
  set_config('maintenance_work_mem', $1, false),
  CASE WHEN current_setting('server_version_num')::int >= 140000 -- the check is PostgreSQL 14's
    THEN set_config('client_connection_check_interval', '1000', false) END`;

interface Run extends Record<string, unknown> {
  started_at: number;
  pid: number;
  host: string;
  input: string;
  outcome: string | null;
}

const toRun = (row: Run): ImportRun => ({
  startedAt: Number(row.started_at),
  pid: row.pid,
  host: row.host,
  input: row.input,
  outcome: row.outcome,
});

export async function sqlBulkImport(
  driver: SqlDriver,
  notifyAll: (() => DeferredStatement) | undefined,
  options: BulkImportOptions,
  fill: (loader: BulkLoader) => Promise<void>,
): Promise<BulkImportResult> {
  const { run, signal } = options;
  const [marker] = await driver.query<{ id: number }>(
    'INSERT INTO import_runs (started_at, pid, host, input) VALUES ($1, $2, $3, $4) RETURNING id',
    [run.startedAt, run.pid, run.host, run.input],
  );
  const runId = Number(marker!.id);
  const transaction = <T>(fn: (c: SqlConnection) => Promise<T>): Promise<T> =>
    driver.bulkTransaction ? driver.bulkTransaction(fn, 'quire import') : driver.transaction(fn);
  try {
    return await transaction(async (c) => {
      await c.query(SESSION_SETTINGS, [`${Math.round(options.sortMemoryMb ?? SORT_MEMORY_MB)}MB`]);
      await holdStore(c, runId, options);
      await c.exec(STAGING_TABLES);
      const { rebuild, allEmpty } = await dropIndexesOfEmptyTables(c);
      const loader = new SqlBulkLoader(c, {
        replace: options.replace,
        direct: allEmpty && !options.replace,
        batchSize: options.batchSize,
        signal,
      });
      await fill(loader);
      await loader.staged();
      const replaced = await moveIntoPlace(c, loader, options, rebuild);
      await finish(c, options, notifyAll);
      return { replaced };
    });
  } catch (error) {
    // Rolled back. Interrupted: its row stays, saying so; refused or failed: this run reports it itself.
    const outcome = error instanceof ImportInterrupted ? abortReason(signal) : null;
    await (outcome
      ? driver.query('UPDATE import_runs SET outcome = $1 WHERE id = $2', [outcome, runId])
      : driver.query('DELETE FROM import_runs WHERE id = $1', [runId])
    ).catch(() => undefined);
    throw error;
  }
}

/**
 * One import at a time per schema (a transaction-level advisory lock: it works behind a
 * transaction pooler too); the earlier ones that never finished reported; the store refused if
 * it holds buckets or accounts, or emptied (`replace`).
 */
async function holdStore(c: SqlConnection, runId: number, options: BulkImportOptions): Promise<void> {
  const [lock] = await c.query<{ locked: boolean }>(
    `SELECT pg_try_advisory_xact_lock(hashtext('quire.import:' || coalesce(current_schema(), ''))) AS locked`,
  );
  const others = await c.query<Run & { id: number }>(
    'SELECT id, started_at, pid, host, input, outcome FROM import_runs WHERE id <> $1 ORDER BY id',
    [runId],
  );
  if (!lock?.locked) throw new ImportConflict({ kind: 'running', run: others.length ? toRun(others.at(-1)!) : null });
  if (others.length) options.onUnfinished?.(others.map(toRun));
  const [holds] = await c.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM objects WHERE parent_id = '' AND resource_name IN ('bucket', 'account')) AS found`,
  );
  if (!holds?.found) return;
  if (!options.replace) throw new ImportConflict({ kind: 'not-empty' });
  const [tables] = await c.query<{ list: string | null }>(
    `SELECT string_agg(format('%I', tablename), ', ') AS list FROM pg_tables
     WHERE schemaname = current_schema() AND tablename <> ALL($1::text[])`,
    [KEPT_TABLES],
  );
  if (tables?.list) await c.exec(`TRUNCATE ${tables.list}`);
}

/**
 * Checks the staged rows, then moves them into the store's tables. A key taken twice (the
 * unique indexes find it) rolls the move back: without `replace` the first offending line is
 * refused; with it, the rows that a later line replaces are left out and the move runs again.
 */
async function moveIntoPlace(
  c: SqlConnection,
  loader: SqlBulkLoader,
  options: BulkImportOptions,
  rebuild: string[],
): Promise<number> {
  options.onPhase?.('checking');
  const checks = { replace: options.replace, files: loader.files > 0 };
  const conflict = await firstStagedConflict(c, { ...checks, keys: false });
  // Refused: but an object given twice may come before it.
  if (conflict) throw new ImportConflict((await firstStagedConflict(c, { ...checks, keys: true }))!);
  throwIfAborted(options.signal);
  if (!loader.direct) options.onPhase?.('moving into place');
  await c.exec('SAVEPOINT move');
  try {
    if (loader.direct) await build(c, rebuild, options);
    else await move(c, rebuild, false, options);
    await c.exec('RELEASE SAVEPOINT move');
    return 0;
  } catch (error) {
    if (sqlState(error) !== '23505') throw error;
    await c.exec('ROLLBACK TO SAVEPOINT move');
  }
  const found = await firstStagedConflict(c, { ...checks, keys: true });
  if (found) throw new ImportConflict(found);
  if (!options.replace || loader.direct)
    throw new Error('a unique key failed, yet the import has no repeated object or timestamp');
  await c.exec('CREATE TEMP TABLE import_superseded (line bigint PRIMARY KEY) ON COMMIT DROP');
  const [superseded] = await c.query<{ count: number }>(
    `WITH superseded AS (
       INSERT INTO import_superseded SELECT line FROM (
         SELECT line, lead(line) OVER (
           PARTITION BY resource, parent, CASE WHEN resource = 'history' THEN last_modified::text ELSE id END
           ORDER BY line) AS later
         FROM import_objects) AS s
       WHERE later IS NOT NULL RETURNING 1)
     SELECT count(*)::int AS count FROM superseded`,
  );
  await move(c, rebuild, true, options);
  return superseded?.count ?? 0;
}

/** The staged rows into the store's tables (`dedupe`: but those of `import_superseded`), then the indexes. */
async function move(c: SqlConnection, rebuild: string[], dedupe: boolean, options: BulkImportOptions): Promise<void> {
  const kept = (alias: string) =>
    dedupe ? `AND NOT EXISTS (SELECT 1 FROM import_superseded x WHERE x.line = ${alias}.line)` : '';
  for (const [table, which] of [
    ['objects', "<> 'history'"],
    ['history', "= 'history'"],
  ] as const) {
    await c.exec(
      `INSERT INTO ${table} (parent_id, resource_name, id, last_modified, data, deleted)
       SELECT parent, resource, id, last_modified, data, deleted FROM import_objects o
       WHERE resource ${which} ${kept('o')}`,
    );
  }
  await c.exec(
    `INSERT INTO access_control_entries (object_id, permission, principal)
     SELECT object_id, permission, principal FROM import_aces a WHERE true ${kept('a')}`,
  );
  await c.exec(
    `INSERT INTO group_members (group_uri, principal)
     SELECT group_uri, principal FROM import_members m WHERE true ${kept('m')}`,
  );
  await build(c, rebuild, options);
}

/** The indexes dropped for the load, built again. */
async function build(c: SqlConnection, rebuild: string[], options: BulkImportOptions): Promise<void> {
  throwIfAborted(options.signal);
  options.onPhase?.('indexing');
  for (const statement of rebuild) await c.exec(statement);
}

/** Scope timestamps, empty collections' records timestamps, statistics, the runs' rows; the other processes told. */
async function finish(
  c: SqlConnection,
  options: BulkImportOptions,
  notifyAll: (() => DeferredStatement) | undefined,
): Promise<void> {
  await c.exec(
    `INSERT INTO timestamps AS t (parent_id, resource_name, last_modified)
     SELECT parent, resource, max(timestamp) FROM import_scopes WHERE timestamp > 0 GROUP BY parent, resource
     ON CONFLICT (parent_id, resource_name)
     DO UPDATE SET last_modified = GREATEST(t.last_modified, EXCLUDED.last_modified);
     INSERT INTO timestamps (parent_id, resource_name, last_modified)
     SELECT c.parent_id || '/collections/' || c.id, 'record',
       (floor(extract(epoch FROM clock_timestamp()) * 1000))::bigint
     FROM objects b JOIN objects c ON c.parent_id = '/buckets/' || b.id AND c.resource_name = 'collection'
     WHERE b.parent_id = '' AND b.resource_name = 'bucket' AND NOT b.deleted AND NOT c.deleted
     ON CONFLICT (parent_id, resource_name) DO NOTHING`,
  );
  throwIfAborted(options.signal);
  options.onPhase?.('analysing');
  await c.exec(`ANALYZE ${[...LOADED_TABLES, 'timestamps', 'object_counts'].join(', ')}`);
  await c.exec('DELETE FROM import_runs');
  const notify = notifyAll?.();
  if (notify) await c.query(notify.text, notify.params);
  throwIfAborted(options.signal);
}
