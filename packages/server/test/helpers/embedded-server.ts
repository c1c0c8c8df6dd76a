/**
 * One in-memory embedded store per test file (opened before its tests, closed after), and
 * servers built on it with settings overrides — the set-up most server tests share.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { buildServer } from '../../src/app.js';
import { loadSettings, type Settings } from '../../src/config.js';
import { createPgliteStorage } from '../../src/storage/sql/sql-storage.js';
import type { Storage } from '../../src/storage/types.js';

/** Quiet settings with a fixed Basic Auth secret, plus `overrides`. */
export function testSettings(overrides: Partial<Settings> = {}): Settings {
  return loadSettings({ env: {}, configFile: null, overrides: { userid_hmac_secret: 's', log_level: 'silent', ...overrides } });
}

/** `Authorization` header of a Basic Auth identity. */
export function basicAuth(user: string, password = 'pw'): { authorization: string } {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}` };
}

export interface EmbeddedStore {
  readonly storage: Storage;
  /** A server (not listening; use `inject`) on the file's store. */
  serverWith(overrides?: Partial<Settings>): Promise<FastifyInstance>;
}

/** Call at the top of a file or describe block. */
export function useEmbeddedStore(): EmbeddedStore {
  let storage: Storage | undefined;
  beforeAll(async () => {
    storage = await createPgliteStorage();
  }, 60_000);
  afterAll(async () => {
    await storage?.close();
  });
  const opened = (): Storage => {
    if (!storage) throw new Error('useEmbeddedStore: the store opens in beforeAll');
    return storage;
  };
  return {
    get storage() {
      return opened();
    },
    serverWith: (overrides = {}) => buildServer({ settings: testSettings(overrides), storage: opened(), logger: false }),
  };
}
