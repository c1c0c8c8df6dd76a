/** A Quire server on a fresh embedded store, listening on a free port: the target of the published clients' tests. */
import type { AddressInfo } from 'node:net';
import { buildServer } from '../../src/app.js';
import { loadSettings } from '../../src/config.js';
import { createSqliteStorage } from '../../src/storage/sqlite/sqlite-storage.js';

export async function startEmbeddedTarget(
  overrides: Record<string, unknown>,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const storage = await createSqliteStorage();
  const settings = loadSettings({
    env: {},
    overrides: { userid_hmac_secret: 'compat-secret', log_level: 'silent', ...overrides },
  });
  const app = await buildServer({ settings, storage, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`,
    stop: async () => {
      await app.close();
      await storage.close();
    },
  };
}
