/** Public surface of @quire/server. */
export { buildServer, type BuildServerOptions } from './app.js';
export { loadSettings, ConfigError, SETTINGS, type Settings } from './config.js';
export { ApiError, ERRNO } from './errors.js';
export { resolveSecrets } from './secrets.js';
export { createStorageFromSettings } from './storage/factory.js';
export { createPgliteStorage, createPostgresStorage } from './storage/sql/sql-storage.js';
export { createSqliteStorage } from './storage/sqlite/sqlite-storage.js';
export * from './storage/errors.js';
export type * from './storage/types.js';
export type { AuthPolicy, Identity } from './auth/policy.js';
export type { CreateListener, ListenerContext, ListenerEvent, ModuleListener } from './listeners/module.js';
export { stopOnSignals } from './shutdown.js';
