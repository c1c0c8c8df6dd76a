/**
 * Picks the backend from settings: a `postgresql://` storage_url, else the embedded store in
 * data_dir. The embedded store is SQLite (sqlite/): PGlite, the embedded PostgreSQL it replaces,
 * could not keep up (a lookup by id 150-600 µs against 15 µs, on the same machine). A data
 * directory that an earlier Quire filled with PGlite keeps being served by PGlite, so that no
 * data is left behind by an upgrade.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { StorageSettings } from './settings.js';
import { backoffDelay, sleep } from '../retry.js';
import { DatabaseUnavailableError } from './errors.js';
import { connectionFault, describeTarget, rootMessage } from './sql/connection-faults.js';
import { createPgliteStorage, createPostgresStorage } from './sql/sql-storage.js';
import { createSqliteStorage } from './sqlite/sqlite-storage.js';
import type { Storage } from './types.js';

export interface StorageFactoryOptions {
  /** Apply pending migrations (the `migrate` command; embedded stores always do). */
  migrate?: boolean;
  /** Told when an existing PGlite data directory is used rather than SQLite (default: stderr). */
  warn?: (message: string) => void;
  /** Build and drop the declared indexes as collections declare them (default: yes; a serving process). */
  keepIndexes?: boolean;
}

/** The embedded store's file in a data directory. */
export const EMBEDDED_FILE = 'quire.sqlite';
/** Where an earlier Quire kept its PGlite store. */
const PGLITE_DIR = 'pglite';

export async function createStorageFromSettings(
  settings: StorageSettings,
  options: StorageFactoryOptions = {},
): Promise<Storage> {
  if (settings.storage_url) {
    return createPostgresStorage({
      url: settings.storage_url,
      poolSize: settings.storage_pool_size,
      statementTimeoutMs: settings.storage_statement_timeout_ms,
      ownerShare: settings.storage_pool_max_share,
      addressShare: settings.storage_pool_max_share_per_address,
      costlyPerOwner: settings.storage_costly_statements_per_identity,
      costlyPerAddress: settings.storage_costly_statements_per_address,
      autoMigrate: options.migrate ?? settings.storage_auto_migrate,
      cacheMaxEntries: settings.storage_cache_max_entries,
      ...(settings.storage_poll_cache_max_staleness_ms === null
        ? {}
        : { pollCacheMaxStalenessMs: settings.storage_poll_cache_max_staleness_ms }),
      reconnectMaxDelayMs: settings.storage_reconnect_max_delay_seconds * 1000,
      pooler: settings.storage_pooler,
      ...(settings.storage_listen_url ? { listenUrl: settings.storage_listen_url } : {}),
      pollIntervalMs: settings.storage_poll_interval_seconds * 1000,
      replicaMaxLagMs: settings.storage_replica_max_lag_seconds * 1000,
      maxDeclaredIndexes: settings.storage_max_declared_indexes,
      keepIndexes: options.keepIndexes ?? true,
    });
  }
  const dataDir = resolve(settings.data_dir);
  mkdirSync(dataDir, { recursive: true });
  const pglite = resolve(dataDir, PGLITE_DIR);
  if (existsSync(pglite) && !existsSync(resolve(dataDir, EMBEDDED_FILE))) {
    (options.warn ?? ((message) => console.warn(`quire: ${message}`)))(
      `${dataDir} holds an embedded store of an earlier Quire (PGlite): it is used as it is. ` +
        'A new data directory gets the SQLite store, several times faster.',
    );
    return createPgliteStorage({
      dataDir: pglite,
      maxDeclaredIndexes: settings.storage_max_declared_indexes,
      keepIndexes: options.keepIndexes ?? true,
    });
  }
  return createSqliteStorage({
    path: resolve(dataDir, EMBEDDED_FILE),
    maxDeclaredIndexes: settings.storage_max_declared_indexes,
    keepIndexes: options.keepIndexes ?? true,
    cacheMaxEntries: settings.storage_cache_max_entries,
    groupCommitMax: settings.storage_group_commit_max,
  });
}

/** The first wait between attempts to reach the database at start; each failure doubles it, up to the max. */
const FIRST_ATTEMPT_DELAY_MS = 500;
const MAX_ATTEMPT_DELAY_MS = 5_000;

/**
 * `createStorageFromSettings` for a process that starts (`quire start`, `quire migrate`, the
 * workers' primary): a PostgreSQL that is not there yet (starting beside us, restarting) is
 * tried again for `storage_connect_timeout_seconds`, with a line per failed attempt, then
 * DatabaseUnavailableError. Other failures (no such database, credentials refused, pending
 * migrations) are thrown at once: waiting would not change them.
 */
export async function connectStorage(
  settings: StorageSettings,
  options: StorageFactoryOptions & { log?: (line: string) => void } = {},
): Promise<Storage> {
  const { log = (line: string) => console.error(`quire: ${line}`), ...factoryOptions } = options;
  const started = Date.now();
  const deadline = started + settings.storage_connect_timeout_seconds * 1000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await createStorageFromSettings(settings, factoryOptions);
    } catch (error) {
      if (!settings.storage_url || connectionFault(error) !== 'unavailable') throw error;
      const target = describeTarget(settings.storage_url);
      const reason = rootMessage(error);
      const left = deadline - Date.now();
      if (left <= 0) {
        const waited =
          attempt === 1 ? 'one attempt' : `${attempt} attempts in ${Math.round((Date.now() - started) / 1000)} s`;
        throw new DatabaseUnavailableError(
          `PostgreSQL at ${target} is unavailable (${reason}; ${waited}, ` +
            `storage_connect_timeout_seconds = ${settings.storage_connect_timeout_seconds}): ` +
            'check storage_url and that the database is up',
          { cause: error },
        );
      }
      const delay = Math.min(
        left,
        backoffDelay({ firstMs: FIRST_ATTEMPT_DELAY_MS, maxMs: MAX_ATTEMPT_DELAY_MS }, attempt - 1),
      );
      log(
        `PostgreSQL at ${target} is unavailable (${reason}): attempt ${attempt} failed, ` +
          `next in ${(delay / 1000).toFixed(1)} s (storage_connect_timeout_seconds: ${Math.ceil(left / 1000)} s left)`,
      );
      await sleep(delay);
    }
  }
}
