/**
 * Schema migrations: numbered SQL files (`migrations/NNN-name.sql`) applied in order, each in
 * its own transaction, and recorded in `schema_migrations`.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MigrationRequiredError } from '../errors.js';
import type { SqlDriver } from './drivers/types.js';

export interface Migration {
  version: number;
  /** File name without extension, e.g. `001-initial`. */
  name: string;
  sql: string;
}

const MIGRATION_FILE = /^(\d+)-[\w-]+\.sql$/;

const CREATE_MIGRATIONS_TABLE = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
  )`;

/**
 * The folder of the migration files. From source it sits beside this module; the bundle
 * (`dist/cli.js` and its chunks) gets a copy in `dist/migrations`, which is `./migrations/`
 * from a file at the root of `dist` and `../migrations/` from an entry one level below.
 */
export function migrationsDir(): string {
  const candidates = [new URL('./migrations/', import.meta.url), new URL('../migrations/', import.meta.url)];
  for (const candidate of candidates) {
    const dir = fileURLToPath(candidate);
    if (existsSync(dir)) return dir;
  }
  throw new Error(`SQL migrations not found (looked in ${candidates.map((url) => fileURLToPath(url)).join(', ')})`);
}

export async function loadMigrations(dir = migrationsDir()): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for (const file of await readdir(dir)) {
    const match = MIGRATION_FILE.exec(file);
    if (!match?.[1]) continue;
    migrations.push({
      version: Number(match[1]),
      name: file.slice(0, -'.sql'.length),
      sql: await readFile(join(dir, file), 'utf8'),
    });
  }
  return migrations.sort((a, b) => a.version - b.version);
}

/**
 * Applies the pending migrations (up to version `upTo`: tests of a migration) and returns
 * their names. Safe to run from several processes at once: each migration transaction first
 * takes an advisory lock (per schema), then checks whether another process applied it
 * meanwhile.
 */
export async function migrate(driver: SqlDriver, { upTo = Infinity }: { upTo?: number } = {}): Promise<string[]> {
  const applied: string[] = [];
  for (const migration of (await loadMigrations()).filter(({ version }) => version <= upTo)) {
    const done = await driver.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('quire.migrate:' || coalesce(current_schema(), '')))`);
      await tx.exec(CREATE_MIGRATIONS_TABLE);
      const rows = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [migration.version]);
      if (rows.length > 0) return false;
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      return true;
    });
    if (done) applied.push(migration.name);
  }
  return applied;
}

/** Throws MigrationRequiredError unless the database is exactly at the code's schema version. */
export async function checkMigrations(driver: SqlDriver): Promise<void> {
  const migrations = await loadMigrations();
  const [row] = await driver.query<{ registry: string | null }>(
    `SELECT to_regclass('schema_migrations')::text AS registry`,
  );
  if (!row?.registry) {
    throw new MigrationRequiredError('The database has no Quire schema: run `quire migrate`.');
  }
  const rows = await driver.query<{ version: number }>('SELECT version FROM schema_migrations');
  const applied = new Set(rows.map((row) => row.version));
  const pending = migrations.filter((migration) => !applied.has(migration.version));
  if (pending.length > 0) {
    throw new MigrationRequiredError(
      `The database schema is out of date (pending: ${pending.map((m) => m.name).join(', ')}): run \`quire migrate\`.`,
    );
  }
  const known = new Set(migrations.map((migration) => migration.version));
  const unknown = [...applied].filter((version) => !known.has(version));
  if (unknown.length > 0) {
    throw new MigrationRequiredError(
      `The database schema has migrations this version of Quire does not know (${unknown.join(', ')}): upgrade Quire.`,
    );
  }
}
