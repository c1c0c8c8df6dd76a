/**
 * PostgreSQL for server tests: the URL, why it cannot be used (undefined when it answers), and
 * throw-away schemas. CI sets QUIRE_TEST_REQUIRE_PG, where a missing server is a failure.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

export const PG_URL = process.env.QUIRE_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

/**
 * A `pg.Client` for test code, listening for 'error'. PostgreSQL ending a session (a restart,
 * pg_terminate_backend, an idle timeout) makes its client emit 'error', and an 'error' event
 * without a listener ends the process: in a global setup, the whole vitest run. Here the
 * client's next query fails instead. Use it for every client a test opens.
 */
export function testClient(config: string | pg.ClientConfig): pg.Client {
  const client = new pg.Client(config);
  client.on('error', () => {});
  return client;
}

export async function postgresUnavailable(file: string): Promise<string | undefined> {
  const client = testClient({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    const reason = `PostgreSQL unreachable at ${PG_URL} (${error instanceof Error ? error.message : String(error)})`;
    if (process.env.QUIRE_TEST_REQUIRE_PG) throw new Error(`${file}: ${reason} and QUIRE_TEST_REQUIRE_PG is set`);
    console.warn(`${file}: PostgreSQL parts skipped: ${reason}. Set QUIRE_TEST_PG_URL.`);
    return reason;
  } finally {
    await client.end().catch(() => {});
  }
}

export const newSchemaName = (): string => `quire_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;

/** Runs SQL as an administrator, outside any test schema. */
export async function runAsAdmin(sql: string): Promise<void> {
  const client = testClient({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await runAsAdmin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

/** Statements of the server named `applicationName` running now that call `translate` (`like_`, costly listings). */
export async function runningTranslates(applicationName: string): Promise<number> {
  const client = testClient(PG_URL);
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE application_name = $1 AND state = 'active' AND query LIKE '%translate(%'`,
      [applicationName],
    );
    return rows[0]!.n;
  } finally {
    await client.end();
  }
}
