#!/usr/bin/env node
/**
 * `quire start` — serve the API (graceful shutdown on SIGTERM/SIGINT: in-flight requests finish).
 * `quire migrate` — apply pending PostgreSQL migrations.
 * Options: `--config <file.json>`; every setting also comes from `QUIRE_<NAME>`.
 */
import { parseArgs } from 'node:util';
import { buildServer } from './app.js';
import { ConfigError, loadSettings, redactSettings } from './config.js';
import { resolveSecrets } from './secrets.js';
import { MigrationRequiredError } from './storage/errors.js';
import { createStorageFromSettings } from './storage/factory.js';

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

  const storage = await createStorageFromSettings(settings);
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
  const port = typeof address === 'object' && address ? address.port : settings.port;
  const where = settings.storage_url ? 'PostgreSQL' : `embedded store in ${settings.data_dir}`;
  console.log(`Quire is listening on http://${settings.host}:${port}/v1/ (${where})`);
  return -1;
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
