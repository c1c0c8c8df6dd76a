/**
 * Boots the server on a real port for the conformance suite (which speaks plain HTTP and never
 * imports the server). Used by the vitest global setups of the root config.
 */
import type { TestProject } from 'vitest/node';
import { buildServer } from '../../src/app.js';
import { loadSettings } from '../../src/config.js';
import type { Storage } from '../../src/storage/types.js';

declare module 'vitest' {
  export interface ProvidedContext {
    conformanceUrl: string;
  }
}

const MAX_BODY_BYTES = 256 * 1024;

export async function startForConformance(project: TestProject, storage: Storage): Promise<() => Promise<void>> {
  const settings = loadSettings({
    env: {},
    overrides: { userid_hmac_secret: 'conformance-secret', log_level: 'silent', host: '127.0.0.1', port: 0, max_body_bytes: MAX_BODY_BYTES },
  });
  // The body limit is not public in `GET /`; tell the suite so its 413 test runs.
  process.env.QUIRE_CONFORMANCE_MAX_BODY_BYTES = String(MAX_BODY_BYTES);
  const app = await buildServer({ settings, storage, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server did not bind a TCP port');
  project.provide('conformanceUrl', `http://127.0.0.1:${address.port}/v1`);
  return async () => {
    await app.close();
    await storage.close();
  };
}
