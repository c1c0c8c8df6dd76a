/**
 * The published `kinto-http` client against four `quire start` processes that reach one
 * PostgreSQL database through one PgBouncer in transaction mode, behind a round-robin proxy:
 * a client's consecutive requests land on different processes (kinto-http-scenarios.ts).
 */
import { pgbouncerUnavailable } from '../helpers/pgbouncer.js';
import { startPooledDeployment } from '../helpers/pooled-deployment.js';
import { postgresUnavailable } from '../helpers/postgres.js';
import { describeKintoHttp } from './kinto-http-scenarios.js';

const skip =
  (await postgresUnavailable('kinto-http-pooled.test.ts')) ?? pgbouncerUnavailable('kinto-http-pooled.test.ts');

/** `{ history_enabled: true }` → `QUIRE_HISTORY_ENABLED=true`. */
const asEnvironment = (settings: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(settings).map(([name, value]) => [`QUIRE_${name.toUpperCase()}`, String(value)]));

describeKintoHttp(
  'four processes through one pgbouncer (transaction pooling)',
  async (overrides) => {
    const deployment = await startPooledDeployment({ processes: 4, env: asEnvironment(overrides) });
    return { url: deployment.url, stop: deployment.close };
  },
  { timeout: 60_000, ...(skip === undefined ? {} : { skip }) },
);
