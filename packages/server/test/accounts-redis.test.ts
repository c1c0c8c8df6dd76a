/**
 * Login failure counters shared through Redis (`account_login_limiter_redis_url`): failures seen
 * by one process lock the account in another. Skipped (with the reason) without a Redis server,
 * except under QUIRE_TEST_REQUIRE_REDIS (CI), where a missing service is a failure.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/app.js';
import { loadSettings } from '../src/config.js';
import { createSqliteStorage } from '../src/storage/sqlite/sqlite-storage.js';
import type { Storage } from '../src/storage/types.js';
import { REDIS_URL, redisUnavailable } from './helpers/redis.js';

const reason = await redisUnavailable('accounts-redis.test.ts');

function basic(user: string, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}` };
}

if (reason !== undefined) {
  describe.skip('login limiter on Redis (unreachable)', () => {
    it('needs a Redis server', () => {});
  });
} else {
  describe('login limiter on Redis', () => {
    let storage: Storage;
    let apps: Array<Awaited<ReturnType<typeof buildServer>>>;

    beforeAll(async () => {
      storage = await createSqliteStorage();
      const settings = loadSettings({
        env: {},
        configFile: null,
        overrides: {
          log_level: 'silent',
          userid_hmac_secret: 's',
          multiauth_policies: ['account'],
          account_create_principals: ['system.Everyone'],
          account_login_max_failures: 2,
          // Counters outlive the run in Redis: keep the shared loopback address out of the way.
          account_login_max_failures_per_ip: 100_000,
          account_create_max_per_address: 100_000,
          account_login_limiter_redis_url: REDIS_URL,
        },
      });
      // Two servers on one database and one Redis: two processes of a deployment.
      apps = [
        await buildServer({ settings, storage, logger: false }),
        await buildServer({ settings, storage, logger: false }),
      ];
    }, 60_000);
    afterAll(async () => {
      for (const app of apps) await app.close();
      await storage.close();
    });

    it('failures counted by one process lock the account in the other', async () => {
      const [first, second] = apps as [(typeof apps)[0], (typeof apps)[0]];
      const id = `redis-${randomUUID()}`;
      await first.inject({ method: 'PUT', url: `/v1/accounts/${id}`, payload: { data: { password: 'right' } } });
      await first.inject({ method: 'GET', url: '/v1/', headers: basic(id, 'wrong-1') });
      await second.inject({ method: 'GET', url: '/v1/', headers: basic(id, 'wrong-2') });
      const blocked = await first.inject({ method: 'GET', url: '/v1/', headers: basic(id, 'right') });
      expect(blocked.statusCode).toBe(429);
      expect(blocked.json()).toMatchObject({ errno: 117 });
    });
  });
}
