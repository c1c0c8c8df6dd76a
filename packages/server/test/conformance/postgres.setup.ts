import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import { dropSchema, PG_URL as url, testClient } from '../helpers/postgres.js';
import { startForConformance } from './start-server.js';

/**
 * Conformance against real PostgreSQL, in a fresh schema dropped afterwards. Without a
 * reachable server the suite is skipped with the reason printed (CI always has one).
 * No connection of its own stays open during the run: this runs in vitest's main process, where
 * one dropped by PostgreSQL would end the whole run (the storage's connections survive drops).
 */
export default async function setup(project: TestProject) {
  const probe = testClient({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await probe.connect();
  } catch (error) {
    if (process.env.QUIRE_TEST_REQUIRE_PG)
      throw new Error(`PostgreSQL required but unreachable at ${url}: ${(error as Error).message}`);
    console.warn(`[conformance:postgresql] SKIPPED: PostgreSQL unreachable at ${url} (${(error as Error).message})`);
    project.provide('conformanceUrl', '');
    return;
  } finally {
    await probe.end().catch(() => {});
  }
  const schema = `quire_conf_${randomBytes(6).toString('hex')}`;
  const storage = await createPostgresStorage({ url, schema, autoMigrate: true, poolSize: 10 });
  const stop = await startForConformance(project, storage);
  return async () => {
    await stop();
    await dropSchema(schema);
  };
}
