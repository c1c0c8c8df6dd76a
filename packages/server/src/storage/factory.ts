/**
 * Picks the backend from settings: a `postgresql://` storage_url, else the embedded store in
 * data_dir. The embedded store is SQLite (sqlite/): PGlite, the embedded PostgreSQL it replaces,
 * could not keep up (a lookup by id 150-600 µs against 15 µs, on the same machine). A data
 * directory that an earlier Quire filled with PGlite keeps being served by PGlite, so that no
 * data is left behind by an upgrade.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Settings } from '../config.js';
import { createPgliteStorage, createPostgresStorage } from './sql/sql-storage.js';
import { createSqliteStorage } from './sqlite/sqlite-storage.js';
import type { Storage } from './types.js';

export interface StorageFactoryOptions {
  /** Apply pending migrations (the `migrate` command; embedded stores always do). */
  migrate?: boolean;
  /** Told when an existing PGlite data directory is used rather than SQLite (default: stderr). */
  warn?: (message: string) => void;
}

/** The embedded store's file in a data directory. */
export const EMBEDDED_FILE = 'quire.sqlite';
/** Where an earlier Quire kept its PGlite store. */
const PGLITE_DIR = 'pglite';

export async function createStorageFromSettings(settings: Settings, options: StorageFactoryOptions = {}): Promise<Storage> {
  if (settings.storage_url) {
    return createPostgresStorage({
      url: settings.storage_url,
      poolSize: settings.storage_pool_size,
      autoMigrate: options.migrate ?? settings.storage_auto_migrate,
      cacheMaxEntries: settings.storage_cache_max_entries,
      reconnectMaxDelayMs: settings.storage_reconnect_max_delay_seconds * 1000,
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
    return createPgliteStorage({ dataDir: pglite });
  }
  return createSqliteStorage({ path: resolve(dataDir, EMBEDDED_FILE) });
}
