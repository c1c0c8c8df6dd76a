/**
 * One store per test file or describe block (opened before its tests, closed after), and
 * servers built on it with settings overrides — the set-up most server tests share.
 * `useEmbeddedStore()` is the in-memory embedded store; `helpers/backends.ts` runs a block on
 * each store (embedded and PostgreSQL) through the same `useStore()`.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { buildServer } from '../../src/app.js';
import { loadSettings, type Settings } from '../../src/config.js';
import { createSqliteStorage } from '../../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../../src/storage/types.js';

/** Quiet settings with a fixed Basic Auth secret, plus `overrides`. */
export function testSettings(overrides: Partial<Settings> = {}): Settings {
  return loadSettings({
    env: {},
    configFile: null,
    overrides: { userid_hmac_secret: 's', log_level: 'silent', ...overrides },
  });
}

/** `Authorization` header of a Basic Auth identity. */
export function basicAuth(user: string, password = 'pw'): { authorization: string } {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}` };
}

export interface EmbeddedStore {
  readonly storage: Storage;
  /** A server (not listening; use `inject`) on the block's store; closed after the block if still open. */
  serverWith(overrides?: Partial<Settings>): Promise<FastifyInstance>;
}

/** A store as `useStore()` opens it: `dispose` runs after the store is closed (e.g. drops its schema). */
export interface OpenedStore {
  storage: Storage;
  dispose?: () => Promise<void>;
}

/**
 * Opens a store with `open` before the enclosing block's tests; after them closes the servers
 * made by `serverWith` (a test that failed half-way may leave one open; close() is idempotent),
 * then the store, then runs its `dispose`. Call at the top of a file or describe block.
 */
export function useStore(open: () => Promise<OpenedStore>): EmbeddedStore {
  let opened: OpenedStore | undefined;
  const servers: FastifyInstance[] = [];
  beforeAll(async () => {
    opened = await open();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((app) => app.close()));
    await opened?.storage.close();
    await opened?.dispose?.();
  });
  const storage = (): Storage => {
    if (!opened) throw new Error('useStore: the store opens in beforeAll');
    return opened.storage;
  };
  return {
    get storage() {
      return storage();
    },
    async serverWith(overrides = {}) {
      const app = await buildServer({ settings: testSettings(overrides), storage: storage(), logger: false });
      servers.push(app);
      return app;
    },
  };
}

/** An in-memory embedded store (SQLite) for the enclosing file or describe block. */
export function useEmbeddedStore(): EmbeddedStore {
  return useStore(async () => ({ storage: await createSqliteStorage() }));
}
