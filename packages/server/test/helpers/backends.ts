/**
 * Server feature tests that must hold on both stores: `describeOnBackends()` runs a block once
 * on the embedded store (SQLite, in a temporary file) and once on PostgreSQL (a fresh schema, dropped
 * afterwards), each with a store of its own. Without a reachable PostgreSQL the second copy is
 * skipped with the reason printed — a failure where CI sets QUIRE_TEST_REQUIRE_PG.
 *
 *   describeOnBackends('events', { timeout: 30_000 }, ({ name, storage, serverWith }) => {
 *     it('…', async () => { const app = await serverWith({ history_enabled: true }); … });
 *   });
 *
 * Destructure `storage` only inside hooks and tests: the store opens in `beforeAll`.
 */
import { describe } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import { createSqliteStorage } from '../../src/storage/sqlite/sqlite-storage.js';
import { type EmbeddedStore, useStore } from './embedded-server.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable } from './postgres.js';

export type BackendName = 'embedded' | 'postgresql';

export interface Backend extends EmbeddedStore {
  readonly name: BackendName;
  /** PostgreSQL: the store's schema (e.g. to find its connections in pg_stat_activity). */
  readonly schema: string | undefined;
}

/**
 * Why this file's PostgreSQL copies are skipped (undefined when PostgreSQL answers; the reason is
 * printed). Throws at import, failing the file, when QUIRE_TEST_REQUIRE_PG is set. Blocks that
 * need PostgreSQL alone (e.g. two server processes on one schema) skip on it too.
 */
export const postgresSkipReason = await postgresUnavailable('server feature tests (PostgreSQL copies)');

function useBackend(name: BackendName): Backend {
  let schema: string | undefined;
  const store = useStore(async () => {
    if (name === 'embedded') {
      // On a file, as `quire start` runs it: reads on their own connections beside the writer.
      const dir = await mkdtemp(join(tmpdir(), 'quire-embedded-'));
      return {
        storage: await createSqliteStorage({ path: join(dir, 'quire.sqlite') }),
        dispose: () => rm(dir, { recursive: true, force: true }),
      };
    }
    const fresh = newSchemaName();
    schema = fresh;
    const storage = await createPostgresStorage({ url: PG_URL, schema: fresh, autoMigrate: true, poolSize: 8 }).catch(
      async (error: unknown) => {
        await dropSchema(fresh).catch(() => {});
        throw error;
      },
    );
    return { storage, dispose: () => dropSchema(fresh) };
  });
  return {
    name,
    get storage() {
      return store.storage;
    },
    get schema() {
      return schema;
    },
    serverWith: store.serverWith,
  };
}

/** `describe(title)` once per backend, named `title [embedded]` and `title [postgresql]`. */
export function describeOnBackends(
  title: string,
  options: { timeout?: number },
  suite: (backend: Backend) => void,
): void {
  describe(`${title} [embedded]`, options, () => suite(useBackend('embedded')));
  describe.skipIf(postgresSkipReason !== undefined)(`${title} [postgresql]`, options, () =>
    suite(useBackend('postgresql')),
  );
}
