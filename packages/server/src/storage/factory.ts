/** Picks the backend from settings: a `postgresql://` storage_url, else the embedded store in data_dir. */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Settings } from '../config.js';
import { createPgliteStorage, createPostgresStorage } from './sql/sql-storage.js';
import type { Storage } from './types.js';

export interface StorageFactoryOptions {
  /** Apply pending migrations (the `migrate` command; embedded stores always do). */
  migrate?: boolean;
}

export async function createStorageFromSettings(settings: Settings, options: StorageFactoryOptions = {}): Promise<Storage> {
  if (settings.storage_url) {
    return createPostgresStorage({
      url: settings.storage_url,
      poolSize: settings.storage_pool_size,
      autoMigrate: options.migrate ?? settings.storage_auto_migrate,
    });
  }
  const dataDir = resolve(settings.data_dir);
  mkdirSync(dataDir, { recursive: true });
  return createPgliteStorage({ dataDir: resolve(dataDir, 'pglite') });
}
