import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createPostgresStorage } from '../../src/storage/sql/sql-storage.js';
import { startForConformance } from './start-server.js';

const url = process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

/**
 * Conformance against real PostgreSQL, in a fresh schema dropped afterwards. Without a
 * reachable server the suite is skipped with the reason printed (CI always has one).
 */
export default async function setup(project: TestProject) {
  const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await probe.connect();
  } catch (error) {
    if (process.env.QUIRE_TEST_REQUIRE_PG) throw new Error(`PostgreSQL required but unreachable at ${url}: ${(error as Error).message}`);
    console.warn(`[conformance:postgresql] SKIPPED: PostgreSQL unreachable at ${url} (${(error as Error).message})`);
    project.provide('conformanceUrl', '');
    return;
  }
  const schema = `quire_conf_${randomBytes(6).toString('hex')}`;
  const storage = await createPostgresStorage({ url, schema, autoMigrate: true, poolSize: 10 });
  const stop = await startForConformance(project, storage);
  return async () => {
    await stop();
    await probe.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await probe.end();
  };
}
