/**
 * The published `kinto-http` client with accounts: `createAccount()` signs up, and a client
 * using the account's Basic Auth credentials is `account:<id>` (§13.2, §9.1).
 */
import { Buffer } from 'node:buffer';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import KintoClient from 'kinto-http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { loadSettings } from '../src/config.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';

let app: FastifyInstance;
let storage: Storage;
let remote: string;

beforeAll(async () => {
  storage = await createSqliteStorage();
  const settings = loadSettings({
    env: {},
    configFile: null,
    overrides: {
      userid_hmac_secret: 'compat-secret',
      log_level: 'silent',
      multiauth_policies: ['account'],
      account_create_principals: ['system.Everyone'],
    },
  });
  app = await buildServer({ settings, storage, logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  remote = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`;
}, 60_000);

afterAll(async () => {
  await app.close();
  await storage.close();
});

it('kinto-http createAccount() signs up, and the account then works as a client identity', async () => {
  const created = (await new KintoClient(remote).createAccount('reader@example.com', 'pw-1')) as {
    data: { id: string; password?: unknown };
    permissions: { write: string[] };
  };
  expect(created.data.id).toBe('reader@example.com');
  expect(created.data).not.toHaveProperty('password');
  expect(created.permissions.write).toEqual(['account:reader@example.com']);

  const authorization = `Basic ${Buffer.from('reader@example.com:pw-1').toString('base64')}`;
  const client = new KintoClient(remote, { headers: { Authorization: authorization } });
  const info = await client.fetchServerInfo();
  expect(info.user?.id).toBe('account:reader@example.com');
  expect(info.capabilities).toHaveProperty('accounts');

  const bucket = await client.createBucket('shelf');
  expect(bucket.permissions.write).toContain('account:reader@example.com');
});
