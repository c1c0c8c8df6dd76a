/** Boots a real Quire server (embedded PGlite store, or PostgreSQL) on a free port for the client tests. */
import { randomUUID } from 'node:crypto';
import { buildServer, createPgliteStorage, createPostgresStorage, loadSettings } from '@quire/server';
import { dropSchema, newSchemaName, PG_URL } from '../../../server/test/helpers/postgres.js';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';
import { type ClientOptions, createClient, type QuireClient } from '../../src/index.js';

export interface TestServer {
  url: string;
  /** Cuts every open change stream (as a restart or a proxy would). */
  dropStreams(): Promise<void>;
  /** An outage: the server stops listening and drops every connection (connections are refused). */
  stop(): Promise<void>;
  /** The end of the outage: listening again on the same address, with the same data. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** `store`: `embedded` (PGlite, in memory) or `postgresql` (a throw-away schema at QUIRE_TEST_PG_URL). */
export async function startServer(
  overrides: Record<string, unknown> = {},
  store: 'embedded' | 'postgresql' = 'embedded',
): Promise<TestServer> {
  const schema = store === 'postgresql' ? newSchemaName() : null;
  const storage = schema
    ? await createPostgresStorage({ url: PG_URL, schema, autoMigrate: true })
    : await createPgliteStorage();
  const settings = loadSettings({
    env: {},
    overrides: { userid_hmac_secret: 'client-tests', log_level: 'silent', ...overrides },
  });
  const app = await buildServer({ settings, storage, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server did not bind a TCP port');
  return {
    url: `http://127.0.0.1:${address.port}/v1`,
    async stop() {
      const closed = new Promise((resolve) => app.server.close(resolve));
      app.server.closeAllConnections();
      await closed;
    },
    async restart() {
      await new Promise<void>((resolve) => app.server.listen(address.port, '127.0.0.1', resolve));
    },
    async dropStreams() {
      (app as unknown as { changesFeed?: { dropStreams(): void } }).changesFeed?.dropStreams();
      await new Promise((resolve) => setTimeout(resolve, 20));
    },
    async close() {
      await app.close();
      await storage.close();
      if (schema) await dropSchema(schema);
    },
  };
}

/** A client with its own in-memory IndexedDB (a fresh "browser profile"). */
export function makeClient(
  url: string,
  options: Partial<ClientOptions> & { user?: string; idb?: IDBFactory } = {},
): QuireClient {
  const { user = 'alice', idb = new IDBFactory(), ...rest } = options;
  return createClient({
    remote: url,
    auth: { type: 'basic', username: user, password: 'secret' },
    indexedDB: idb,
    IDBKeyRange,
    retries: 0,
    ...rest,
  });
}

export const uniqueName = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

export function basicAuth(user: string): string {
  return `Basic ${Buffer.from(`${user}:secret`).toString('base64')}`;
}

/** Raw HTTP against the server, as another app would write (not through our client). */
export async function raw(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  user = 'alice',
  headers: Record<string, string> = {},
) {
  const response = await fetch(url + path, {
    method,
    headers: { Authorization: basicAuth(user), ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

/** Creates a bucket and a collection owned by `user`. */
export async function createCollection(
  url: string,
  bucket: string,
  collection: string,
  user = 'alice',
  permissions?: Record<string, string[]>,
) {
  const b = await raw(url, 'PUT', `/buckets/${bucket}`, { data: {}, ...(permissions ? { permissions } : {}) }, user);
  if (b.status >= 300) throw new Error(`bucket: ${b.status} ${JSON.stringify(b.body)}`);
  const c = await raw(url, 'PUT', `/buckets/${bucket}/collections/${collection}`, { data: {} }, user);
  if (c.status >= 300) throw new Error(`collection: ${c.status} ${JSON.stringify(c.body)}`);
}

/** Seeds `count` records through /batch. */
export async function seed(
  url: string,
  bucket: string,
  collection: string,
  count: number,
  make: (i: number) => Record<string, unknown> = (i) => ({ n: i }),
  user = 'alice',
) {
  for (let start = 0; start < count; start += 25) {
    const requests = [];
    for (let i = start; i < Math.min(count, start + 25); i++) {
      requests.push({
        method: 'POST',
        path: `/buckets/${bucket}/collections/${collection}/records`,
        body: { data: make(i) },
      });
    }
    const response = await raw(url, 'POST', '/batch', { requests }, user);
    if (response.status !== 200) throw new Error(`seed failed: ${response.status}`);
  }
}
