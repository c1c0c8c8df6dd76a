#!/usr/bin/env node
/**
 * `quire start` — serve the API (graceful shutdown on SIGTERM/SIGINT: in-flight requests finish),
 * in `workers` processes on one port (workers.ts) when that setting is above 1.
 * `quire migrate` — apply pending PostgreSQL migrations, listing them.
 * `quire export` / `quire import` — the store as NDJSON and back (commands/transfer.ts).
 * `quire` alone prints the help.
 * Options: `--config <file.json>`; every setting also comes from `QUIRE_<NAME>`.
 * The commonest mistakes at start end in one line naming the setting to change, and an exit
 * code per kind (exit-codes.ts); only the unexpected ones print a stack trace.
 */
import { parseArgs } from 'node:util';
import { buildServer } from './app.js';
import { ConfigError, loadSettings, redactSettings, type Settings } from './config.js';
import { EXIT, EXIT_CODES_HELP } from './exit-codes.js';
import { resolveSecrets } from './secrets.js';
import { DatabaseUnavailableError, MigrationRequiredError } from './storage/errors.js';
import { connectStorage, type StorageFactoryOptions } from './storage/factory.js';
import { connectionFault, databaseName, describeTarget, rootMessage } from './storage/sql/connection-faults.js';
import { runTransferCommand, TRANSFER_USAGE } from './commands/transfer.js';
import { migrationReport } from './commands/migrate.js';
import { serveClusterMetrics } from './observability/metrics.js';
import { stopOnSignals } from './shutdown.js';
import { runCluster } from './workers.js';

const USAGE = `Usage: quire <start|migrate|export|import> [--config settings.json]

  quire start
      serve the API
  quire migrate
      apply the pending PostgreSQL migrations and list them
${TRANSFER_USAGE}

Settings come from QUIRE_<NAME> environment variables, then the config file, then defaults.
See the README for the full list.

${EXIT_CODES_HELP}`;

/** The server could not listen on its address. */
class ListenError extends Error {
  override name = 'ListenError';
  constructor(
    readonly host: string,
    readonly port: number,
    options: { cause: unknown },
  ) {
    super(`cannot listen on ${host}:${port}`, options);
  }
}

/** The storage_url in use, for the messages of database failures (never printed whole: it may hold a password). */
let storageUrl: string | null = null;

/** The command line, parsed; null when it is wrong (the error and the usage printed). */
function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    console.error(`quire: ${(error as Error).message}\n\n${USAGE}`);
    return null;
  }
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'export' || argv[0] === 'import')
    return runTransferCommand(argv[0], argv.slice(1), (url) => (storageUrl = url));
  const parsed = parseCommandLine(argv);
  if (!parsed) return EXIT.USAGE;
  const { positionals, values } = parsed;
  const command = positionals[0];
  // No command: the help, rather than a server started by accident.
  if (values.help || command === undefined || !['start', 'migrate'].includes(command)) {
    console.log(USAGE);
    return values.help || command === undefined ? 0 : EXIT.USAGE;
  }
  const settings = resolveSecrets(loadSettings({ configFile: values.config ?? process.env.QUIRE_CONFIG ?? null }));
  storageUrl = settings.storage_url;

  if (command === 'migrate') {
    const storage = await connectStorage(settings, { migrate: true, keepIndexes: false });
    await storage.close();
    console.log(
      migrationReport(
        storage.migrationsApplied ?? [],
        settings.storage_url ? 'PostgreSQL' : `embedded store in ${settings.data_dir}`,
      ),
    );
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
    prepare: async () => (await connectStorage(settings, { keepIndexes: false })).close(),
    startWorker: () => startServer(settings, { migrate: false }),
    log: (line) => console.error(`quire: ${line}`),
  });
  if (cluster && settings.metrics_enabled && settings.metrics_port !== null)
    await serveClusterMetrics(settings.host, settings.metrics_port);
  if (cluster)
    console.log(
      `Quire is listening on http://${settings.host}:${cluster.port}/v1/ (PostgreSQL, ${settings.workers} workers)`,
    );
  return -1;
}

/** Opens the store, builds the app and listens; stops gracefully on SIGTERM/SIGINT. Returns the port. */
async function startServer(settings: Settings, storageOptions: StorageFactoryOptions = {}): Promise<number> {
  const storage = await connectStorage(settings, storageOptions);
  const app = await buildServer({ settings, storage });
  app.log.info({ settings: redactSettings(settings), backend: storage.backend }, 'settings loaded');

  stopOnSignals(app.log, settings.shutdown_timeout_seconds, async () => {
    await app.close();
    await storage.close();
  });

  try {
    await app.listen({ host: settings.host, port: settings.port });
  } catch (error) {
    await app.close().catch(() => {});
    await storage.close().catch(() => {});
    throw new ListenError(settings.host, settings.port, { cause: error });
  }
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : settings.port;
}

/** The line and exit code of an expected failure (a mistake to fix, a database away); undefined for a bug. */
function explain(error: unknown): { line: string; code: number } | undefined {
  if (error instanceof ConfigError || error instanceof MigrationRequiredError)
    return { line: error.message, code: EXIT.CONFIG };
  if (error instanceof DatabaseUnavailableError) return { line: error.message, code: EXIT.DATABASE_UNAVAILABLE };
  if (error instanceof ListenError) {
    const code = (error.cause as { code?: unknown } | undefined)?.code;
    const where = error.message;
    const line =
      code === 'EADDRINUSE'
        ? `${where}: the address is in use by another process (EADDRINUSE): set port (QUIRE_PORT) or host ` +
          '(QUIRE_HOST), or stop that process'
        : code === 'EADDRNOTAVAIL'
          ? `${where}: ${error.host} is not an address of this host (EADDRNOTAVAIL): set host (QUIRE_HOST)`
          : code === 'EACCES'
            ? `${where}: permission denied (EACCES; ports below 1024 need privileges): set port (QUIRE_PORT)`
            : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
              ? `${where}: the host name does not resolve (${code}): set host (QUIRE_HOST)`
              : `${where}: ${rootMessage(error.cause)}: check host (QUIRE_HOST) and port (QUIRE_PORT)`;
    return { line, code: EXIT.CANNOT_LISTEN };
  }
  if (!storageUrl) return undefined;
  const target = describeTarget(storageUrl);
  switch (connectionFault(error)) {
    case 'no-database': {
      const name = databaseName(storageUrl) ?? '(the default database)';
      return {
        line:
          `database "${name}" does not exist on PostgreSQL at ${target}: create it (e.g. createdb ${name}) or ` +
          'fix storage_url',
        code: EXIT.CONFIG,
      };
    }
    case 'credentials':
      return {
        line:
          `PostgreSQL at ${target} refused the credentials of storage_url (${rootMessage(error)}): fix the user ` +
          'or password in storage_url',
        code: EXIT.CONFIG,
      };
    case 'unavailable': // reached, then lost (e.g. while migrating)
      return {
        line:
          `PostgreSQL at ${target} became unavailable (${rootMessage(error)}): check that the database is up, ` +
          'then try again',
        code: EXIT.DATABASE_UNAVAILABLE,
      };
    default:
      return undefined;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    const failure = explain(error);
    if (failure) {
      console.error(`quire: ${failure.line}`);
      process.exit(failure.code);
    }
    console.error(error);
    process.exit(EXIT.FAILURE);
  },
);
