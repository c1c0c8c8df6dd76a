/**
 * Server feature tests that must hold on both stores: `describeOnBackends()` runs a block once
 * on the embedded store (in-memory PGlite) and once on PostgreSQL (a fresh schema, dropped
 * afterwards), each with a store of its own. Without a reachable PostgreSQL the second copy is
 * skipped with the reason printed — a failure where CI sets QUIRE_TEST_REQUIRE_PG.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe } from 'vitest';
import { buildServer } from '../../src/app.js';
import type { Settings } from '../../src/config.js';
import { createPgliteStorage, createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import type { Storage } from '../../src/storage/types.js';
import { testSettings } from './embedded-server.js';
import { dropSchema, newSchemaName, PG_URL, postgresUnavailable } from './postgres.js';

export type BackendName = 'embedded' | 'postgresql';

export interface Backend {
  readonly name: BackendName;
  /** The block's store (opened before its tests, closed after). */
  readonly storage: Storage;
  /** A server (not listening; use `inject`) on the block's store; closed after the block if still open. */
  serverWith(overrides?: Partial<Settings>): Promise<FastifyInstance>;
}

const pgReason = await postgresUnavailable('server feature tests (PostgreSQL copies)');

/** Opens a store of `name` before the enclosing block's tests; closes (and drops) it after. */
function useStore(name: BackendName): Backend {
  let storage: Storage | undefined;
  let schema: string | undefined;
  const servers: FastifyInstance[] = [];
  beforeAll(async () => {
    if (name === 'embedded') storage = await createPgliteStorage();
    else storage = await createPostgresStorage({ url: PG_URL, schema: (schema = newSchemaName()), autoMigrate: true, poolSize: 8 });
  }, 60_000);
  afterAll(async () => {
    // A test that failed half-way may leave its server open; close() is idempotent.
    await Promise.all(servers.map((app) => app.close()));
    await storage?.close();
    if (schema) await dropSchema(schema);
  });
  const opened = (): Storage => {
    if (!storage) throw new Error('describeOnBackends: the store opens in beforeAll');
    return storage;
  };
  return {
    name,
    get storage() {
      return opened();
    },
    async serverWith(overrides = {}) {
      const app = await buildServer({ settings: testSettings(overrides), storage: opened(), logger: false });
      servers.push(app);
      return app;
    },
  };
}

/** `describe(title)` once per backend, named `title [embedded]` and `title [postgresql]`. */
export function describeOnBackends(title: string, options: { timeout?: number }, suite: (backend: Backend) => void): void {
  describe(`${title} [embedded]`, options, () => suite(useStore('embedded')));
  describe.skipIf(pgReason !== undefined)(`${title} [postgresql]`, options, () => suite(useStore('postgresql')));
}
