#!/usr/bin/env node
/**
 * `quire start` — serve the API (graceful shutdown on SIGTERM/SIGINT: in-flight requests finish),
 * in `workers` processes on one port (workers.ts) when that setting is above 1.
 * `quire migrate` — apply pending PostgreSQL migrations.
 * Options: `--config <file.json>`; every setting also comes from `QUIRE_<NAME>`.
 */
import { parseArgs } from 'node:util';
import { buildServer } from './app.js';
import { ConfigError, loadSettings, redactSettings, type Settings } from './config.js';
import { resolveSecrets } from './secrets.js';
import { MigrationRequiredError } from './storage/errors.js';
import { createStorageFromSettings, type StorageFactoryOptions } from './storage/factory.js';
import { runCluster } from './workers.js';

const USAGE = `Usage: quire <start|migrate> [--config settings.json]

Settings come from QUIRE_<NAME> environment variables, then the config file, then defaults.
See the README for the full list.`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const command = positionals[0] ?? 'start';
  if (values.help || !['start', 'migrate'].includes(command)) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const settings = resolveSecrets(loadSettings({ configFile: values.config ?? process.env.QUIRE_CONFIG ?? null }));

  if (command === 'migrate') {
    const storage = await createStorageFromSettings(settings, { migrate: true });
    await storage.close();
    console.log(`Migrations applied (${settings.storage_url ? 'postgresql' : 'embedded store'}).`);
    return 0;
  }

  if (settings.workers === 1) {
    const port = await startServer(settings);
    const where = settings.storage_url ? 'PostgreSQL' : `embedded store in ${settings.data_dir}`;
    console.log(`Quire is listening on http://${settings.host}:${port}/v1/ (${where})`);
    return -1;
  }
  const cluster = await runCluster({
    workers: settings.workers,
    // Checked (and with storage_auto_migrate, migrated) once, here, before forking: a schema
    // that needs migrating or a database that does not answer is then one clear error, where
    // workers would each report it and be restarted until the primary gives up. (The advisory
    // lock of migrate() would keep concurrent migrations by the workers safe, not quiet.)
    prepare: async () => (await createStorageFromSettings(settings)).close(),
    startWorker: () => startServer(settings, { migrate: false }),
    log: (line) => console.error(`quire: ${line}`),
  });
  if (cluster) console.log(`Quire is listening on http://${settings.host}:${cluster.port}/v1/ (PostgreSQL, ${settings.workers} workers)`);
  return -1;
}

/** Opens the store, builds the app and listens; stops gracefully on SIGTERM/SIGINT. Returns the port. */
async function startServer(settings: Settings, storageOptions: StorageFactoryOptions = {}): Promise<number> {
  const storage = await createStorageFromSettings(settings, storageOptions);
  const app = await buildServer({ settings, storage });
  app.log.info({ settings: redactSettings(settings), backend: storage.backend }, 'settings loaded');

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      app.log.error('shutdown timed out; exiting');
      process.exit(1);
    }, settings.shutdown_timeout_seconds * 1000);
    force.unref();
    await app.close();
    await storage.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ host: settings.host, port: settings.port });
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : settings.port;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    if (error instanceof ConfigError || error instanceof MigrationRequiredError) {
      console.error(`quire: ${error.message}`);
      process.exit(78); // EX_CONFIG
    }
    console.error(error);
    process.exit(1);
  },
);
